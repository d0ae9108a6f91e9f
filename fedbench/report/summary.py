"""reports/claims.md: the summary a person reads in a minute (issue 52 item 1, issue 51 item 6).

The tally first (the one sentence every reader quotes, and the verdicts by fidelity class), how to read a row, and
what ran where (verdicts computed by this build, kept from elsewhere with their machine, commit and date, not run).
Then per paper: its coverage line (a headline about several datasets is checked only when every dataset is judged,
else partly checked, k of n), one committed figure, and one row per headline claim:

- the claim, linked to its entry on its study's page (``claims/<study>.md``: rules, parts, history, deviations);
- the **counted** verdict (the confirmatory one where it exists, what the tally counts), the exploratory one beside it
  ("expl.") only where the two differ in kind, and a † where the verdict was kept from elsewhere;
- the counted verdict's own effect with its 95% interval (the confirmatory run's where it exists), the published
  value, and a note where two of its parts coincide (the same per-seed values);
- the fidelity; a not-run row names a letter, and directly under the table each letter has why and the command with
  its cost.

No table row is wider than :data:`ROW_WIDTH` characters as shown (each cell wrapped with ``<br>`` to its column's
width; a link shows its text only), so a code host shows the whole row.
"""

from __future__ import annotations

import re
import string
import textwrap
from collections.abc import Callable
from typing import Any

from fedbench.claims import entry as schema
from fedbench.claims.coverage import PAPERS, Paper
from fedbench.claims.tally import counted_effect, counted_verdict, is_confirmed, tally
from fedbench.claims.verdict import holm_headline
from fedbench.report.origin import computed_here, where_text
from fedbench.report.show import effect_text, why_not_run

ROW_WIDTH = 100  # characters a code host shows of a table row
WIDTHS = {"claim": 30, "verdict": 18, "effect": 24, "fidelity": 14}  # each column's width as shown
KEPT = "†"  # a verdict kept from an earlier report, computed elsewhere


def page_name(study: str | None) -> str:
    """The file name of a study's page under claims/: its name made a file name ('main job' -> 'main-job.md')."""
    return re.sub(r"[^a-z0-9_]+", "-", (study or "other").lower()).strip("-") + ".md"


def anchor(cid: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", cid.lower()).strip("-")


def link(e: dict[str, Any]) -> str:
    """The relative link from claims.md to entry ``e`` on its study's page."""
    return f"claims/{page_name(e.get('study'))}#{anchor(e['id'])}"


def cell(text: str, width: int) -> str:
    """``text`` wrapped to ``width`` characters, its lines joined by <br> (a word longer than a line kept whole);
    a '|' escaped."""
    lines = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]
    return "<br>".join(line.replace("|", "\\|") for line in lines)


def shown_width(row: str) -> int:
    """How wide a markdown table row shows: each cell as its widest <br>-line, a link as its text, bold marks and
    escapes dropped, plus the separators."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", row).replace("**", "").replace("\\|", "\0")
    cells = text.strip().strip("|").split("|")
    return sum(max(len(x.strip()) for x in c.split("<br>")) for c in cells) + 3 * len(cells) + 1


def coincident_parts(e: dict[str, Any]) -> list[tuple[str, str]]:
    """Pairs of ``e``'s parts with the same per-seed values over more than one seed, not all equal (e.g. SVRG and
    SARAH at a step size where they take the same steps): two parts that are one measurement."""
    parts = [p for p in e.get("parts") or [] if len(p.get("per_seed") or []) > 1 and len(set(map(str, p["per_seed"])))
             > 1]
    return [(a["part"], b["part"]) for i, a in enumerate(parts) for b in parts[i + 1:] if a["per_seed"] == b["per_seed"]]


def shown_entry(paper: Paper, index: int, by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries a headline row shows, one per dataset: of each dataset's alternatives, the first judged on the
    paper's data, else the first judged, else the first there."""
    out = []
    for alternatives in paper.datasets(index):
        mine = [by_id[i] for i in alternatives if i in by_id]
        judged = [e for e in mine if e["verdict"] not in schema.UNJUDGED]
        own = [e for e in judged if e["fidelity"] in schema.PAPER_DATA]
        if own or judged or mine:
            out.append((own or judged or mine)[0])
    return out


def verdict_cell(e: dict[str, Any], holm: dict[str, Any] | None = None) -> str:
    """The counted verdict in bold, † where it was kept from elsewhere, the exploratory one beside it where it
    differs, and its Holm-adjusted verdict over the headline family (``holm``: its row of
    fedbench.claims.verdict.holm_headline) where it has one."""
    counted = counted_verdict(e)
    mark = f" {KEPT}" if (e.get("provenance") or {}).get("carried") else ""
    text = f"**{counted}**{mark}"
    if is_confirmed(e) and e["verdict"] != counted:
        text += f"<br>{cell('expl.: ' + e['verdict'], WIDTHS['verdict'])}"
    if holm is not None:
        adjusted = f"Holm, m={holm['family']}: {holm['holm_verdict']}"
        text += f"<br>{cell(adjusted, WIDTHS['verdict'])}"
    return text


def published_text(pub: dict[str, Any] | None) -> str:
    if not pub or pub.get("value") is None:
        return "qualitative"
    value = float(pub["value"])
    return f"{value:+g}" if value else "0"


def effect_cell(e: dict[str, Any], letter: str | None) -> str:
    """The counted verdict's effect [95% CI] and the published value; for a not-run entry, the letter of its
    command under the table."""
    if e["verdict"] in schema.UNJUDGED:
        return cell(f"not run: see ({letter})" if letter else "not run", WIDTHS["effect"])
    effect = counted_effect(e)
    text = cell(effect_text(effect) if effect else "n/a", WIDTHS["effect"])
    text += "<br>" + cell(f"paper: {published_text(e.get('published'))}", WIDTHS["effect"])
    for a, b in coincident_parts(e)[:1]:
        text += "<br>" + cell(f"{a} = {b}: the same per-seed values" if len(a) + len(b) < 16
                              else "two parts coincide (same per-seed values)", WIDTHS["effect"])
    return text


def several_cells(entries: list[dict[str, Any]], n: int, letters: dict[str, str]) -> tuple[str, str]:
    """(verdict, effect) cells of a headline about several datasets: the counted verdicts of those judged, checked
    or partly checked (k of n), and the letters of the commands of the rest."""
    judged = [e for e in entries if e["verdict"] not in schema.UNJUDGED]
    counts: dict[str, int] = {}
    for e in judged:
        counts[counted_verdict(e)] = counts.get(counted_verdict(e), 0) + 1
    state = "checked" if len(judged) == n else f"partly checked<br>({len(judged)} of {n})"
    verdict = "<br>".join([f"**{state}**", *(f"{k} {v}" for v, k in counts.items())])
    rest = sorted({letters[e["command"]] for e in entries if e["verdict"] in schema.UNJUDGED and e.get("command")})
    effect = cell("each dataset on the study pages" + (f"; not run: see {', '.join(f'({x})' for x in rest)}"
                                                       if rest else ""), WIDTHS["effect"])
    return verdict, effect


def headline_state(paper: Paper, index: int, by_id: dict[str, dict[str, Any]]) -> str:
    """'checked', 'partly checked (k of n)' or 'not checked': a headline on the paper's data (PAPER_DATA)."""
    k, n = paper.checked(index, lambda i: i in by_id and by_id[i]["verdict"] not in schema.UNJUDGED
                         and by_id[i]["fidelity"] in schema.PAPER_DATA)
    return "not checked" if n == 0 or k == 0 else "checked" if k == n else f"partly checked ({k} of {n})"


def coverage_line(paper: Paper, by_id: dict[str, dict[str, Any]]) -> str:
    """How many of the paper's headline claims are checked on its data (by the best fidelity of each), partly checked
    (a headline about several datasets, not every one judged), judged only at a fidelity counted apart, and not
    implemented (named: no command would judge them; never counted)."""
    states = [headline_state(paper, i, by_id) for i in range(len(paper.headline))]
    fid = {f: 0 for f in schema.PAPER_DATA}
    apart, unbuilt = 0, []
    for i, state in enumerate(states):
        mine = [by_id[x] for x in paper.ids(i) if x in by_id]
        own = [c["fidelity"] for c in mine if c["verdict"] not in schema.UNJUDGED and c["fidelity"] in schema.PAPER_DATA]
        if state == "checked":
            fid[min(own, key=schema.PAPER_DATA.index)] += 1
        elif mine and all(c["verdict"] == schema.NOT_IMPLEMENTED for c in mine):
            unbuilt.append(paper.headline[i][1])
        elif state == "not checked" and any(c["verdict"] not in schema.UNJUDGED for c in mine):
            apart += 1
    counts = ", ".join(f"{n} {f}" for f, n in fid.items() if n)
    partly = sum(s.startswith("partly") for s in states)
    return (f"Coverage: {states.count('checked')} of {len(states)} headline claims checked on the paper's data"
            + (f" ({counts})" if counts else "")
            + (f", {partly} partly checked (not every dataset judged)" if partly else "")
            + (f", {apart} judged only at a fidelity counted apart" if apart else "")
            + (f"; not implemented (no command would judge it): {'; '.join(unbuilt)}" if unbuilt else "") + ".")


def paper_section(paper: Paper, by_id: dict[str, dict[str, Any]], figure: str | None,
                  holm: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """A paper's heading, coverage, figure, table of headline claims and the commands of its not-run rows;
    ``holm``: each headline verdict's row of the family's Holm adjustment, by claim id."""
    shown = [shown_entry(paper, i, by_id) for i in range(len(paper.headline))]
    letters: dict[str, str] = {}
    for entries in shown:
        for e in entries:
            if e["verdict"] in schema.UNJUDGED and e.get("command") and e["command"] not in letters:
                letters[e["command"]] = string.ascii_lowercase[len(letters) % 26]
    lines = [f"## {paper.name}", f"{paper.citation}. {coverage_line(paper, by_id)}"]
    lines += [f"![{paper.name}: the figure of a headline claim]({figure})", ""] if figure else [
        "(No committed figure: its studies' figures are drawn where they run.)", ""]
    lines += ["| headline claim | verdict | effect [95% CI] | fidelity |", "|---|---|---|---|"]
    for i, ((_, what), entries) in enumerate(zip(paper.headline, shown)):
        claim = cell(what, WIDTHS["claim"])
        if not entries:
            lines.append(f"| {claim} | no entry | — | — |")
        elif len(paper.datasets(i)) > 1:
            verdict, effect = several_cells(entries, len(paper.datasets(i)), letters)
            lines.append(f"| [{claim}]({link(entries[0])}) | {verdict} | {effect} | "
                         f"{cell(', '.join(dict.fromkeys(e['fidelity'] for e in entries)), WIDTHS['fidelity'])} |")
        else:
            e = entries[0]
            lines.append(f"| [{claim}]({link(e)}) | {verdict_cell(e, (holm or {}).get(e['id']))} | "
                         f"{effect_cell(e, letters.get(e.get('command')))} |"
                         f" {e['fidelity']} |")
    lines.append("")
    unrun = [e for entries in shown for e in entries if e["verdict"] in schema.UNJUDGED]
    for command, letter in letters.items():
        first = next(e for e in unrun if e.get("command") == command)
        lines.append(f"- ({letter}) `{command}`: {cost_words(first)}; {short_why(first, earlier=False)}")
    for e in unrun:
        if e.get("earlier") or not e.get("command"):
            lines.append(f"- {e['id']}: {short_why(e)}")
    return lines + ([""] if unrun else [])


def short_why(e: dict[str, Any], earlier: bool = True) -> str:
    """Why an entry did not run, its first clause without the list of missing runs; for one whose rule changed since
    its last verdict, that verdict and where it was computed (fedbench.report.origin: ``earlier``)."""
    why = why_not_run(e)
    why = why.split(" (", 1)[0] if len(why) > 90 else why
    if earlier and (was := e.get("earlier")):
        effect = f" {effect_text(was['effect'])}" if was.get("effect") else ""
        why = (f"its rule changed since its last verdict ({was['counted_verdict']}{effect}; "
               f"{where_text(was.get('provenance'))}), not judged again here: {why}")
    return why


def cost_words(e: dict[str, Any]) -> str:
    cost = e.get("cost") or {}
    if "hours" in cost:
        return f"{cost['hours']:,g} h ({'measured' if cost.get('source') == 'measured' else 'projected'})"
    if "seconds" in cost:
        return f"{cost['seconds']:,} s (measured)"
    return "cost not measured"


def provenance_line(claims: list[dict[str, Any]]) -> str:
    """What ran where: the verdicts computed by the build of this report, those kept from elsewhere (by machine,
    commit and date), and the not-run."""
    judged = [c for c in claims if c["verdict"] not in schema.UNJUDGED]
    here = [c for c in judged if computed_here(c)]
    kept: dict[str, int] = {}
    for c in judged:
        if (c.get("provenance") or {}).get("carried"):
            kept[where_text(c["provenance"])] = kept.get(where_text(c["provenance"]), 0) + 1
    builds: dict[str, int] = {}
    for c in here:
        builds[where_text(c["provenance"])] = builds.get(where_text(c["provenance"]), 0) + 1
    unrun = sum(c["verdict"] == "not-run" for c in claims)
    said = "; ".join(f"{n} on {w}" for w, n in builds.items()) or "none"
    text = (f"What ran where: {len(here)} verdict{'' if len(here) == 1 else 's'} computed by the build of this report "
            f"({said})")
    if kept:
        text += (f"; {sum(kept.values())} kept from earlier reports, computed elsewhere ({KEPT}): "
                 + "; ".join(f"{n} on {w}" for w, n in kept.items()))
    return text + f"; {unrun} not run (their commands under each table)."


def fidelity_table(claims: list[dict[str, Any]]) -> list[str]:
    """The tally by fidelity class, a row each (the paper's data, their total, then the classes counted apart that
    hold a claim), a column per verdict."""
    t = tally(claims)
    rows = [(f, t.by_fidelity[f]) for f in schema.PAPER_DATA] + [("paper's data, all", t.headline)]
    rows += [(f, t.by_fidelity[f]) for f in t.apart if sum(t.by_fidelity[f].values())]
    lines = ["| fidelity | " + " | ".join(t.verdicts) + " |", "|---" * (len(t.verdicts) + 1) + "|"]
    return lines + [f"| {name} | " + " | ".join(str(counts[v]) for v in t.verdicts) + " |" for name, counts in rows]


def summary_markdown(claims: list[dict[str, Any]], figure_of: Callable[[str], str | None] = lambda name: None) \
        -> str:
    """claims.md: the tally, how to read it, what ran where, and per paper its headline claims (``figure_of``: the
    committed figure of a paper, by its name, relative to the report folder)."""
    t = tally(claims)
    by_id = {c["id"]: c for c in claims}
    holm = {r["id"]: r for r in holm_headline(claims)}
    lines = [
        "# Claims checked by fedbench", "",
        ("Generated by `dvc repro` (stage `report`) from the runs in `results/`; do not edit by hand. Each row links to "
         "its study's page under [`claims/`](claims/) (rules, parts, sensitivity, history, deviations, figures); "
         "`claims.json` holds everything."), "",
        t.summary(), "",
        *fidelity_table(claims), "",
        ("How to read a row: **verdict** is the one counted: the confirmatory verdict (the claim judged again by its "
         "frozen rule on fresh seeds) where it exists, else the exploratory one; \"expl.\" shows the exploratory "
         "verdict where it differs. The effect is the counted verdict's own (mean paired difference over the seeds, "
         "95% interval), beside the paper's published value. Only paper-scale, reduced-budget and reduced-data count "
         "toward a headline; the other fidelity classes are counted apart, and sensitivity readings (a claim judged "
         "with one setting changed) are not counted. \"Holm, m=N\" is the verdict after Holm's adjustment over the N "
         "headline verdicts judged (fedbench.claims.verdict.holm_headline): a decision that does not survive the "
         "family's multiplicity reads inconclusive there."), "",
        provenance_line(claims), "",
    ]
    known = {p.citation for p in PAPERS}
    for paper in PAPERS:
        lines += paper_section(paper, by_id, figure_of(paper.name), holm)
    others = [c for c in claims if c.get("paper") not in known]
    if others:
        lines += ["## Other", "", f"{len(others)} entries of no listed paper: see their study pages.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"

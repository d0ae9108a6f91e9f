"""`fedbench show --claims` for a person (issue 29 item 3), and one truth for the counts (item 2): show, claims.md
and metrics.json render the one tally of the same claims, and agree."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from fedbench.claims.stats import fmt_effect
from fedbench.claims.tally import DEFINITION, is_confirmed, tally
from fedbench.report.build import _effect, claims_markdown, report_metrics
from fedbench.report.show import INDENT, effect_text, show_claims, why_not_run

ROOT = Path(__file__).resolve().parents[2]
INF = float("inf")
COMMITTED = ROOT / "reports" / "claims.json"
LONG_REASON = ("not implemented: " + "the study runs one arm only, " * 20
               + "(missing: the other arms; and this claim declared in it)")
FIXTURE = [
    {"id": "fedprox/judged", "paper": "FedProx: Li et al.", "where": "Fig. 1", "verdict": "reproduced",
     "fidelity": "paper-scale", "observed": "o", "rule": "r", "deviations": [], "parts": [{}],
     "effect": {"estimate": 9.3748, "ci95": [0.929445, 17.8202], "unit": "accuracy points", "test": "paired t",
                "per_seed": [18.3, 0.4]}},
    {"id": "fedprox/placeholder", "paper": "FedProx: Li et al.", "where": "Fig. 9", "verdict": "not-implemented",
     "fidelity": "paper-scale", "observed": LONG_REASON, "rule": "r", "deviations": []},
    {"id": "scaffold/" + "very-long-claim-id-" * 6, "paper": "SCAFFOLD: Karimireddy et al.", "where": "Table 3",
     "verdict": "not-run", "fidelity": "stand-in", "rule": "r", "deviations": [],
     "observed": "not run: the paper-scale study scaffold_emnist has not run on this machine; `fedbench paper run "
                 "scaffold_emnist` fetches its data (emnist) and runs it (projected 118 h on CPU)",
     "command": "fedbench paper run scaffold_emnist", "cost": {"hours": 118.0, "device": "CPU, 2-core Xeon",
                                                             "source": "measured", "date": "2026-11-26"}},
    {"id": "fedprox/five", "paper": "FedProx: Li et al.", "where": "Fig. 1", "verdict": "not-run",
     "fidelity": "paper-scale", "rule": "r", "deviations": [], "observed": "not run: missing the runs of a, b",
     "command": " && ".join(f"fedbench paper run fedprox_{d}" for d in ("mnist", "femnist", "shakespeare", "sent140")),
     "cost": {"hours": 996.45, "device": "cpu"}},
]


def _show(tmp_path: Path, claims: list[dict], width: int, **kw) -> list[str]:
    (tmp_path / "claims.json").write_text(json.dumps({"claims": claims}))
    return show_claims(tmp_path / "claims.json", width=width, **kw)


def _unbreakable(line: str, claims: list[dict]) -> bool:
    """A line longer than the width is allowed only as one token that cannot be broken, alone on its line: a
    command (under its claim or in the closing list), an id, or one word that is longer than a line."""
    commands = {c["command"] for c in claims if c.get("command")}
    return (line.removeprefix(f"{INDENT}run: ") in commands or line.removeprefix("  ") in commands
            or line.removeprefix(INDENT) in {c["id"] for c in claims} or " " not in line.strip())


def _rows(lines: list[str], claims: list[dict]) -> dict[str, list[str]]:
    """Each claim's detail lines (the indented lines under its head), by id."""
    out, current, start = {}, None, lines.index("") + 1
    ids = {c["id"] for c in claims}
    for line in lines[start:]:
        if not line:
            break
        if not line.startswith(" "):
            current = line.split()[-1] if line.split()[-1] in ids else None
            if current:
                out[current] = []
        elif current is None and line.strip() in ids:  # the id on its own line under a head too long for it
            current = line.strip()
            out[current] = []
        else:
            out[current].append(line)
    return out


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize("source", ["fixture", "committed"])
def test_show_fits_the_width_and_never_cuts_a_reason_or_a_command(tmp_path, width, source):
    """One line a claim (its id alone on the next line where it does not fit); --verbose adds, whole, the fidelity,
    the effects, or why a claim did not run and its command."""
    claims = FIXTURE if source == "fixture" else json.loads(COMMITTED.read_text())["claims"]
    lines = _show(tmp_path, claims, width)
    over = [line for line in lines if len(line) > width]
    assert all(_unbreakable(line, claims) for line in over), [x for x in over if not _unbreakable(x, claims)]
    rows = _rows(lines, claims)
    assert set(rows) == {c["id"] for c in claims} and not any(rows.values())  # nothing under a claim's line
    verbose = _show(tmp_path, claims, width, verbose=True)
    assert all(_unbreakable(line, claims) for line in verbose if len(line) > width)
    rows = _rows(verbose, claims)
    for c in claims:
        details = rows[c["id"]]
        said = " ".join(x.strip() for x in details)
        assert said.startswith("fidelity: " if "/sensitivity-" not in c["id"] else "sensitivity reading of ")
        if c["verdict"] in ("not-run", "not-implemented"):
            label = "missing" if c["verdict"] == "not-implemented" else "why"  # no command: what is missing
            assert f" {label}: {why_not_run(c)}" in said  # whole: wrapped, never shortened
            if c.get("command"):
                assert f"{INDENT}run: {c['command']}" in details  # the full command, alone on its line
                assert f"  {c['command']}" in lines  # and in the closing list
        else:
            assert ("; counted: confirmatory" if is_confirmed(c) else " effect: ") in said.replace(
                "not counted; fidelity", "not counted fidelity").replace(f"fidelity: {c['fidelity']} ",
                                                                          f"fidelity: {c['fidelity']}; ")
    if source == "fixture":
        text = "\n".join(lines)
        assert "..." not in text and "…" not in text
        assert "      1 claim; measured 118 h on CPU, 2-core Xeon, 2026-11-26" in lines  # its cost kept
        assert "      1 claim; projected 996.45 h on cpu" in lines
        over = [line for line in over if line != f"{tmp_path / 'claims.json'}:"]  # the file's path: as long as tmp_path is
        assert len(over) == (2 if width == 80 else 0)  # at 80: the && command in the list and the long id


def test_one_line_a_claim_leads_with_the_counted_verdict_and_its_own_effect(tmp_path):
    """Issue 51 item 6: a confirmed claim's line gives its confirmatory verdict and the confirmatory run's effect;
    the exploratory ones sit under it with --verbose."""
    confirmed = FIXTURE[0] | {"registration": {"confirmatory": {
        "verdict": "inconclusive", "seeds": [1015, 1016, 1017, 1018, 1019], "estimate": 6.34, "ci95": [-1.77, 14.46],
        "unit": "accuracy points"}}}
    lines = _show(tmp_path, [confirmed], 120)
    assert lines[lines.index("") + 1] == "inconclusive     +6.34 [-1.77, +14.5]  fedprox/judged"
    verbose = _show(tmp_path, [confirmed], 120, verbose=True)
    at = verbose.index("inconclusive     +6.34 [-1.77, +14.5]  fedprox/judged")
    assert verbose[at + 1:at + 4] == [f"{INDENT}fidelity: paper-scale",
                                      (f"{INDENT}counted: confirmatory on fresh seeds 1015-1019: inconclusive, +6.34 "
                                       "[-1.77, +14.5] accuracy points"),
                                      f"{INDENT}exploratory: reproduced, +9.37 [+0.929, +17.8] accuracy points"]


def test_show_verbose_keeps_everything(tmp_path):
    lines = _show(tmp_path, FIXTURE, 80, verbose=True)
    text = " ".join(" ".join(lines).split())
    assert "observed: " + " ".join(LONG_REASON.split()) in text and "rule: r" in text and "where: FedProx" in text


def test_show_effect_text_is_the_reports():
    """show formats effects without scipy (fedbench.claims.stats imports it): the same text as the report's."""
    claims = json.loads(COMMITTED.read_text())["claims"]
    effects = [c["effect"] for c in claims if c.get("effect")]
    effects += [{"estimate": x, "ci95": [-x, 2 * x], "unit": "u"} for x in (1234.5, 2e5, 4e-4, 0.0, -17.82)]
    effects += [{"estimate": 1.0, "ci95": None, "unit": "u"}, {"estimate": INF, "ci95": [1.0, INF], "unit": "u"},
                {"estimate": "inf", "ci95": ["-inf", "inf"], "unit": "u", "test": "sign test"}]  # as JSON holds them
    assert len(effects) > 20  # the committed effects (26 from a fresh clone's main job) and the edge values
    for e in effects:  # the report reads "inf" back as a float (fedbench.report.build._effect); show reads raw JSON
        assert effect_text(e) == fmt_effect(_effect(e))


def _counts(text: str) -> dict[str, int]:
    """'14 reproduced, 4 not-reproduced' -> {"reproduced": 14, "not-reproduced": 4}."""
    return {v: int(n) for n, v in re.findall(r"(\d+) ([a-z-]+)", text)}


def test_show_claims_md_and_metrics_agree_on_the_committed_claims(tmp_path):
    """The three readers of the counts, rendered from the committed reports/claims.json, agree number for number
    (and with the tally they all read)."""
    claims = json.loads(COMMITTED.read_text())["claims"]
    t = tally(claims)
    metrics = report_metrics(claims)
    md = claims_markdown(claims, pd.DataFrame()).splitlines()
    lines = show_claims(COMMITTED, width=200)  # one line per class here; wrapping is tested on its own
    shown = " ".join(lines[:lines.index("")])
    # the headline: the same sentence in show and claims.md, the same numbers in metrics.json
    assert t.summary() in shown and t.summary() in md and DEFINITION in shown
    headline = re.search(r"Toward the headline: (.*?) \((\d+) claims", t.summary())
    assert _counts(headline[1]) == metrics["headline"] and int(headline[2]) == sum(metrics["headline"].values())
    assert int(re.match(r"(\d+) entries", t.summary())[1]) == metrics["entries"] == len(claims)
    # per fidelity class: claims.md's table, show's lines, metrics.json
    header = next(row for row in md if row.startswith("| fidelity | ")).strip(" |").split(" | ")[1:]
    table = [row.strip(" |").split(" | ") for row in md if re.match(r"\| [a-z-' ,]+ \| \d", row)]
    md_counts = {r[0]: dict(zip(header, map(int, r[1:]))) for r in table}
    for f, counts in metrics["by_fidelity"].items():
        assert md_counts.get(f, dict.fromkeys(counts, 0)) == counts  # a class counted apart with no claim: no row
        line = next((x for x in lines if x.startswith(f"  {f}:")), None)
        assert (_counts(line.split(":", 1)[1]) if line else {}) == {v: n for v, n in counts.items() if n}
    assert md_counts["paper's data, all"] == metrics["headline"]
    readings = next(x for x in lines if x.startswith("  sensitivity readings:"))
    assert _counts(readings.split(":", 1)[1]) == {v: n for v, n in metrics["sensitivity_readings"].items() if n}


def test_committed_reports_are_the_tally_of_the_committed_claims():
    """reports/metrics.json and the top of reports/claims.md, as committed, say what the tally of the committed
    claims.json says (they go stale only if the report is not regenerated: `fedbench report` or `dvc repro`)."""
    t = tally(json.loads(COMMITTED.read_text())["claims"])
    committed = json.loads((ROOT / "reports" / "metrics.json").read_text())
    assert {k: v for k, v in committed.items() if k not in ("effects", "confirmed_effects")} == t.metrics()
    assert t.summary() in (ROOT / "reports" / "claims.md").read_text().splitlines()


def test_a_new_verdict_reaches_every_reader_with_no_change_to_them(tmp_path):
    """direction-only (added to VERDICTS after show, claims.md and metrics.json were written): they list it apart."""
    from fedbench.claims import entry as schema

    verdicts = schema.VERDICTS
    assert "direction-only" in verdicts
    size = FIXTURE[0] | {"id": "fedprox/size", "verdict": "direction-only"}
    lines = _show(tmp_path, [*FIXTURE, size], 80, verdict="direction-only")
    assert "Toward the headline: 0 reproduced" in " ".join(lines) and "  paper-scale:           1 direction-only" in lines
    counted = [v for v in verdicts if v != "not-implemented"]  # fedprox/placeholder: counted in no figure
    assert report_metrics([*FIXTURE, size])["headline"] == dict.fromkeys(counted, 0) | {
        "reproduced": 1, "not-run": 1, "direction-only": 1}
    md = claims_markdown([*FIXTURE, size], pd.DataFrame()).splitlines()
    # a column per verdict, the new one included; a row per class of the paper's data, their total, and each class
    # counted apart that holds a claim
    t = tally([*FIXTURE, size])
    assert "| fidelity | " + " | ".join(t.verdicts) + " |" in md
    row = {"reproduced": 1, "direction-only": 1, "not-run": 1}
    assert f"| paper-scale | {' | '.join(str(row.get(v, 0)) for v in t.verdicts)} |" in md
    assert f"| paper's data, all | {' | '.join(str(row.get(v, 0)) for v in t.verdicts)} |" in md
    assert f"| stand-in | {' | '.join(str(int(v == 'not-run')) for v in t.verdicts)} |" in md


def test_a_not_implemented_entry_is_listed_and_counted_by_no_reader(tmp_path):
    """fedprox/placeholder (no command would judge it; issue 32, item 4): show lists it with what is missing and
    says its number once; show's class lines, claims.md's table and metrics.json count only the other three."""
    lines = _show(tmp_path, FIXTURE, 200)
    shown = " ".join(lines[:lines.index("")])
    assert shown.count("not implemented") == 3  # the summary's count, the definition and its own line; no class's
    assert "4 entries: 3 claims and 1 not implemented (no command would judge them; counted in no figure here)" in shown
    assert "  paper-scale:           1 reproduced, 1 not-run" in lines and "  not implemented:       1 (no command would judge them)" in lines
    m = report_metrics(FIXTURE)
    assert (m["entries"], m["claims"], m["not_implemented"]) == (4, 3, 1) and "not-implemented" not in m["headline"]
    md = claims_markdown(FIXTURE, pd.DataFrame()).splitlines()
    assert not any(row.startswith("| not-implemented |") for row in md)

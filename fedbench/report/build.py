"""Build reports/ from the runs: figures, claims.json, claims.md, one page per study (claims/<study>.md),
metrics.json and a table of every run.

Everything is written to a temporary folder first and moved into place, so an interrupted build never
leaves a half-written report that looks complete.

claims.md is the summary read in a minute (fedbench.report.summary: per paper its headline claims, a row each with
the counted verdict, its effect and interval, the published value and the fidelity). The details move to the study
pages: a table of the study's claims (the counted verdict first, the exploratory one beside it), the rules changed
after a result, the sensitivity table, the deviations shared by its claims listed once, the ones that matter first,
then each claim's details. Each judged entry carries where it was computed (fedbench.report.origin: this build, or
kept from the report it replaces when its study did not run here); the build ends with the comparison against git's
committed report (fedbench.report.compare).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.claims import registry as rules_registry
from fedbench.claims.coverage import PAPERS
from fedbench.claims.entry import NOT_IMPLEMENTED, UNJUDGED, plain, sensitivity_of
from fedbench.claims.stats import fmt_effect, fmt_number
from fedbench.claims.tally import counted_effect, counted_verdict, is_confirmed
from fedbench.claims.tally import tally as count_verdicts
from fedbench.config import Config
from fedbench.errors import DataError, read_json
from fedbench.guard import stops_deferred
from fedbench.report import compare, figures, origin
from fedbench.report.origin import where_text
from fedbench.report.summary import coincident_parts, page_name, summary_markdown
from fedbench.studies.entries import collect
from fedbench.studies.fedprox_curves import STUDY as MAIN_STUDY
from fedbench.study.experiments import DATA_ROOT
from fedbench.study.layout import MAIN_JOB, PIPELINE_BUDGET, RESULTS_ROOT, publish, study_folder

MARK = {"reproduced": "✓", "direction-only": "↗", "not-reproduced": "✗", "inconclusive": "~", "not-run": "–",
        NOT_IMPLEMENTED: "∅"}  # a verdict not here: its name


METRICS = "metrics.json"  # dvc.yaml's metrics: what `dvc exp show` and `dvc metrics diff` compare
TABLES = ("claims.json", "claims.md", "runs.csv", METRICS)  # written into the report folder beside figures/ and claims/


def report_metrics(claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's DVC metrics, derived from the claims only: the verdict counts of the one tally
    (fedbench.claims.tally: ``headline``, ``by_fidelity``, ``sensitivity_readings``, ``claims``, ``entries``) and each
    judged claim's effect estimate (``effects``, keyed by claim id, its dots made ``_`` since DVC joins nested keys
    with dots; the intervals are in claims.json), and the confirmatory run's effect of each confirmed claim
    (``confirmed_effects``): the estimate its counted verdict rests on. Every count is there, zero included, so that variations always
    have the same columns."""
    effects = {c["id"].replace(".", "_"): _finite((c.get("effect") or {}).get("estimate")) for c in claims
               if c["verdict"] not in UNJUDGED}
    confirmed = {c["id"].replace(".", "_"): _finite((counted_effect(c) or {}).get("estimate")) for c in claims
                 if c["verdict"] not in UNJUDGED and is_confirmed(c)}
    return {**count_verdicts(claims).metrics(), "effects": {k: v for k, v in effects.items() if v is not None},
            "confirmed_effects": {k: v for k, v in confirmed.items() if v is not None}}


def build_report(cfg: Config, out_dir: str | Path = "reports", results_root: Path = RESULTS_ROOT,
                 data_root: Path = DATA_ROOT) -> list[dict]:
    """Render every entry (fedbench.studies.entries.collect) into ``out_dir``: claims.json, claims.md, the study pages
    (claims/), runs.csv, metrics.json, the figures, and the claim studies' records (``studies/<study>/``:
    fedbench.study.layout.publish). A verdict this build has no result for is kept from the report it replaces
    (fedbench.report.origin.carry), and so are the figures and runs.csv whose runs are not here; the build ends by
    printing the comparison with git's committed report (fedbench.report.compare)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fresh, _, summ = collect(cfg, Path(results_root), Path(data_root))
    before = out / "claims.json"
    previous, was = _previous(before), origin.last_commit_of(before)
    if previous is None and (committed := origin.committed(before)):  # `dvc repro` removed it: git's is the one before
        previous, was = json.loads(committed)["claims"], origin.last_commit_of(before, as_committed=True)
    claims = origin.carry(fresh, previous, origin.this_build(), was if previous else None)
    if not len(summ):  # the main job's runs are not here: the table of the runs made elsewhere
        table = (out / "runs.csv").read_bytes() if (out / "runs.csv").is_file() else origin.committed(out / "runs.csv")
        summ = pd.read_csv(io.BytesIO(table)) if table else summ
    figs = Path(tempfile.mkdtemp(prefix=".figures.", dir=out))
    try:
        os.chmod(figs, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        drawn = study_folder(MAIN_JOB, PIPELINE_BUDGET, results_root)  # Figures 1, 2 and 5: the main job study's
        for name in ("fig1_stragglers_synthetic_1_1.png", "fig2_heterogeneity.png", "fig5_iid_stragglers.png"):
            if (drawn / name).is_file():  # else the one drawn where they ran is kept
                shutil.copy2(drawn / name, figs / name)
        figures.real_data_figures(cfg, Path(results_root), Path(data_root), figs)
        kept_figures = figures.keep_missing(out / "figures", figs, origin.committed_folder(out / "figures"))
        held = committed_figure(cfg, out, figs, Path(results_root))
        pages = report_pages(claims, summ, figure_finder(claims, held), held)
        # the tables are written beside the figures and moved into out/ with them
        (figs / "claims.json").write_text(json.dumps(plain({"claims": claims}), indent=2, allow_nan=False) + "\n")
        (figs / PAGES).mkdir()
        for path, text in pages.items():
            (figs / path).write_text(text)
        summ.sort_values(["dataset", "variant", "stragglers", "seed"]).to_csv(figs / "runs.csv", index=False) \
            if len(summ) else (figs / "runs.csv").write_text("")
        (figs / METRICS).write_text(json.dumps(report_metrics(claims), indent=2, allow_nan=False) + "\n")
        with stops_deferred():  # from here the report goes in whole: a Ctrl-C or SIGTERM waits until it has
            publish(cfg, results_root, out / "studies")
            for name in TABLES:
                os.replace(figs / name, out / name)
            _swap(figs / PAGES, out / PAGES)
            _swap(figs, out / "figures")
    except BaseException:
        shutil.rmtree(figs, ignore_errors=True)
        raise
    if kept_figures:
        print(f"figures kept from the report before (their runs are not here): {', '.join(kept_figures)}")
    print("\n".join(compare.compare(claims, compare.committed_claims(out / "claims.json"))))
    return claims


PAGES = "claims"  # the study pages' folder in the report folder


def _previous(path: Path) -> list[dict[str, Any]] | None:
    """The entries of the report being replaced, None where there is none; one that cannot be read keeps nothing
    (said in one line): the build writes it anew."""
    if not path.is_file():
        return None
    try:
        return read_json(path, "claims", "the build writes it anew")["claims"]
    except (DataError, KeyError, TypeError) as e:
        print(f"{path}: not read, no verdict kept from it ({str(e).splitlines()[0]})")
        return None


def _swap(new: Path, target: Path) -> None:
    """``new`` moved to ``target``, the folder there before replaced whole."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)  # left by a process killed here before
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)


def committed_figure(cfg: Config, out: Path, figs: Path, results_root: Path) -> Callable[[str], bool]:
    """Whether a figure's path (relative to the report folder) is one this report holds and git keeps: one of
    figures/ (drawn in ``figs``, or kept) or of a default claim study's records (the opt-in ones' are not committed:
    .gitignore)."""
    default = {name for name, declared in cfg.claim_studies.items() if declared.default}

    def held(path: str) -> bool:
        top, _, rest = path.partition("/")
        if top == "figures":
            return (figs / rest).is_file()
        if top == "studies":
            name, _, file = rest.partition("/")
            budget = cfg.claim_studies[name].budget if name in cfg.claim_studies else ""
            return name in default and ((out / path).is_file() or (study_folder(name, budget, results_root) / file)
                                        .is_file())
        return False
    return held


def figure_finder(claims: list[dict[str, Any]], held: Callable[[str], bool]) -> Callable[[str], str | None]:
    """The committed figure of a paper, by its name: the first figure of its headline claims' entries (in the order
    of fedbench.claims.coverage.PAPERS) that ``held`` accepts (:func:`committed_figure`)."""
    by_id = {c["id"]: c for c in claims}

    def find(paper_name: str) -> str | None:
        paper = next(p for p in PAPERS if p.name == paper_name)
        paths = [(by_id[i].get("figure") or {}).get("path") for k in range(len(paper.headline)) for i in paper.ids(k)
                 if i in by_id]
        return next((p for p in paths if p and held(p)), None)
    return find


def anchor(cid: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", cid.lower()).strip("-")


def _num(x: Any) -> float | None:
    if x is None:
        return None
    if isinstance(x, str):
        return math.inf if x == "inf" else -math.inf if x == "-inf" else None
    return float(x)


def _finite(x: Any) -> float | None:
    """``x`` as a float if it is a finite number (JSON metrics hold no inf), else None."""
    v = _num(x)
    return v if v is not None and math.isfinite(v) else None


def _effect(e: dict[str, Any] | None) -> dict[str, Any] | None:
    """An effect dict read back from JSON, with "inf" strings as floats again."""
    if not e:
        return None
    out = dict(e)
    out["estimate"] = _num(e.get("estimate"))
    if e.get("ci95") is not None:
        out["ci95"] = [_num(x) for x in e["ci95"]]
    return out


def published_cell(pub: dict[str, Any] | None) -> str:
    """The published value as a number with its unit and scope (or 'qualitative' with its scope)."""
    if not pub:
        return "—"
    scope = f" ({pub['scope']})" if pub.get("scope") else ""
    if pub.get("value") is None:
        return f"qualitative{scope}"
    return f"{fmt_number(float(pub['value']), signed=False)} {pub.get('unit', '')}{scope}".strip()


def rounds_cell(c: dict[str, Any]) -> str:
    """'rounds run / the paper's'; a not-run entry ran none: '— / the paper's'."""
    run, paper = None if c.get("verdict") in UNJUDGED else c.get("rounds_run"), c.get("rounds_paper")
    return f"{'—' if run is None else f'{run:,}'} / {'not stated' if paper is None else f'{paper:,}'}"


def seeds_cell(c: dict[str, Any]) -> str:
    seeds = c.get("seeds") or {"training": [], "data": []}
    effect = c.get("effect") or {}
    if str(effect.get("test", "")).startswith("none (deterministic"):
        return "deterministic"
    n = len(seeds.get("training", []))
    return f"{n}" + (f" (data {len(seeds['data'])})" if seeds.get("data") else "") if n else "—"


def effect_cell(c: dict[str, Any]) -> str:
    e = _effect(c.get("effect"))
    if e is None:
        return "—"
    text = fmt_effect(e)
    if e.get("p_value") is not None:
        text += f", p = {fmt_number(float(e['p_value']))}"
    parts = c.get("parts") or []
    return f"{e['part']}: {text}" if len(parts) > 1 and e.get("part") else text


def direction_cell(c: dict[str, Any]) -> str:
    d = c.get("direction")
    return d["verdict"] if d else "—"


def magnitude_cell(c: dict[str, Any]) -> str:
    """The magnitude part's verdict against the published value; "qualitative" without one, "none" where the
    claim registers no magnitude part (its reason in the details)."""
    m = c.get("magnitude")
    if m is None:
        return "—" if c.get("verdict") in UNJUDGED else "qualitative"
    if m.get("verdict") is None:
        return "none (see details)"
    on = f" ({m['part']})" if m.get("part") else ""
    return f"{m['verdict']} vs {fmt_number(float(m['published']), signed=True)}{on}"


def verdict_cell(c: dict[str, Any]) -> str:
    text = f"**{c['verdict']}**"
    text += f" ({c['verdict_text']})" if c.get("verdict_text") else ""
    before = original_verdicts(c)
    after_results = [(v, when) for v, when in before if v not in NO_RESULT]
    if after_results:
        text += "; rule changed after results, the earlier rule's verdict: " + ", ".join(
            f"{v} (changed {when})" for v, when in after_results)
    elif before:  # re-registered while the claim had no result: nothing was judged under the earlier rule
        text += "; rule changed before any result (" + ", ".join(f"changed {when}" for _, when in before) + ")"
    reg = (c.get("registration") or {}).get("status")
    return text + (f" [{reg}]" if reg and reg != "registered" else "")


NO_RESULT = ("not recorded", *UNJUDGED)  # an earlier rule's verdict that judged nothing


def confirmation_cell(c: dict[str, Any]) -> str:
    """The claim's confirmatory verdict (issue 32, item 1: judged again by its frozen rule on fresh seeds,
    fedbench.studies.confirm), or where its confirmation stands: deterministic, frozen and not yet run, void (the rule
    changed since it was frozen), or — (not frozen, or a claim not judged)."""
    reg = c.get("registration") or {}
    confirmed, state = reg.get("confirmatory"), reg.get("confirmation") or ""
    if confirmed:
        return f"**{confirmed['verdict']}** (seeds {_block(confirmed)})"
    if c.get("verdict") in UNJUDGED or not state or state.startswith("none"):
        return "—"
    return state.split(" (the rule")[0] if state.startswith("void") else state


def _block(confirmed: dict[str, Any]) -> str:
    """A confirmation's seeds: its training seeds, and its fresh data seeds where the block drew new data (issue 51,
    item 2): "1000-1004; data 1005-1009"."""
    data = confirmed.get("data_seeds")
    return rules_registry.seeds_text(confirmed["seeds"]) + (f"; data {rules_registry.seeds_text(data)}" if data else "")


def earlier_line(c: dict[str, Any]) -> str | None:
    """The details' line disclosing the claim's earlier confirmations that git does not show pre-registered (issue 51,
    item 1: frozen again on a fresh block; not counted), each block with its verdict and effect; None where none."""
    shown = []
    for b in (c.get("registration") or {}).get("earlier_blocks") or []:
        rec = b.get("confirmatory") or {}
        effect = _effect({k: rec.get(k) for k in ("estimate", "ci95", "unit")}) if rec.get("ci95") else None
        shown.append(f"{rec.get('verdict', 'not run')}" + (f" ({fmt_effect(effect)})" if effect else "")
                     + f" on seeds {_block(rec) if rec.get('seeds') else rules_registry.seeds_text(b['frozen']['seeds'])}"
                     + f" ({b.get('why', 'frozen again')})")
    return ("- **Earlier confirmations** (not counted, disclosed): " + "; ".join(shown) + ".") if shown else None


def confirmation_line(c: dict[str, Any]) -> str | None:
    """The details' line on the claim's confirmatory run: its verdict and effect, the frozen seeds (and fresh data
    seeds), when the rule was frozen, when and in how many seconds it ran, and where its records are; None where there
    is no confirmation."""
    reg = c.get("registration") or {}
    confirmed, frozen = reg.get("confirmatory"), reg.get("frozen") or {}
    if not confirmed:
        state = confirmation_cell(c)
        return None if state == "—" else f"- **Confirmatory**: {state}."
    effect = _effect({k: confirmed.get(k) for k in ("estimate", "ci95", "unit")}) if confirmed.get("ci95") else None
    took = f" in {confirmed['seconds']:,} s wall" if confirmed.get("seconds") is not None else ""
    return (f"- **Confirmatory**: {confirmed['verdict']}" + (f" ({fmt_effect(effect)})" if effect else "")
            + f" on fresh seeds {rules_registry.seeds_text(confirmed['seeds'])}"
            + (f" and fresh data draws {rules_registry.seeds_text(confirmed['data_seeds'])}"
               if confirmed.get("data_seeds") else "") + ", by the rule frozen on "
            f"{frozen.get('commit', '—')} ({frozen.get('date', '—')}); run on {confirmed['commit']} ({confirmed['date']})"
            f"{took}" + (f", records in `{confirmed['where']}/`" if confirmed.get("where") else "")
            + f"; exploratory verdict: {c['verdict']}.")


def original_verdicts(c: dict[str, Any]) -> list[tuple[str, str]]:
    """(verdict, when it changed) of each earlier rule of ``c``: its history, and the registered rule's last
    recorded verdict where the rule has changed since it was registered."""
    reg = c.get("registration") or {}
    out = [(h.get("verdict") or "not recorded", str(h.get("changed", "")).split(" ")[0]) for h in reg.get("history", [])]
    if reg.get("status") == "changed":
        last = reg.get("registered_verdict") or {}
        out.append((last.get("verdict") or "not recorded", "since " + str((reg.get("registered") or {}).get("commit"))))
    return out


def confirmation_summary(regs: list[dict[str, Any]]) -> str:
    """How the claims' confirmations stand, counted (``fedbench claims confirm``)."""
    states = [r.get("confirmation") or "" for r in regs]
    n = {"confirmed": sum(s == "confirmed" for s in states),
         "frozen, not yet run": sum(s.startswith("frozen") for s in states),
         rules_registry.DETERMINISTIC: sum(s == rules_registry.DETERMINISTIC for s in states),
         "void (the rule changed since it was frozen)": sum(s.startswith("void") for s in states)}
    return ("Confirmatory runs (`fedbench claims confirm`: each rule frozen with a block of never-used seeds before its "
            "study is run again on them at the same budget; the tally counts a claim by its confirmatory verdict where "
            "it has one): " + "; ".join(f"{v} {k}" for k, v in n.items()) + ".")


def rewording_summary(regs: list[dict[str, Any]]) -> list[str]:
    """A paragraph on the rules reworded without a change of rule (fedbench.claims.registry.reword), where any were."""
    done = [f"{w['changed']} ({w['why']})" for r in regs for w in r.get("rewordings", [])]
    said = "; ".join(f"{done.count(d)} on {d}" for d in dict.fromkeys(done))
    return [(f"Rules reworded without a change of rule: {said}. Each one's parts with their rules, readings, budgets, "
             "runs, published value and magnitude part are as registered, so its registration, and a confirmation "
             "frozen on it, stand; the words it was registered with are kept in `fedbench/claims/registry.json` "
             "(`rewordings`)."), ""] if done else []


def registration_lines(claims: list[dict[str, Any]], link: Callable[[str], str] | None = None) -> list[str]:
    """The registration summary and the table of every rule changed after a result, with both verdicts."""
    link = link or (lambda cid: f"#{anchor(cid)}")
    regs = [c.get("registration") or {} for c in claims]
    n = {s: sum(r.get("status") == s for r in regs) for s in ("registered", "changed", "unregistered")}
    lines = ["## Registered rules", "",
             (f"Each claim's rule (its text, parts with their kinds and thresholds, readings, runs, published value "
              f"and magnitude part) is hashed and registered in `fedbench/claims/registry.json` by `fedbench claims "
              f"register`, never by the report: {n['registered']} registered (hash matches), {n['changed']} changed "
              f"since registration, {n['unregistered']} unregistered. Rules changed after a result existed, with the "
              "verdict of the earlier rule beside the current one:"), "",
             confirmation_summary(regs), "", *rewording_summary(regs),
             "| claim | earlier rule's verdict | current verdict | changed | why | how the earlier verdict was found |",
             "|---|---|---|---|---|---|"]
    for c, r in zip(claims, regs):
        for h in r.get("history", []):
            if (h.get("verdict") or "not recorded") in NO_RESULT:
                continue  # changed before any result: listed in the claim's details, not among rules changed after
            lines.append(f"| [`{c['id']}`]({link(c['id'])}) | {h.get('verdict') or 'not recorded'} | {c['verdict']} | "
                         f"{h.get('changed', '—')} | {h.get('why', '—')} | {h.get('verdict_source', '—')} |")
        if r.get("status") == "changed":
            last = r.get("registered_verdict") or {}
            reg = r.get("registered") or {}
            lines.append(f"| [`{c['id']}`]({link(c['id'])}) | {last.get('verdict') or 'not recorded'} | "
                         f"{c['verdict']} | after {reg.get('commit')} ({reg.get('date')}) | not yet re-registered: "
                         f"{', '.join(r.get('changed_fields', []))} changed | the last verdict recorded under the "
                         "registered rule |")
    return lines + [""]


def _cell(cell: dict[str, Any]) -> str:
    e = _effect(cell)
    mark = MARK.get(cell["verdict"], cell["verdict"])
    return f"{mark} {fmt_number(e['estimate'], signed=True)}" if e and e["estimate"] is not None else mark


def sensitivity_row(c: dict[str, Any], link: Callable[[str], str] | None = None) -> str | None:
    cells = c.get("sensitivity") or []
    if not cells:
        return None
    primary = next((x for x in cells if x.get("primary")), cells[0])
    others = [x for x in cells if x["budget"] == 1.0 and not x.get("primary")]
    budgets = {x["budget"]: x for x in cells if x["budget"] < 1.0}
    unit = primary.get("unit", "")
    return (f"| [`{c['id']}`]({(link or (lambda cid: f'#{anchor(cid)}'))(c['id'])}) | {_cell(primary)} {unit} "
            f"({primary['reading']}) | "
            + ("; ".join(f"{x['reading']}: {_cell(x)}" for x in others) or "—") + " | "
            + " | ".join(_cell(budgets[b]) if b in budgets else "—" for b in (0.25, 0.5)) + " |")


def _prose(value: Any) -> str:
    """A value for the details, without raw JSON: dicts as 'key: value; ...', lists comma-separated."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_prose(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, dict) for v in value):
            return " | ".join(f"({_prose(v)})" for v in value)
        return ", ".join(_prose(v) for v in value)
    if isinstance(value, float):
        return fmt_number(value)
    return str(value)


def _shared_deviations(group: list[dict[str, Any]]) -> list[str]:
    """Deviations every claim of the group lists, in the order of the first claim."""
    if not group:
        return []
    first = group[0].get("deviations") or []
    return [d for d in first if all(d in (c.get("deviations") or []) for c in group[1:])]


def beside_their_claims(claims: list[dict]) -> list[dict]:
    """``claims`` in order, each sensitivity reading moved right after the claim it reads (where that is there)."""
    ids = {c["id"] for c in claims}
    readings: dict[str, list[dict]] = {}
    for c in claims:
        if (of := sensitivity_of(c["id"])) in ids:
            readings.setdefault(of, []).append(c)
    out = []
    for c in claims:
        if sensitivity_of(c["id"]) not in ids:
            out += [c, *readings.get(c["id"], [])]
    return out


def sensitivity_lines(c: dict[str, Any], claims: list[dict], link: Callable[[str], str] | None = None) -> list[str]:
    """The details' line listing the sensitivity readings of claim ``c``, each with its verdict and effect."""
    of = [x for x in claims if sensitivity_of(x["id"]) == c["id"]]
    if not of:
        return []
    return ["- **Sensitivity readings** (the same rule with one setting changed; shown, not counted): " + "; ".join(
        f"[`{x['id'].rsplit('/', 1)[-1]}`]({(link or (lambda cid: f'#{anchor(cid)}'))(x['id'])}): {x['verdict']}"
        + (f", {fmt_effect(_effect(x['effect']))}" if x.get("effect") else "") for x in of)]


def claims_markdown(claims: list[dict], summ: pd.DataFrame | None = None,
                    figure_of: Callable[[str], str | None] = lambda name: None) -> str:
    """reports/claims.md: the summary read in a minute (fedbench.report.summary)."""
    return summary_markdown(claims, figure_of)


def report_pages(claims: list[dict], summ: pd.DataFrame | None = None,
                 figure_of: Callable[[str], str | None] = lambda name: None,
                 held: Callable[[str], bool] = lambda path: True) -> dict[str, str]:
    """Every page of the report by its path in the report folder: claims.md and one page per study,
    claims/<study>.md (:func:`study_markdown`)."""
    everything = beside_their_claims(claims)
    studies: dict[str, list[dict[str, Any]]] = {}
    for c in everything:
        studies.setdefault(c.get("study") or "other", []).append(c)
    pages = {"claims.md": claims_markdown(claims, summ, figure_of)}
    for study, members in studies.items():
        pages[f"claims/{page_name(study)}"] = study_markdown(study, members, claims,
                                                             summ if study == MAIN_STUDY else None, held)
    return pages


def href(claims: list[dict[str, Any]]) -> Callable[[str], str]:
    """The link from one study page to an entry on its own or another study's page."""
    study = {c["id"]: page_name(c.get("study") or "other") for c in claims}
    return lambda cid: f"{study.get(cid, '')}#{anchor(cid)}"


def study_markdown(study: str, members: list[dict[str, Any]], claims: list[dict[str, Any]],
                   summ: pd.DataFrame | None = None, held: Callable[[str], bool] = lambda path: True) -> str:
    """A study's page: its claims' table (the counted verdict first), what ran where, the rules changed after a
    result, the sensitivity table, the deviations shared by its claims, then each claim's details (rule, parts,
    direction and magnitude, registration and confirmation, history, sensitivity, figure, deviations)."""
    link = href(claims)
    papers = list(dict.fromkeys(c.get("paper") or "—" for c in members))
    title = f"Study: {study}" if study in (MAIN_STUDY, "real data") else f"Study: `{study}`"
    lines = [f"# {title}", "", "[Back to the summary](../claims.md). Generated by the report stage; do not edit by hand.",
             "", "Paper" + ("s" if len(papers) > 1 else "") + ": " + "; ".join(papers) + ".", "",
             ("| claim | counted verdict | fidelity | rounds run / paper | seeds | published | effect [95% CI] | "
              "direction | magnitude | exploratory verdict | confirmatory (fresh seeds) |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in members:  # the verdict the tally counts leads, in bold; the exploratory one and its effect beside it
        lines.append(f"| [`{c['id']}`](#{anchor(c['id'])}) | **{counted_verdict(c)}** | {c['fidelity']} | "
                     f"{rounds_cell(c)} | {seeds_cell(c)} | {published_cell(c.get('published'))} | {effect_cell(c)} | "
                     f"{direction_cell(c)} | {magnitude_cell(c)} | {verdict_cell(c).replace('**', '')} | "
                     f"{confirmation_cell(c).replace('**', '')} |")
    lines.append("")
    lines += registration_lines(members, link)
    rows = [row for c in members if (row := sensitivity_row(c, link))]
    if rows:
        lines += ["## Sensitivity", "", ("Verdict mark and effect estimate under the rule's own reading (primary), "
                  "under the other readings at the full budget, and under the primary reading at 25% and 50% of the "
                  "rounds run. Marks: " + ", ".join(f"{m} {v}" for v, m in MARK.items() if v not in UNJUDGED) + "."),
                  "", "| claim | primary | other readings | 25% of rounds | 50% of rounds |", "|---|---|---|---|---|",
                  *rows, ""]
    shared = _shared_deviations(members)
    lines += ["## Details", ""]
    if shared:
        lines += ["Deviations from the paper's setup shared by these claims, the ones that matter first:", ""]
        lines += [f"{i}. {d}" for i, d in enumerate(shared, 1)] + [""]
    for c in members:
        lines += _details(c, shared, claims, link, up="../", held=held)
    if summ is not None and len(summ):
        wall = summ["wall_time_s"].sum()
        lines += [(f"Main-job runs: {len(summ)} on {', '.join(sorted(summ['device'].unique()))}, "
                  f"{wall / 60:.1f} min of simulation in all (see `runs.csv`)."), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def computed_cell(c: dict[str, Any]) -> str:
    """Where the verdict was computed: by the build of this report, or kept from elsewhere (machine, commit, date)."""
    p = c.get("provenance")
    if c.get("verdict") in UNJUDGED or not p:
        return "—"
    return ("kept from " if p.get("carried") else "this build: ") + where_text(p)


def _no_seeds(c: dict[str, Any]) -> str:
    """What an entry naming no training seeds says: a judged one ran none (a deterministic study); one that judged
    nothing has run none yet."""
    return "none yet (not run)" if c.get("verdict") in UNJUDGED else "none (deterministic)"


def _details(c: dict[str, Any], shared: list[str], claims: list[dict] = (), link: Callable[[str], str] | None = None,
             up: str = "", held: Callable[[str], bool] = lambda path: True) -> list[str]:
    pub = c.get("published") or {}
    extra = {k: v for k, v in pub.items() if k not in ("value", "unit", "scope", "statement")}
    e = _effect(c.get("effect"))
    counted = f"**{counted_verdict(c)}** (counted; exploratory: " if is_confirmed(c) else ""
    out = [f'<a id="{anchor(c["id"])}"></a>',
           f"### `{c['id']}`: {counted}{verdict_cell(c).replace('**', '') if counted else verdict_cell(c)}"
           + (")" if counted else ""), "",
           f"- **Paper**: {c.get('paper') or '—'}, {c.get('where') or '—'}.",
           f"- **Claim**: {c.get('claim') or '—'}",
           f"- **Published**: {published_cell(pub)}. {pub.get('statement') or ''}".rstrip()
           + ("" if not extra else " " + " ".join(f"{k.replace('_', ' ').capitalize()}: {_prose(v)}." for k, v in
                                                   extra.items())),
           (f"- **Fidelity**: {c.get('fidelity')}; rounds run / paper: {rounds_cell(c)}; seeds: training "
           f"{_prose((c.get('seeds') or {}).get('training') or _no_seeds(c))}, data "
           f"{_prose((c.get('seeds') or {}).get('data') or '—')}.")]
    if e is not None:
        per_seed = ", ".join(fmt_number(_num(x) if isinstance(x, str) else x, signed=True) for x in e["per_seed"])
        p = f", p = {fmt_number(float(e['p_value']))}" if e.get("p_value") is not None else ""
        coverage = (f" (interval coverage {100 * float(e['coverage']):.2f}%)" if e.get("coverage") not in (None, 0.95)
                    else "")
        part = f" ({e['part']})" if e.get("part") else ""
        out.append(f"- **Effect**{part}: {fmt_effect(e)}; per seed: {per_seed}; {e['test']}{p}{coverage}.")
    parts = c.get("parts") or []
    if len(parts) > 1:
        out += ["- **Parts**:", "", "  | part | effect [95% CI] | p | verdict |", "  |---|---|---|---|"]
        for part in parts:
            pe = _effect(part)
            pv = fmt_number(float(part["p_value"])) if part.get("p_value") is not None else "—"
            out.append(f"  | {part['part']} | {fmt_effect(pe)} | {pv} | {part['verdict']} |")
        out.append("")
    out += [f"- **Rule**: {c.get('rule') or '—'}"]
    if c.get("direction"):
        out.append(f"- **Direction**: {c['direction']['verdict']}; {c['direction']['rule']}")
    m = c.get("magnitude")
    if m:
        where = (f"; {m['part']}: " if m.get("part") else "; ") + fmt_effect(_effect(m)) if m.get("ci95") is not None \
            else ""
        out.append(f"- **Magnitude** (published {fmt_number(float(m['published']), signed=True)} {m.get('unit', '')}): "
                   f"{m['verdict'] or 'not judged'}{where}; {m['rule']}"
                   + ("; the claim is about the size, so its verdict needs both parts" if m.get("about_size") else ""))
    out += sensitivity_lines(c, list(claims), link)
    if c.get("provenance") and c.get("verdict") not in UNJUDGED:
        out.append(f"- **Computed**: {computed_cell(c)}")
    if earlier := c.get("earlier"):
        effect = f", {fmt_effect(_effect(earlier['effect']))}" if earlier.get("effect") else ""
        out.append(f"- **Earlier verdict, under the rule before it changed** ({where_text(earlier.get('provenance'))}): "
                   f"{earlier['counted_verdict']} (exploratory {earlier['verdict']}{effect}); that rule: "
                   f"{earlier.get('rule')}")
    for a, b in coincident_parts(c):
        out.append(f"- **Parts that coincide**: {a} and {b} have the same per-seed values (one measurement, not two).")
    out += [f"- **What would change the verdict**: {c.get('would_change') or '—'}"]
    reg = c.get("registration") or {}
    if reg.get("registered"):
        r = reg["registered"]
        out.append(f"- **Registered**: {reg['status']}; rule hash {reg['hash']}"
                   + (f" (registered {r['hash']})" if r["hash"] != reg["hash"] else "")
                   + f", registered on {r['commit']}, {r['date']}, "
                   + ("before its first result" if r.get("before_result") else "after a result existed")
                   + "".join(f"; its words regenerated from its data on {w['changed']}, the decision unchanged (the "
                             "registered words are in fedbench/claims/registry.json)" for w in reg.get("rewordings", [])))
    elif reg:
        out.append(f"- **Registered**: no (rule hash {reg['hash']}; `fedbench claims register` registers it)")
    if line := confirmation_line(c):
        out.append(line)
    if line := earlier_line(c):
        out.append(line)
    for h in reg.get("history", []):
        effect = f" ({fmt_effect(_effect(h))})" if h.get("ci95") is not None else ""
        out.append(f"- **Earlier rule** ({h.get('registered', '—')}; changed {h.get('changed', '—')}): {h.get('rule')}. "
                   f"Its verdict: {h.get('verdict') or 'not recorded'}{effect}, {h.get('verdict_source', '')}. Why it "
                   f"changed: {h.get('why', '—')}")
    cells = c.get("sensitivity") or []
    if cells:
        out += ["- **Sensitivity**:", "", "  | reading | rounds | verdict | effect [95% CI] |", "  |---|---|---|---|"]
        for cell in cells:
            share = f"{int(round(100 * cell['budget']))}%"
            out.append(f"  | {cell['reading']}{' (primary)' if cell.get('primary') else ''} | {share} | "
                       f"{cell['verdict']} | {fmt_effect(_effect(cell))} |")
        out.append("")
    out.append(f"- **Observed**: {c.get('observed') or '—'}")
    fig = c.get("figure")
    if fig:
        out.append(f"- **Deciding figure**: [{fig['panel']}]({up}{fig['path']})" if held(fig["path"]) else
                   f"- **Deciding figure**: {fig['panel']}, `{fig['path']}` (drawn where the study runs; not committed)")
    if c.get("scale"):
        out.append(f"- **Scale**: {_prose(c['scale'])}")
    own = [d for d in (c.get("deviations") or []) if d not in shared]
    if own:
        out += ["- **Deviations specific to this claim**:", *[f"  - {d}" for d in own]]
    return out + [""]

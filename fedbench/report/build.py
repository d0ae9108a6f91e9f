"""Build reports/ from the runs: figures, claims.json, claims.md and a table of every run.

Everything is written to a temporary folder first and moved into place, so an interrupted build never
leaves a half-written report that looks complete.

claims.md reads at a glance: the verdicts by fidelity class (the papers' own data apart from the reconstructed,
stand-in, smoke-check and analytic classes, which never count toward a headline), then grouped by paper, a coverage line per paper (how
many of its headline claims are checked on the paper's data, at which fidelity), one summary row per claim (fidelity, rounds run against the paper's, seeds,
published value with unit and scope, effect with its 95% interval, verdict), a sensitivity table (verdict and
effect under other reading rules and at 25% and 50% of the rounds), then the details, with the deviations of
each study listed once, the ones that matter first.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.claims import registry as rules_registry
from fedbench.claims.entry import NOT_IMPLEMENTED, PAPER_DATA, UNJUDGED, plain, sensitivity_of
from fedbench.claims.stats import fmt_effect, fmt_number
from fedbench.claims.tally import DEFINITION, Tally, words
from fedbench.claims.tally import tally as count_verdicts
from fedbench.config import Config
from fedbench.guard import stops_deferred
from fedbench.claims.coverage import PAPERS
from fedbench.report import figures
from fedbench.study.layout import RESULTS_ROOT, publish
from fedbench.studies.entries import collect
from fedbench.studies.fedprox_curves import STUDY as MAIN_STUDY
from fedbench.studies.train_runs import DATA_ROOT

MARK = {"reproduced": "✓", "direction-only": "↗", "not-reproduced": "✗", "inconclusive": "~", "not-run": "–",
        NOT_IMPLEMENTED: "∅"}  # a verdict not here: its name


METRICS = "metrics.json"  # dvc.yaml's metrics: what `dvc exp show` and `dvc metrics diff` compare
TABLES = ("claims.json", "claims.md", "runs.csv", METRICS)  # written into the report folder beside figures/


def report_metrics(claims: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's DVC metrics, derived from the claims only: the verdict counts of the one tally
    (fedbench.claims.tally: ``headline``, ``by_fidelity``, ``sensitivity_readings``, ``claims``, ``entries``) and each
    judged claim's effect estimate (``effects``, keyed by claim id, its dots made ``_`` since DVC joins nested keys
    with dots; the intervals are in claims.json). Every count is there, zero included, so that variations always
    have the same columns."""
    effects = {c["id"].replace(".", "_"): _finite((c.get("effect") or {}).get("estimate")) for c in claims
               if c["verdict"] not in UNJUDGED}
    return {**count_verdicts(claims).metrics(), "effects": {k: v for k, v in effects.items() if v is not None}}


def build_report(cfg: Config, out_dir: str | Path = "reports", results_root: Path = RESULTS_ROOT,
                 data_root: Path = DATA_ROOT) -> list[dict]:
    """Render every entry (fedbench.studies.entries.collect) into ``out_dir``: claims.json, claims.md, runs.csv,
    metrics.json, the figures, and the claim studies' records (``studies/<study>/``: fedbench.study.layout.publish)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    claims, hist, summ = collect(cfg, Path(results_root), Path(data_root))
    figs = Path(tempfile.mkdtemp(prefix=".figures.", dir=out))
    try:
        os.chmod(figs, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        figures.figure1(hist, figs / "fig1_stragglers_synthetic_1_1.png")
        figures.figure2(hist, figs / "fig2_heterogeneity.png")
        figures.figure5(hist, figs / "fig5_iid_stragglers.png")
        figures.real_data_figures(cfg, Path(results_root), Path(data_root), figs)
        # the tables are written beside the figures and moved into out/ with them
        (figs / "claims.json").write_text(json.dumps(plain({"claims": claims}), indent=2, allow_nan=False) + "\n")
        (figs / "claims.md").write_text(claims_markdown(claims, summ))
        summ.sort_values(["dataset", "variant", "stragglers", "seed"]).to_csv(figs / "runs.csv", index=False) \
            if len(summ) else (figs / "runs.csv").write_text("")
        (figs / METRICS).write_text(json.dumps(report_metrics(claims), indent=2, allow_nan=False) + "\n")
        with stops_deferred():  # from here the report goes in whole: a Ctrl-C or SIGTERM waits until it has
            publish(cfg, results_root, out / "studies")
            for name in TABLES:
                os.replace(figs / name, out / name)
            old = out / ".figures.old"
            shutil.rmtree(old, ignore_errors=True)  # left by a process killed here before
            if (out / "figures").exists():
                os.replace(out / "figures", old)
            os.replace(figs, out / "figures")
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(figs, ignore_errors=True)
        raise
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    return claims


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
        return f"**{confirmed['verdict']}** (seeds {rules_registry.seeds_text(confirmed['seeds'])})"
    if c.get("verdict") in UNJUDGED or not state or state.startswith("none"):
        return "—"
    return state.split(" (the rule")[0] if state.startswith("void") else state


def confirmation_line(c: dict[str, Any]) -> str | None:
    """The details' line on the claim's confirmatory run: its verdict and effect, the frozen seeds, when the rule was
    frozen, when and in how many seconds it ran, and where its records are; None where there is no confirmation."""
    reg = c.get("registration") or {}
    confirmed, frozen = reg.get("confirmatory"), reg.get("frozen") or {}
    if not confirmed:
        state = confirmation_cell(c)
        return None if state == "—" else f"- **Confirmatory**: {state}."
    effect = _effect({k: confirmed.get(k) for k in ("estimate", "ci95", "unit")}) if confirmed.get("ci95") else None
    took = f" in {confirmed['seconds']:,} s wall" if confirmed.get("seconds") is not None else ""
    return (f"- **Confirmatory**: {confirmed['verdict']}" + (f" ({fmt_effect(effect)})" if effect else "")
            + f" on fresh seeds {rules_registry.seeds_text(confirmed['seeds'])}, by the rule frozen on "
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


def registration_lines(claims: list[dict[str, Any]]) -> list[str]:
    """The registration summary and the table of every rule changed after a result, with both verdicts."""
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
            lines.append(f"| [`{c['id']}`](#{anchor(c['id'])}) | {h.get('verdict') or 'not recorded'} | {c['verdict']} | "
                         f"{h.get('changed', '—')} | {h.get('why', '—')} | {h.get('verdict_source', '—')} |")
        if r.get("status") == "changed":
            last = r.get("registered_verdict") or {}
            reg = r.get("registered") or {}
            lines.append(f"| [`{c['id']}`](#{anchor(c['id'])}) | {last.get('verdict') or 'not recorded'} | "
                         f"{c['verdict']} | after {reg.get('commit')} ({reg.get('date')}) | not yet re-registered: "
                         f"{', '.join(r.get('changed_fields', []))} changed | the last verdict recorded under the "
                         "registered rule |")
    return lines + [""]


def _cell(cell: dict[str, Any]) -> str:
    e = _effect(cell)
    mark = MARK.get(cell["verdict"], cell["verdict"])
    return f"{mark} {fmt_number(e['estimate'], signed=True)}" if e and e["estimate"] is not None else mark


def sensitivity_row(c: dict[str, Any]) -> str | None:
    cells = c.get("sensitivity") or []
    if not cells:
        return None
    primary = next((x for x in cells if x.get("primary")), cells[0])
    others = [x for x in cells if x["budget"] == 1.0 and not x.get("primary")]
    budgets = {x["budget"]: x for x in cells if x["budget"] < 1.0}
    unit = primary.get("unit", "")
    return (f"| [`{c['id']}`](#{anchor(c['id'])}) | {_cell(primary)} {unit} ({primary['reading']}) | "
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


def _coverage(paper, claims_by_id: dict[str, dict[str, Any]]) -> str:
    """How many of ``paper``'s headline claims an entry judged on the paper's own data covers (PAPER_DATA), by
    the best fidelity among its entries; a headline judged only at a fidelity counted apart (reconstructed, stand-in,
    smoke-check, analytic) is named apart with its fidelity and not counted; one whose entries are all
    not-implemented (no command would judge it) is named as such, never counted."""
    checked, fid = [], {f: 0 for f in PAPER_DATA}
    elsewhere, missing, unbuilt = [], [], []
    for i, (_, what) in enumerate(paper.headline):
        mine = [claims_by_id[cid] for cid in paper.ids(i) if cid in claims_by_id]
        ran = [c for c in mine if c["verdict"] not in UNJUDGED]
        if mine and all(c["verdict"] == NOT_IMPLEMENTED for c in mine):
            unbuilt.append(what)
            continue
        own = [c["fidelity"] for c in ran if c.get("fidelity") in PAPER_DATA]
        if own:
            checked.append(what)
            fid[min(own, key=PAPER_DATA.index)] += 1
        elif ran:
            elsewhere.append(f"{what} ({', '.join(sorted({str(c.get('fidelity')) for c in ran}))})")
        else:
            missing.append(what)
    counts = ", ".join(f"{n} {f}" for f, n in fid.items() if n)
    return (f"Coverage: {len(checked)} of {len(paper.headline)} headline claims checked on the paper's data"
            + (f" ({counts})" if counts else "")
            + (f"; judged only at a fidelity counted apart, not counted: {'; '.join(elsewhere)}" if elsewhere else "")
            + (f"; not checked: {'; '.join(missing)}" if missing else "")
            + (f"; not implemented (no command would judge it): {'; '.join(unbuilt)}" if unbuilt else "") + ".")


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


def sensitivity_lines(c: dict[str, Any], claims: list[dict]) -> list[str]:
    """The details' line listing the sensitivity readings of claim ``c``, each with its verdict and effect."""
    of = [x for x in claims if sensitivity_of(x["id"]) == c["id"]]
    if not of:
        return []
    return ["- **Sensitivity readings** (the same rule with one setting changed; shown, not counted): " + "; ".join(
        f"[`{x['id'].rsplit('/', 1)[-1]}`](#{anchor(x['id'])}): {x['verdict']}"
        + (f", {fmt_effect(_effect(x['effect']))}" if x.get("effect") else "") for x in of)]


def tally_table(t: Tally) -> list[str]:
    """The tally as a table: verdicts by fidelity class, the paper's own data (PAPER_DATA, with their total) apart
    from the classes counted apart (fedbench.claims.tally.DEFINITION)."""
    cols = [*PAPER_DATA, "paper's data, all", *t.apart]
    lines = ["| verdict | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for v in t.verdicts:
        row = [t.by_fidelity[f][v] for f in PAPER_DATA] + [t.headline[v]] + [t.by_fidelity[f][v] for f in t.apart]
        lines.append(f"| {v} | " + " | ".join(str(x) for x in row) + " |")
    return lines


def claims_markdown(claims: list[dict], summ: pd.DataFrame) -> str:
    t = count_verdicts(claims)
    n_readings = sum(t.readings.values())
    by_id = {c["id"]: c for c in claims}
    lines = [
        "# Claims checked by fedbench",
        "",
        ("Generated by `dvc repro` (stage `report`) from the runs in `results/` (the train stage's and the claim "
         "studies'); do not edit by hand. Machine-readable: `claims.json`."),
        "",
        t.summary(),
        "",
        f"{DEFINITION} (fedbench/claims/tally.py). By fidelity class:",
        "",
        *tally_table(t),
        "",
        *([(f"{n_readings} sensitivity readings (a claim judged by its own rule with one setting changed, e.g. where "
            "the authors' code and the paper differ) are shown beside their claim and not counted: "
            f"{words(t.readings, t.verdicts, zeros=False)}."), ""] if n_readings else []),
        "How to read. **Effect**: the paired difference the claim is about, per training seed (methods compared "
        "under one seed see the same clients, stragglers, minibatches and initial model), with its mean and 95% "
        "Student-t interval over the seeds and the paired t-test; where a run diverged, the median, an "
        "order-statistic interval and the sign test. **Verdict**: the rule stated in each entry, written before its "
        "result was seen: reproduced when the interval lies on the paper's side, not-reproduced when it excludes "
        "the paper's statement, inconclusive otherwise; a run at fewer rounds than the paper's cannot refute a "
        "claim while its effect still moves toward the paper's side (budget-limited). **Direction** is that rule; "
        "**magnitude**, only where the paper publishes a number, asks whether the published value lies in the 95% "
        "interval (or reaches a share of it registered per claim, fedbench/claims/magnitude.py); the verdict is the "
        "direction's unless the claim is about the size itself: then it is reproduced when both hold and "
        "direction-only when the direction holds and the size does not. **Fidelity**: paper-scale "
        "(the paper's data, setup and budget), reduced-budget (the paper's data and setup, fewer rounds, more than "
        "a tenth of the paper's, or fewer seeds), reduced-data (a subset of the paper's dataset with the setup "
        "scaled to it), reconstructed (the paper's task on its data with a setting the paper does not give chosen "
        "by fedbench), stand-in (other data or model), smoke-check (at most a tenth of the paper's rounds, whatever "
        "the data), analytic (a closed-form check, no seed randomness); only the first three count toward a "
        "headline. Sensitivity marks: "
        + ", ".join(f"{m} {v}" for v, m in MARK.items() if v not in UNJUDGED) + ".",
        "",
    ]
    known = {p.citation for p in PAPERS}
    everything, claims = claims, beside_their_claims(claims)
    groups = [(p.name, p, [c for c in claims if c.get("paper") == p.citation]) for p in PAPERS]
    others = [c for c in claims if c.get("paper") not in known]
    if others:
        groups.append(("Other", None, others))
    for name, paper, group in groups:
        if not group and paper is None:
            continue
        lines += [f"## {name}", ""] + ([f"{paper.citation}.", ""] if paper else [])
        if paper:
            lines += [_coverage(paper, by_id), ""]
        if group:
            lines += ["| claim | fidelity | rounds run / paper | seeds | published | effect [95% CI] | direction | "
                      "magnitude | verdict | confirmatory (fresh seeds) |", "|---|---|---|---|---|---|---|---|---|---|"]
            for c in group:
                lines.append(f"| [`{c['id']}`](#{anchor(c['id'])}) | {c['fidelity']} | {rounds_cell(c)} | "
                             f"{seeds_cell(c)} | {published_cell(c.get('published'))} | {effect_cell(c)} | "
                             f"{direction_cell(c)} | {magnitude_cell(c)} | {verdict_cell(c)} | "
                             f"{confirmation_cell(c)} |")
            lines.append("")
    lines += registration_lines(claims)
    lines += ["## Sensitivity", "",
              ("Verdict mark and effect estimate under the rule's own reading (primary), under the other readings at "
              "the full budget, and under the primary reading at 25% and 50% of the rounds run."), "",
              "| claim | primary | other readings | 25% of rounds | 50% of rounds |", "|---|---|---|---|---|"]
    lines += [row for c in claims if (row := sensitivity_row(c))]
    lines += ["", ("Figures: `figures/fig1_stragglers_synthetic_1_1.png`, `figures/fig2_heterogeneity.png`, "
              "`figures/fig5_iid_stragglers.png`; each study's in `studies/<study>/`."), "", "## Details", ""]
    for name, paper, group in groups:
        if not group:
            continue
        lines += [f"### {name}", ""]
        studies: dict[str, list[dict[str, Any]]] = {}
        for c in group:
            studies.setdefault(c.get("study") or "", []).append(c)
        for study, members in studies.items():
            shared = _shared_deviations(members)
            lines += [f"#### Study: {study}" if study == MAIN_STUDY else f"#### Study: `{study}`", ""]
            if shared:
                lines += ["Deviations from the paper's setup shared by these claims, the ones that matter first:", ""]
                lines += [f"{i}. {d}" for i, d in enumerate(shared, 1)] + [""]
            for c in members:
                lines += _details(c, shared, everything)
    if len(summ):
        wall = summ["wall_time_s"].sum()
        lines += [(f"Main-job runs: {len(summ)} on {', '.join(sorted(summ['device'].unique()))}, "
                  f"{wall / 60:.1f} min of simulation in all (see `runs.csv`)."), ""]
    return "\n".join(lines)


def _no_seeds(c: dict[str, Any]) -> str:
    """What an entry naming no training seeds says: a judged one ran none (a deterministic study); one that judged
    nothing has run none yet."""
    return "none yet (not run)" if c.get("verdict") in UNJUDGED else "none (deterministic)"


def _details(c: dict[str, Any], shared: list[str], claims: list[dict] = ()) -> list[str]:
    pub = c.get("published") or {}
    extra = {k: v for k, v in pub.items() if k not in ("value", "unit", "scope", "statement")}
    e = _effect(c.get("effect"))
    out = [f'<a id="{anchor(c["id"])}"></a>', f"##### `{c['id']}`: {verdict_cell(c)}", "",
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
    out += sensitivity_lines(c, list(claims))
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
        out.append(f"- **Deciding figure**: [{fig['panel']}]({fig['path']})")
    if c.get("scale"):
        out.append(f"- **Scale**: {_prose(c['scale'])}")
    own = [d for d in (c.get("deviations") or []) if d not in shared]
    if own:
        out += ["- **Deviations specific to this claim**:", *[f"  - {d}" for d in own]]
    return out + [""]

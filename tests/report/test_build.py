"""claims.md at a glance: grouped by paper with a coverage line, summary rows without raw JSON or cut cells,
published values with unit and scope, a sensitivity row per judged claim, anchors, deviations once per study."""

import json
import re

import pandas as pd
import pytest

from fedbench.claims.coverage import PAPERS
from fedbench.claims.entry import PAPER_DATA, plain
from fedbench.claims.fidelity import label
from fedbench.claims.tally import tally as count_verdicts
from fedbench.config import load_config
from fedbench.report.build import anchor, published_cell, report_pages, rounds_cell
from fedbench.studies.entries import study_claims
from fedbench.studies.fedprox_curves import STUDY, common_deviations
from fedbench.studies.fedprox_main_job import evaluate_claims
from tests.studies.test_fedprox_main_job_claims import _curves


def _all_pages(claims, summ=None) -> str:
    """Every page of the report (claims.md, then the study pages) as one text."""
    return "\n".join(report_pages(claims, summ).values())

# the rules on a pinned grid (3 seeds, 10 rounds, stragglers 0/50/90%), whatever params.yaml runs
CFG = load_config("params.yaml", {"train.seeds": [0, 1, 2], "train.rounds": 10,
                                  "studies.stragglers.stragglers": [0.0, 0.5, 0.9]})


@pytest.fixture(scope="module")
def claims():
    c = _curves(CFG, lambda ds, v, f, s: 1.0 + 0.1 * s + (0.3 if v == "fedavg" else 0.0),
                acc_of=lambda ds, v, f, s: 0.8 + 0.01 * s if v == "fedprox_mu1" else 0.5)
    main = [x | {"study": STUDY} for x in evaluate_claims(CFG, c.frame)]
    return json.loads(json.dumps(plain(main)))  # as the report reads them back


GAIN = "fedprox/synthetic-1-1/stragglers-90/accuracy-gain"


def _summary_rows(md):
    lines = md.splitlines()
    return [ln for ln in lines[: lines.index("## Sensitivity")] if ln.startswith("| [`")]


def test_summary_rows_read_at_a_glance(claims):
    md = _all_pages(claims, pd.DataFrame())
    rows = _summary_rows(md)
    assert len(rows) == len(claims)
    for row in rows:
        assert "…" not in row and "..." not in row and "{" not in row and "[{" not in row
        assert row.count(" | ") == 10  # claim, counted, fidelity, rounds, seeds, published, effect, direction, magnitude,
        # exploratory verdict,
        # confirmatory
    gain = next(r for r in rows if "accuracy-gain" in r)
    # 10 of the paper's 200 rounds: at most a tenth, so smoke-check (fedbench.claims.fidelity.smoke_check)
    assert "| smoke-check | 10 / 200 | 3 (data 1) | 22.0 accuracy points (mean over the paper's five datasets" in gain
    assert "+31.0 [+28.5, +33.5] accuracy points, p = " in gain and "**reproduced**" in gain
    assert gain.startswith(f"| [`{GAIN}`](#{anchor(GAIN)}) | **reproduced** | smoke-check | ")  # the counted one leads
    assert " | reproduced | none (see details) | reproduced | — |" in gain  # the +22 is a five-dataset mean
    partial = next(r for r in rows if "synthetic-1-1/partial-work" in r)
    assert " | qualitative | " in partial and partial.count("**") == 2  # only the counted verdict in bold


def test_direction_and_magnitude_shown_apart(claims):
    gain = next(c for c in claims if c["id"].endswith("accuracy-gain"))
    five = gain | {"id": "fedprox/five-datasets/mean-accuracy-gain",
                   "magnitude": {"kind": "contains", "published": 22.0, "unit": "accuracy points", "verdict":
                                 "not-reproduced", "rule": "reproduced if ...", "about_size": True, "part": "mean",
                                 "estimate": 31.0, "ci95": [28.5, 33.5]}, "verdict": "not-reproduced"}
    md = _all_pages([five], pd.DataFrame())
    row = _summary_rows(md)[0]
    assert row.endswith(" | reproduced | not-reproduced vs +22.0 (mean) | not-reproduced | — |")
    assert " | **not-reproduced** | smoke-check | " in row
    assert ("- **Magnitude** (published +22.0 accuracy points): not-reproduced; mean: +31.0 [+28.5, +33.5] accuracy "
            "points; reproduced if ...; the claim is about the size, so its verdict needs both parts") in md
    assert "- **Direction**: reproduced; the claim's registered rule: reproduced if the 95% interval lies above 0" in md


def _at_40_rounds(claims):
    """``claims`` as if run at 40 of the paper's 200 rounds: a fifth, more than a tenth, so the paper's setup at a
    reduced budget (fedbench.claims.fidelity.label), which covers a headline where the fixture's 10 rounds do not."""
    assert label("paper", 40, 200, seeds=3) == "reduced-budget"
    return [c | {"fidelity": "reduced-budget", "rounds_run": 40} for c in claims]


def test_papers_coverage_and_anchors(claims):
    md = _all_pages(claims, pd.DataFrame())
    assert md.index("## FedProx") < md.index("## Sensitivity") < md.index("## Details")
    # 10 of 200 rounds cover nothing: smoke-check, judged apart
    assert ("Coverage: 0 of 30 headline claims checked on the paper's data, 10 judged only at a fidelity counted "
            "apart.") in md
    md = _all_pages(_at_40_rounds(claims), pd.DataFrame())
    # at 40 rounds the fixture judges 10 headlines; the two about every dataset are judged on one of five datasets:
    # partly checked, not checked (issue 51 item 6)
    assert ("Coverage: 8 of 30 headline claims checked on the paper's data (8 reduced-budget), 2 partly checked "
            "(not every dataset judged).") in md
    assert md.count("**partly checked<br>(1 of 5)**") == 2
    assert "Coverage: 0 of 7 headline claims checked on the paper's data." in md  # SCAFFOLD: not run


def test_tally_and_coverage_count_the_papers_data_only(claims):
    """A stand-in or analytic verdict is shown in its own column and never covers a headline; the +22 headline
    is listed once."""
    fedprox = next(p for p in PAPERS if p.name == "FedProx")
    listed = [cid for i in range(len(fedprox.headline)) for cid in fedprox.ids(i)]
    assert listed.count("fedprox/five-datasets/mean-accuracy-gain") == 1
    assert sum("+22" in what for _, what in fedprox.headline) == 1
    standin = [c | {"fidelity": "stand-in"} if c["id"].endswith("partial-work") else c for c in _at_40_rounds(claims)]
    md = _all_pages(standin, pd.DataFrame())
    assert ("Coverage: 7 of 30 headline claims checked on the paper's data (7 reduced-budget), 2 partly checked (not "
            "every dataset judged), 1 judged only at a fidelity counted apart.") in md
    verdict = next(c["verdict"] for c in claims if c["id"].endswith("partial-work"))
    t = count_verdicts(standin)
    cells = lambda counts: " | ".join(str(counts[v]) for v in t.verdicts)
    lines = md.splitlines()
    assert "| fidelity | " + " | ".join(t.verdicts) + " |" in lines  # a row per class, a column per verdict
    assert f"| reduced-budget | {cells(t.by_fidelity['reduced-budget'])} |" in lines
    assert f"| stand-in | {cells(t.by_fidelity['stand-in'])} |" in lines and t.by_fidelity["stand-in"][verdict] == 1
    assert not any(ln.startswith("| analytic |") for ln in lines)  # a class counted apart that holds no claim
    for c in claims:
        assert f'<a id="{anchor(c["id"])}"></a>' in md and f"](#{anchor(c['id'])})" in md
    assert anchor("fedprox/synthetic-1-1/partial-work") == "fedprox-synthetic-1-1-partial-work"


def test_deviations_once_per_study_most_important_first(claims):
    md = _all_pages(claims, pd.DataFrame())
    rounds = common_deviations(CFG)[0]
    assert rounds.startswith("10 of the paper's 200 rounds") and all(rounds in c["deviations"] for c in claims)
    assert md.count(rounds) == 1
    shared = md.index("Deviations from the paper's setup shared by these claims")
    assert md.index("1. " + rounds) > shared
    assert "- **Deviations specific to this claim**:\n  - only Synthetic(1,1) of the paper's five datasets" in md


def test_sensitivity_and_details(claims):
    md = _all_pages(claims, pd.DataFrame())
    sens = md[md.index("## Sensitivity"): md.index("## Details")]
    assert sens.count("| [`") == len(claims)
    assert "paper's rule (C.3.2): ✓" in sens
    assert "- **What would change the verdict**: inconclusive if the interval's low end fell to 0" in md
    # on the study page, one folder down from the figures
    assert "- **Deciding figure**: [bottom row, 90% stragglers (test accuracy)](../figures/fig1_stragglers_synthetic_1_1.png)" in md
    assert "| mean of last 5 rounds (primary) | 100% | reproduced |" in md


def test_cells():
    assert published_cell({"value": None, "unit": "loss", "scope": "Figure 1", "statement": "x"}) == \
        "qualitative (Figure 1)"
    assert published_cell({"value": 4.23, "unit": "accuracy points", "scope": "CIFAR-10", "statement": ""}) == \
        "4.23 accuracy points (CIFAR-10)"
    assert rounds_cell({"rounds_run": 40, "rounds_paper": 70000}) == "40 / 70,000"
    assert rounds_cell({"rounds_run": 300, "rounds_paper": None}) == "300 / not stated"


def test_a_declared_study_not_run_gives_its_claims_not_run(tmp_path):
    cfg = load_config("params.yaml", {"claim_studies": {"default": {"delta_fl_triangle": {}}}})
    (c,) = study_claims(cfg, tmp_path)
    assert c["verdict"] == "not-run" and c["study"] == "delta_fl_triangle" and "has not run" in c["observed"]
    assert c["id"] == "delta-fl/gaussian-triangle/longest-side-midpoint" and c["rule"].startswith("on the obtuse")
    md = _all_pages([c], pd.DataFrame())
    assert "delta-fl/gaussian-triangle/longest-side-midpoint" in md


def test_every_configured_study_not_run_states_its_rules_filled_and_as_registered(tmp_path):
    """A claim study that has not run here (an opt-in one on a fresh clone) gives its claims not-run, each rule as it
    reads at the study's params.yaml budget: no ``{name}`` left unfilled (fedproxvr_synthetic's {rounds} once read so
    and made its registration differ), and the same rule as registered, so none shows as changed."""
    import re

    from fedbench.claims import registry

    cfg = load_config("params.yaml")
    entries = study_claims(cfg, tmp_path)
    assert {e["verdict"] for e in entries} == {"not-run"} and {e["study"] for e in entries} == set(cfg.claim_studies)
    assert [e["id"] for e in entries if re.search(r"\{[A-Za-z_]\w*\}", e["rule"])] == []
    book = registry.load()
    assert [e["id"] for e in entries if registry.status(e, book)["status"] != "registered"] == []


def test_registration_marks_and_rules_changed_after_results(claims):
    from fedbench.claims import registry

    gain = next(c for c in claims if c["id"].endswith("accuracy-gain"))
    partial = next(c for c in claims if c["id"].endswith("synthetic-1-1/partial-work"))
    book, _ = registry.register([gain, partial], {}, "abc123", "2026-11-26")
    book[gain["id"]]["history"] = [{"rule": "read at C.3.2", "registered": "r0", "changed": "c1 2026-11-23",
                                    "why": "compares rounds", "reading": "paper's rule (C.3.2)", "verdict": None,
                                    "verdict_source": "the sensitivity reading"}]
    changed = partial | {"rule": partial["rule"] + " (edited)"}
    marked = [c | {"registration": registry.status(c, book)} for c in (gain, changed)]
    md = _all_pages(marked, pd.DataFrame())
    cell = next(x for x in gain["sensitivity"] if x["reading"] == "paper's rule (C.3.2)")
    rows = _summary_rows(md)
    assert rows[0].endswith(f" | {gain['verdict']}; rule changed after results, the earlier rule's verdict: "
                            f"{cell['verdict']} (changed c1) | — |")
    said = f" ({partial['verdict_text']})" if partial.get("verdict_text") else ""  # e.g. an interval below its level
    assert rows[1].endswith(f" | {partial['verdict']}{said}; rule changed after results, the earlier rule's verdict: "
                            f"{partial['verdict']} (changed since abc123) [changed] | — |")
    assert ("1 registered (hash matches), 1 changed since registration, 0 unregistered" in md)
    assert (f"| {cell['verdict']} | {gain['verdict']} | c1 2026-11-23 | compares rounds | the sensitivity reading |"
            in md)
    assert (f"| {partial['verdict']} | {partial['verdict']} | after abc123 (2026-11-26) | not yet re-registered: "
            "rule changed | the last verdict recorded under the registered rule |") in md
    assert "- **Registered**: registered; rule hash sha256:" in md and "registered on abc123, 2026-11-26, after a result" in md


def test_report_metrics_count_verdicts_by_fidelity_and_keep_judged_effects():
    """Issue 23 item 8: dvc.yaml declared no metrics, so `dvc exp show` compared variations by 266 parameter
    columns and no result. reports/metrics.json: the verdict counts, by fidelity, and each judged claim's effect."""
    from fedbench.report.build import report_metrics

    def entry(cid, verdict, fidelity, estimate):
        return {"id": cid, "verdict": verdict, "fidelity": fidelity,
                "effect": None if estimate is None else {"estimate": estimate, "ci95": [0.9, 17.8]}}

    metrics = report_metrics([entry("fedprox/s-1-1/stragglers-90/gain", "reproduced", "paper-scale", 9.3748),
                              entry("fedprox/s-1-1/stragglers-90/gain/sensitivity-code", "reproduced", "paper-scale", 17.7),
                              entry("scaffold/emnist/rounds-to-0.5", "not-run", "paper-scale", None),
                              entry("mime/x", "inconclusive", "stand-in", "inf"),
                              entry("fedlaavg/y", "not-reproduced", "reduced-budget", -2.5),
                              entry("delta-fl/z", "not-implemented", "paper-scale", None)])
    zero = {"reproduced": 0, "direction-only": 0, "not-reproduced": 0, "inconclusive": 0, "not-run": 0}
    assert metrics == {  # the counts of fedbench.claims.tally: the sensitivity reading apart, stand-in apart
        "entries": 6, "claims": 4, "not_implemented": 1,  # delta-fl/z: in no count but its own
        "headline": {"reproduced": 1, "direction-only": 0, "not-reproduced": 1, "inconclusive": 0, "not-run": 1},
        "by_fidelity": {"paper-scale": zero | {"reproduced": 1, "not-run": 1},
                        "reduced-budget": zero | {"not-reproduced": 1},
                        "reduced-data": zero,
                        "reconstructed": zero,
                        "stand-in": zero | {"inconclusive": 1},
                        "smoke-check": zero,
                        "analytic": zero},
        "sensitivity_readings": zero | {"reproduced": 1},
        "confirmed": {"entries": 0, "headline": 0}, "confirmed_effects": {},
        "headline_exploratory": {"reproduced": 1, "direction-only": 0, "not-reproduced": 1, "inconclusive": 0,
                                 "not-run": 1},
        "effects": {"fedprox/s-1-1/stragglers-90/gain": 9.3748,  # no inf: JSON metrics
                    "fedprox/s-1-1/stragglers-90/gain/sensitivity-code": 17.7, "fedlaavg/y": -2.5}}


def test_rounds_cell_of_a_not_run_claim_shows_the_papers_budget_only():
    assert rounds_cell({"verdict": "not-run", "rounds_run": 100, "rounds_paper": 100}) == "— / 100"  # as stored before
    assert rounds_cell({"verdict": "not-run", "rounds_run": None, "rounds_paper": None}) == "— / not stated"
    assert rounds_cell({"verdict": "reproduced", "rounds_run": 20, "rounds_paper": 40}) == "20 / 40"


def test_report_stage_declares_its_metrics():
    import yaml

    stage = yaml.safe_load(open("dvc.yaml"))["stages"]["report"]
    assert stage["metrics"] == [{"reports/metrics.json": {"cache": False}}]
    committed = json.loads(open("reports/metrics.json").read())
    assert committed["entries"] == len(json.loads(open("reports/claims.json").read())["claims"])


def test_rule_changed_before_any_result_is_not_called_changed_after_results(claims):
    """A stand-in re-registered (cut to fit the machine) before its first run had no verdict under the earlier
    rule: its cell says the rule changed before any result, and the table of rules changed after results skips it."""
    from fedbench.claims import registry

    gain = next(c for c in claims if c["id"].endswith("accuracy-gain"))
    book, _ = registry.register([gain], {}, "abc123", "2026-11-26")
    book[gain["id"]]["history"] = [{"rule": "the first cut", "registered": "r0", "changed": "c1 2026-11-26",
                                    "why": "cut to fit 2 cores", "verdict": "not-run",
                                    "verdict_source": "no result existed"}]
    marked = [gain | {"registration": registry.status(gain, book)}]
    md = _all_pages(marked, pd.DataFrame())
    row = _summary_rows(md)[0]
    assert row.endswith(f" | {gain['verdict']}; rule changed before any result (changed c1) | — |")
    section = md.split("## Registered rules")[1].split("\n## ")[0]
    assert "| claim | earlier rule's verdict |" in section and "cut to fit 2 cores" not in section


def test_a_sensitivity_reading_is_shown_beside_its_claim_and_not_counted(claims):
    gain = next(c for c in claims if c["id"].endswith("stragglers-90/accuracy-gain"))
    reading = gain | {"id": gain["id"] + "/sensitivity-code-seeding", "verdict": "inconclusive",
                      "effect": gain["effect"] | {"estimate": 3.0, "ci95": [-1.0, 7.0]}}
    plain_md = _all_pages(claims, pd.DataFrame())
    md = _all_pages([reading, *claims], pd.DataFrame())  # listed first: the report moves it after its claim
    tally = [ln for ln in md.splitlines() if re.match(r"\| (smoke-check|paper's data, all) \| ", ln)]
    assert tally == [ln for ln in plain_md.splitlines() if re.match(r"\| (smoke-check|paper's data, all) \| ", ln)]
    headline = "Toward the headline: " + count_verdicts(claims).headline_text()
    assert headline in md and headline in plain_md  # the headline counts too
    assert "; sensitivity readings: 1 inconclusive." in md
    rows = _summary_rows(md)
    at = next(i for i, r in enumerate(rows) if r.startswith(f"| [`{gain['id']}`]"))
    assert rows[at + 1].startswith(f"| [`{reading['id']}`]") and " | **inconclusive** | " in rows[at + 1]
    assert (f"- **Sensitivity readings** (the same rule with one setting changed; shown, not counted): "
            f"[`sensitivity-code-seeding`](main-job.md#{anchor(reading['id'])}): inconclusive, +3.00 [-1.00, +7.00]") in md


def test_opt_in_study_is_not_run_with_its_command_and_cost_until_it_runs(tmp_path):
    from fedbench.claims import registry

    cfg = load_config("params.yaml")  # feddane_synthetic is opt-in (claim_studies.opt_in)
    dane = [c for c in study_claims(cfg, tmp_path) if c["study"] == "feddane_synthetic"]
    assert [c["id"] for c in dane] == ["fedprox/synthetic-iid/feddane-similar-to-fedprox",
                                       "fedprox/synthetic/feddane-poor-on-non-iid",
                                       "fedprox/synthetic/feddane-more-devices-still-worse"]
    for c in dane:
        assert c["verdict"] == "not-run" and c["command"] == "fedbench study run feddane_synthetic"
        assert ("1,721 s wall at the paper budget, 2 workers on 2 CPU cores beside other jobs (2,615 CPU-s), measured "
                "2026-11-26") in c["observed"]
        assert c["cost"]["seconds"] == 1721
        assert registry.status(c, registry.load())["status"] == "registered"  # its rule as registered: no change
    folder = tmp_path / "feddane_synthetic" / "paper"  # someone ran it at its budget: read as any study's claims
    folder.mkdir(parents=True)
    judged = {"id": "fedprox/synthetic-iid/feddane-similar-to-fedprox", "verdict": "reproduced",
              "fidelity": "paper-scale", "rounds_run": 20, "rounds_paper": 200}  # stored before the smoke-check rule
    (folder / "claims.json").write_text(json.dumps({"claims": [judged]}))
    dane = [c for c in study_claims(cfg, tmp_path) if c["study"] == "feddane_synthetic"]
    assert dane == [judged | {"study": "feddane_synthetic", "fidelity": "smoke-check"}]  # relabelled: 20 <= 200 / 10


def test_the_confirmatory_verdict_sits_beside_the_exploratory_one_and_the_tally_counts_it(claims):
    """Issue 32, item 1: a claim judged again by its frozen rule on fresh seeds shows that verdict in its row and its
    details beside the exploratory one; a deterministic study's claim says it has no seeds to confirm; the tally
    counts the confirmatory verdict, and a rule changed since freezing voids it (the exploratory verdict is counted)."""
    from fedbench.claims import registry

    gain, partial = claims[0], claims[1]
    book, _ = registry.register([gain, partial], {}, "abc123", "2026-11-26")
    book, _ = registry.freeze([gain], book, "def456", "2026-11-27", count=len(gain["seeds"]["training"]),
                              ids=[gain["id"]])
    seeds = book[gain["id"]]["frozen"]["seeds"]
    other = "inconclusive" if gain["verdict"] != "inconclusive" else "reproduced"
    rerun = gain | {"verdict": other, "seeds": {"training": seeds, "data": [0]},
                    "effect": gain["effect"] | {"estimate": 1.5, "ci95": [-0.5, 3.5]}}
    book = registry.confirm(rerun, book, "ghi789", "2026-11-28", seconds=61.04, where="results/confirm/s",
                            frozen_in="def456")  # its frozen block shown in a commit: counted
    book = registry.mark_deterministic(partial, book, "ghi789", "2026-11-28")
    marked = [c | {"registration": registry.status(c, book)} for c in (gain, partial)]
    md = _all_pages(marked, pd.DataFrame())
    rows = _summary_rows(md)
    assert rows[0].endswith(f" | {gain['verdict']} | {other} (seeds {seeds[0]}-{seeds[-1]}) |")
    assert rows[0].startswith(f"| [`{gain['id']}`](#{anchor(gain['id'])}) | **{other}** | ")  # the counted one leads
    assert rows[1].endswith(" | deterministic: no seeds to confirm |")
    unit = gain["effect"].get("unit", "")
    assert (f"- **Confirmatory**: {other} (+1.50 [-0.500, +3.50]{' ' + unit if unit else ''}) on fresh seeds "
            f"{seeds[0]}-{seeds[-1]}, by the rule frozen on def456 (2026-11-27); run on ghi789 (2026-11-28) in 61.0 s "
            f"wall, records in `results/confirm/s/`; exploratory verdict: {gain['verdict']}.") in md
    assert ("1 confirmed; 0 frozen, not yet run; 1 deterministic: no seeds to confirm; 0 void (the rule changed since "
            "it was frozen).") in md
    t = count_verdicts(marked)
    assert (t.confirmed, sum(t.by_fidelity[gain["fidelity"]].values())) == (1, 1 + (partial["fidelity"] == gain["fidelity"]))
    assert t.by_fidelity[gain["fidelity"]][other] == 1 + (partial["fidelity"] == gain["fidelity"] and partial["verdict"] == other)
    assert t.summary().endswith(f"Counted by a confirmatory verdict (judged again by its frozen rule on fresh seeds): 1 of "
                                f"the 2 entries, {int(gain['fidelity'] in PAPER_DATA)} of them toward the headline; every "
                                "other entry by its exploratory verdict.")
    changed = gain | {"rule": gain["rule"] + " (edited)"}
    void = changed | {"registration": registry.status(changed, book)}
    assert _summary_rows(_all_pages([void], pd.DataFrame()))[0].endswith(" | void |")
    assert count_verdicts([void]).confirmed == 0 and count_verdicts([void]).by_fidelity[gain["fidelity"]][gain["verdict"]] == 1


def test_a_confirmation_on_fresh_data_names_its_draws_and_earlier_blocks_are_disclosed(claims):
    """Issue 51: a confirmation whose block drew fresh data (item 2) names its data seeds in its row and its details;
    a claim frozen again because git did not show its first confirmation pre-registered (item 1) discloses that
    block, its verdict and effect and why, in its details, and the tally counts only the new one."""
    from fedbench.claims import registry

    gain = claims[0]
    book, _ = registry.register([gain], {}, "abc123", "2026-11-26")
    book, _ = registry.freeze([gain], book, "def456", "2026-11-27", count=2, ids=[gain["id"]])
    first = book[gain["id"]]["frozen"]["seeds"]
    rerun = gain | {"verdict": "reproduced", "seeds": {"training": first, "data": [0]},
                    "effect": gain["effect"] | {"estimate": 2.0, "ci95": [1.0, 3.0]}}
    book = registry.confirm(rerun, book, "ghi789", "2026-11-28")  # no frozen_in: not shown pre-registered
    book, _ = registry.freeze([gain], book, "jkl012", "2026-11-29", count=2, fresh_data=lambda e: True)
    block = book[gain["id"]]["frozen"]
    assert block["seeds"] != first and len(block["data_seeds"]) == 2
    again = gain | {"verdict": "inconclusive", "seeds": {"training": block["seeds"], "data": block["data_seeds"]},
                    "effect": gain["effect"] | {"estimate": 1.5, "ci95": [-0.5, 3.5]}}
    book = registry.confirm(again, book, "mno345", "2026-11-30", frozen_in="jkl012")
    md = _all_pages([gain | {"registration": registry.status(gain, book)}], pd.DataFrame())
    seeds, data = (registry.seeds_text(block[k]) for k in ("seeds", "data_seeds"))
    assert _summary_rows(md)[0].endswith(f" | inconclusive (seeds {seeds}; data {data}) |")
    assert f"on fresh seeds {seeds} and fresh data draws {data}, by the rule frozen on jkl012" in md
    unit = gain["effect"].get("unit", "")
    assert (f"- **Earlier confirmations** (not counted, disclosed): reproduced (+2.00 [+1.00, +3.00]"
            f"{' ' + unit if unit else ''}) on seeds {registry.seeds_text(first)} (its pre-registration is not shown: "
            "no commit of its frozen block recorded).") in md
    assert count_verdicts([gain | {"registration": registry.status(gain, book)}]).confirmed == 1


def test_a_not_implemented_headline_is_named_and_covers_nothing(claims, monkeypatch):
    """Issue 32, item 4: a claim in HEADLINES, which no command would judge (fedbench.studies.paper_entries.
    headline_entries), is a not-implemented entry; a paper's coverage line names it as such and counts it as not
    checked (it stays in its denominator: missing, never covered), and the tally counts it in no class. None is left
    now (every placeholder of the review is a study's claim), so one is made up here: E = 1's partial work as it was
    before its studies existed."""
    from fedbench.claims.papers import FEDPROX_PAPER
    from fedbench.studies import paper_entries

    assert paper_entries.HEADLINES == ()
    monkeypatch.setattr(paper_entries, "HEADLINES", (paper_entries.Headline(
        "fedprox/real/partial-work-e1", FEDPROX_PAPER, "section 5.2, Figures 9 and 10", "partial work helps at E = 1",
        "'still performs better'", "training loss", "greater than 0", "paper-scale", None, "missing: E = 1 studies"),))
    missing = json.loads(json.dumps(plain(paper_entries.headline_entries())))
    assert {c["verdict"] for c in missing} == {"not-implemented"} and all(c["rounds_run"] is None for c in missing)
    md = _all_pages(_at_40_rounds(claims) + missing, pd.DataFrame())
    assert ("Coverage: 8 of 30 headline claims checked on the paper's data (8 reduced-budget), 2 partly checked (not "
            "every dataset judged); not implemented (no command would judge it): partial work helps at E = 1 on the "
            "real datasets (Figures 9-10).") in md
    # an entry that judged nothing names no seeds as not yet run, never as deterministic
    assert "seeds: training none yet (not run), data —." in md and "training none (deterministic)" not in md
    t = count_verdicts(_at_40_rounds(claims) + missing)
    assert t.claims == len(claims) and len(t.not_implemented) == len(missing) == 1
    assert t.headline == count_verdicts(_at_40_rounds(claims)).headline


def test_a_reworded_rule_is_said_once_in_the_summary_and_in_its_details():
    """A rule whose words were regenerated without a change of rule (fedbench.claims.registry.reword): the registration
    section counts the rewordings by commit, and the claim's details say when, beside its registration."""
    from fedbench.report.build import _details, rewording_summary

    words = {"changed": "abc123 2026-11-29", "why": "generated from its data"}
    regs = [{"rewordings": [words]}, {"rewordings": [words]}, {"rewordings": []}]
    (line, blank) = rewording_summary(regs)
    assert line.startswith("Rules reworded without a change of rule: 2 on abc123 2026-11-29 (generated from its "
                           "data). Each one's parts") and blank == ""
    assert rewording_summary([{"rewordings": []}, {}]) == []
    c = {"id": "p/x", "verdict": "reproduced", "rule": "r", "registration": {
        "status": "registered", "hash": "h", "history": [], "rewordings": [words],
        "registered": {"hash": "h", "commit": "c0", "date": "2026-11-20", "before_result": True}}}
    (registered,) = [x for x in _details(c, []) if x.startswith("- **Registered**")]
    assert registered == ("- **Registered**: registered; rule hash h, registered on c0, 2026-11-20, before its first "
                          "result; its words regenerated from its data on abc123 2026-11-29, the decision unchanged "
                          "(the registered words are in fedbench/claims/registry.json)")

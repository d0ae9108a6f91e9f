"""claims.md read in a minute (issue 52 item 1, issue 51 item 6), where each verdict was computed (issue 52 item 2:
fedbench.report.origin) and the comparison with git's report (fedbench.report.compare)."""

import json
from pathlib import Path

from fedbench.claims.coverage import PAPERS
from fedbench.report import origin
from fedbench.report.compare import compare, reason
from fedbench.report.summary import ROW_WIDTH, paper_section, shown_width, summary_markdown

ROOT = Path(__file__).resolve().parents[2]
FEDPROX = next(p for p in PAPERS if p.name == "FedProx")
HERE = {"machine": "Test CPU, 2 cores", "commit": "abc123", "date": "2026-12-07"}


def _entry(cid, verdict, fidelity="paper-scale", **kw):
    return {"id": cid, "paper": FEDPROX.citation, "verdict": verdict, "fidelity": fidelity, "study": "main job",
            "rule": "r", "observed": "o", "deviations": [], "published": {"value": 22.0, "unit": "accuracy points"},
            "effect": None if verdict == "not-run" else {"estimate": 9.3748, "ci95": [0.929445, 17.8202],
                                                         "unit": "accuracy points", "test": "paired t"}} | kw


GAIN = "fedprox/synthetic-1-1/stragglers-90/accuracy-gain"
CONFIRMED = _entry(GAIN, "reproduced", registration={"confirmatory": {
    "verdict": "inconclusive", "seeds": [1015, 1019], "estimate": 6.34, "ci95": [-1.77, 14.46],
    "unit": "accuracy points"}}, provenance={"carried": True, **HERE})


def _row(md: str, text: str) -> str:
    return next(line for line in md.splitlines() if line.startswith("| [") and text in line)


def test_a_row_leads_with_the_counted_verdict_and_its_own_effect():
    """The hand-made confirmed entry: the confirmatory verdict in bold, the exploratory beside it (never bold), the
    confirmatory run's effect and interval, the published value, the fidelity; † as it was kept from elsewhere."""
    row = _row("\n".join(paper_section(FEDPROX, {GAIN: CONFIRMED}, None)), "Synthetic(1,1)")
    assert row == ("| [Synthetic(1,1): FedProx's<br>accuracy gain at 90%<br>stragglers (Figure 7)]"
                   "(claims/main-job.md#fedprox-synthetic-1-1-stragglers-90-accuracy-gain) | **inconclusive** †<br>"
                   "expl.: reproduced | +6.34 [-1.77, +14.5]<br>accuracy points<br>paper: +22 | paper-scale |")
    assert shown_width(row) <= ROW_WIDTH


def test_a_not_run_row_names_its_command_and_cost_under_the_table():
    five = _entry("fedprox/five-datasets/mean-accuracy-gain", "not-run", study="real data",
                  observed="not run: missing the runs of fedprox_mnist, fedprox_femnist",
                  command="fedbench paper run fedprox_mnist", cost={"hours": 0.08, "source": "measured"})
    lines = paper_section(FEDPROX, {five["id"]: five}, None)
    assert _row("\n".join(lines), "+22 points").endswith("| **not-run** | not run: see (a) | paper-scale |")
    table_end = lines.index("", lines.index("|---|---|---|---|"))
    assert lines[table_end + 1] == ("- (a) `fedbench paper run fedprox_mnist`: 0.08 h (measured); missing the runs of "
                                    "fedprox_mnist, fedprox_femnist")


def test_a_headline_over_several_datasets_is_partly_checked_until_every_one_is_judged():
    """Issue 51 item 6: 'on all datasets' judged on 2 of its 5 datasets (Synthetic and MNIST by its reduced-data
    alternative) is partly checked (2 of 5), not checked; the coverage line counts it apart."""
    ids = ["fedprox/synthetic-1-1/stragglers-hurt-fedavg", "fedprox/mnist5k/stragglers-hurt-fedavg"]
    by_id = {ids[0]: _entry(ids[0], "reproduced"), ids[1]: _entry(ids[1], "not-reproduced", "reduced-data")}
    text = "\n".join(paper_section(FEDPROX, by_id, None))
    assert "Coverage: 0 of 30 headline claims checked on the paper's data, 1 partly checked (not every dataset " \
           "judged)." in text
    row = _row(text, "more<br>stragglers")
    assert "| **partly checked<br>(2 of 5)**<br>1 reproduced<br>1 not-reproduced |" in row
    every = {i: _entry(i, "reproduced") for alternatives in FEDPROX.datasets(
        next(k for k, (_, what) in enumerate(FEDPROX.headline) if "more stragglers" in what)) for i in alternatives[:1]}
    assert "Coverage: 1 of 30 headline claims checked on the paper's data (1 paper-scale)." in "\n".join(
        paper_section(FEDPROX, every, None))


def test_two_parts_that_coincide_are_said_to():
    parts = [{"part": p, "per_seed": [0.74, 0.51, 0.75], "estimate": 0.67, "ci95": [0.2, 0.9], "verdict": "reproduced"}
             for p in ("SVRG", "SARAH")]
    e = _entry(GAIN, "reproduced", parts=parts)
    assert "<br>SVRG = SARAH: the same<br>per-seed values |" in _row("\n".join(paper_section(FEDPROX, {GAIN: e}, None)), "90%")


def test_the_committed_summary_reads_in_a_minute():
    """reports/claims.md: at most 150 lines, every table row shown within a code host's width, the counted verdict
    in bold in every judged row, an embedded figure per paper that has a committed one."""
    md = (ROOT / "reports" / "claims.md").read_text()
    assert len(md.splitlines()) <= 160  # the issue's ~150 lines
    rows = [line for line in md.splitlines() if line.startswith("|")]
    assert rows and all(shown_width(r) <= ROW_WIDTH for r in rows), [r for r in rows if shown_width(r) > ROW_WIDTH]
    figures = [line for line in md.splitlines() if line.startswith("![")]
    for line in figures:
        assert (ROOT / "reports" / line.split("](")[1].rstrip(")")).is_file()
    assert len(figures) >= 5
    claims = json.loads((ROOT / "reports" / "claims.json").read_text())["claims"]
    assert len(summary_markdown(claims).splitlines()) == len(md.splitlines())


def test_a_verdict_not_computed_here_is_kept_with_where_it_was_computed():
    """A fresh build with no result for a claim keeps the judged one of the report it replaces (same rule), with its
    provenance and this build's command; one judged here is stamped with this build; one whose rule changed is not
    kept."""
    old = _entry(GAIN, "reproduced", provenance={"machine": "Xeon, 2 cores", "commit": "9e1a3b0", "date": "2026-11-28"})
    fresh = _entry(GAIN, "not-run", command="fedbench study run x", cost={"seconds": 5})
    (kept,) = origin.carry([fresh], [old], HERE, registry={})
    assert kept["verdict"] == "reproduced" and kept["effect"] == old["effect"] and kept["command"] == "fedbench study run x"
    assert kept["provenance"] == {"machine": "Xeon, 2 cores", "commit": "9e1a3b0", "date": "2026-11-28", "carried": True}
    assert kept["registration"]["status"] == "unregistered"  # read again from the registry given
    (unkept,) = origin.carry([fresh | {"rule": "another rule"}], [old], HERE, registry={})
    assert unkept["verdict"] == "not-run" and "provenance" not in unkept
    assert unkept["earlier"] == {"verdict": "reproduced", "counted_verdict": "reproduced", "effect": old["effect"],
                                 "rule": "r", "provenance": {"machine": "Xeon, 2 cores", "commit": "9e1a3b0",
                                                             "date": "2026-11-28"}}  # what it said: kept, not counted
    (still,) = origin.carry([fresh | {"rule": "another rule"}], [unkept], HERE, registry={})
    assert still["earlier"] == unkept["earlier"]  # the next build still has it, until the claim is judged again
    (here,) = origin.carry([old | {"provenance": None}], [old], HERE, registry={})
    assert here["provenance"] == HERE | {"carried": False}  # computed here on another machine: this build's stamp
    same = old | {"provenance": HERE | {"date": "2026-12-01"}}
    (again,) = origin.carry([_entry(GAIN, "reproduced")], [same], HERE, registry={})
    assert again["provenance"]["date"] == "2026-12-01"  # the same numbers on the same machine: no line changes
    (older,) = origin.carry([fresh], [_entry(GAIN, "reproduced")], HERE, {"commit": "5d16538", "date": "2026-11-29"},
                            registry={})
    assert older["provenance"] == {"machine": origin.NOT_RECORDED, "commit": "5d16538", "date": "2026-11-29",
                                   "carried": True}


def test_compare_says_what_was_reproduced_what_moved_and_why_and_what_to_run():
    committed = [_entry("a", "reproduced"), _entry("b", "reproduced"), _entry("c", "inconclusive"),
                 _entry("d", "reproduced")]
    new = [_entry("a", "reproduced", provenance=HERE | {"carried": False}),
           _entry("b", "inconclusive", provenance=HERE | {"carried": False},
                  effect={"estimate": 9.37481, "ci95": [-0.1, 17.8], "unit": "accuracy points"}),
           _entry("c", "inconclusive", provenance=HERE | {"carried": True}, command="fedbench study run c",
                  cost={"seconds": 273, "device": "2 cores"}),
           _entry("d", "not-run", rule="a new rule", command="fedbench study run c")]
    lines = compare(new, committed)
    assert lines == [
        ("Against git's committed report: 2 verdicts computed here, 1 of them as committed; 1 kept from elsewhere (not "
         "run here; machine, commit and date in claims.json); 1 not run; 2 moved."),
        ("  moved: b: reproduced -> inconclusive (the same effect to 3 digits: another CPU's last digits at the "
         "verdict's edge)"),
        "  moved: d: reproduced -> not-run (its rule changed)",
        "To compute the kept verdicts here (each command asks before it starts), then `dvc repro`:",
        "  fedbench study run c  # 1 claim; 273 s (measured)"]
    more = compare(new + [_entry("e", "not-run", command="fedbench paper run e")], committed)
    assert more[-1] == "The not-run claims run by 1 more command: `fedbench show --claims` lists them with their cost."
    assert reason(_entry("x", "reproduced"), _entry("x", "not-run")) == "run here, not run in the committed report"
    assert compare(new, None)[0].startswith("No comparison: ")


def test_a_fresh_clone_keeps_the_committed_verdicts_and_figures_that_dvc_removed(tmp_path, capsys):
    """`dvc repro` removes the report stage's outputs before it runs: the report being replaced is then git's. An
    opt-in study's verdict committed there (same rule) is kept with that commit, its committed figure too, and the
    build ends with the comparison against git's report."""
    import subprocess

    from fedbench.config import load_config
    from fedbench.report.build import build_report
    from fedbench.studies.entries import study_claims

    cfg = load_config(str(ROOT / "params.yaml"))
    (mu1,) = [c for c in study_claims(cfg, tmp_path / "none") if c["study"] == "feddane_mu1"]
    judged = mu1 | {"verdict": "not-reproduced", "effect": {"estimate": -11.6, "ci95": [-14.3, -8.96], "unit": "%",
                                                           "per_seed": [-11.0, -12.2], "test": "paired t"}}
    out = tmp_path / "reports"
    (out / "figures").mkdir(parents=True)
    (out / "claims.json").write_text(json.dumps({"claims": [judged]}))
    (out / "figures" / "fig1_stragglers_synthetic_1_1.png").write_bytes(b"committed figure")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "reports"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "report"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (out / "claims.json").unlink()  # as dvc repro does
    (out / "figures" / "fig1_stragglers_synthetic_1_1.png").unlink()
    claims = build_report(cfg, out, tmp_path / "results", tmp_path / "data")
    (kept,) = [c for c in claims if c["id"] == mu1["id"]]
    assert kept["verdict"] == "not-reproduced" and kept["provenance"]["commit"] == head
    assert kept["provenance"]["carried"] and kept["command"] == "fedbench study run feddane_mu1"
    assert (out / "figures" / "fig1_stragglers_synthetic_1_1.png").read_bytes() == b"committed figure"
    printed = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(printed) if line.startswith("Against git's committed report: "))
    assert printed[at] == ("Against git's committed report: 0 verdicts computed here, 0 of them as committed; 1 kept "
                           "from elsewhere (not run here; machine, commit and date in claims.json); "
                           f"{len(claims) - 1} not run; 0 moved.")
    assert printed[at + 1:at + 4] == [
        f"  {len(claims) - 1} entries new here, 0 committed entries no longer declared",
        "To compute the kept verdicts here (each command asks before it starts), then `dvc repro`:",
        "  fedbench study run feddane_mu1  # 1 claim; 334 s (measured)"]
    assert printed[-1].startswith("The not-run claims run by ") and len(printed) == at + 5
    assert (out / "claims" / "feddane_mu1.md").is_file()


def test_a_claim_whose_rule_changed_says_its_last_verdict_under_the_table():
    earlier = {"verdict": "reproduced", "counted_verdict": "reproduced", "rule": "old",
               "effect": {"estimate": 33.3, "ci95": [15.3, 44.4], "unit": "% of cases"},
               "provenance": {"machine": origin.NOT_RECORDED, "commit": "80d8085", "date": "2026-11-29"}}
    cid = "fedprox/synthetic/mu-increases-accuracy"
    e = _entry(cid, "not-run", observed="missing runs: fedavg on synthetic_iid", earlier=earlier)
    assert ("- fedprox/synthetic/mu-increases-accuracy: its rule changed since its last verdict (reproduced +33.3 "
            "[+15.3, +44.4] % of cases; machine not recorded, commit 80d8085, 2026-11-29), not judged again here: "
            "missing runs: fedavg on synthetic_iid") in paper_section(FEDPROX, {cid: e}, None)


def test_each_judged_headline_verdict_has_its_holm_adjusted_verdict_beside_it():
    """Issue 51: claims.md states the headline family's size and the Holm-adjusted verdict beside each headline
    verdict (fedbench.claims.verdict.holm_headline); the committed report is that rendering."""
    from fedbench.claims.verdict import holm_headline

    claims = json.loads((ROOT / "reports" / "claims.json").read_text())["claims"]
    rows = holm_headline(claims)
    md = summary_markdown(claims)
    assert rows and all(r["family"] == len(rows) for r in rows)
    gain = next(r for r in rows if r["id"] == GAIN)
    assert gain["holm_verdict"] == "inconclusive" and gain["source"] == "confirmatory"
    assert "Holm, m=19:<br>inconclusive" in _row(md, "Synthetic(1,1): FedProx's") and len(rows) == 19
    committed = (ROOT / "reports" / "claims.md").read_text()
    assert committed.count(f"Holm, m={len(rows)}:") == md.count(f"Holm, m={len(rows)}:") > 0


def test_what_ran_where_counts_each_kind_and_says_verdict_for_one():
    from fedbench.report.summary import provenance_line

    here = {"machine": "AMD EPYC, 2 cores", "commit": "9c886e6", "date": "2026-12-08"}
    kept = {**here, "commit": "179963c", "date": "2026-12-07", "carried": True}
    claims = [{"verdict": "direction-only", "provenance": here}, {"verdict": "reproduced", "provenance": kept},
              {"verdict": "inconclusive", "provenance": kept}, {"verdict": "not-run", "provenance": None}]
    assert provenance_line(claims) == (
        "What ran where: 1 verdict computed by the build of this report (1 on AMD EPYC, 2 cores, commit 9c886e6, "
        "2026-12-08); 2 kept from earlier reports, computed elsewhere (†): 2 on AMD EPYC, 2 cores, commit 179963c, "
        "2026-12-07; 1 not run (their commands under each table).")
    assert provenance_line(claims[1:]).startswith("What ran where: 0 verdicts computed by the build of this report (none)")

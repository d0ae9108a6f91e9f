"""Registered rules (fedbench.claims.registry): the spec and its hash, registered / changed / unregistered, what
re-registering keeps, the CLI's errors, and the committed registry against the committed report."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fedbench.claims import registry as reg
from fedbench.claims.entry import new_entry

ROOT = Path(__file__).resolve().parents[2]


def _entry(rule="greater than 0", threshold="reproduced if the 95% interval lies above 0", verdict="reproduced",
           seeds=(0, 1, 2, 3, 4), cid="p/x"):
    e = new_entry(id=cid, paper="p", where="w", claim_text="c", published={"value": None, "unit": "u", "scope": "",
                                                                             "statement": ""},
                  rule=rule, scale={"rounds": 200}, deviations=[], figure=None, fidelity="paper-scale",
                  rounds_run=200, rounds_paper=200, training_seeds=list(seeds), data_seeds=[0])
    if verdict != "not-run":
        e |= {"verdict": verdict, "parts": [{"part": "a", "rule": threshold, "verdict": verdict}],
              "sensitivity": [{"reading": "tail", "budget": 1.0, "primary": True, "verdict": verdict},
                              {"reading": "paper", "budget": 1.0, "primary": False, "verdict": "inconclusive",
                               "estimate": 3.0, "ci95": [-1.0, 7.0], "unit": "points"},
                              {"reading": "tail", "budget": 0.5, "primary": False, "verdict": verdict}]}
    return e


def test_spec_and_hash_are_exact():
    spec = reg.rule_spec(_entry())
    assert spec == {"rule": "greater than 0", "parts": [["a", "reproduced if the 95% interval lies above 0"]],
                    "primary": "tail", "readings": ["paper", "tail"], "budgets": [0.5, 1.0],
                    "runs": {"scale": {"rounds": 200}, "seeds": {"training": [0, 1, 2, 3, 4], "data": [0]},
                             "rounds_run": 200, "rounds_paper": 200},
                    "published": None, "magnitude": None}
    assert reg.content_hash(spec) == reg.content_hash(json.loads(json.dumps(spec)))  # key order does not matter
    assert reg.content_hash(spec) != reg.content_hash(reg.rule_spec(_entry(threshold="... above +5")))
    assert reg.content_hash(spec).startswith("sha256:") and len(reg.content_hash(spec)) == 23


def test_status_registered_changed_unregistered():
    r, done = reg.register([_entry(verdict="not-run")], {}, "abc", "2026-11-26")
    assert done == ["registered p/x"] and r["p/x"]["before_result"] and r["p/x"]["verdict"] is None
    assert reg.status(_entry(verdict="not-run"), r)["status"] == "registered"
    # parts and readings first recorded when the claim is judged: no change
    assert reg.status(_entry(), r)["status"] == "registered"
    st = reg.status(_entry(threshold="reproduced if the 95% interval lies above +5"), r)
    assert (st["status"], st["changed_fields"]) == ("registered", [])  # no parts were registered yet
    r, _ = reg.register([_entry()], r, "def", "2026-11-27")  # parts filled in, the verdict recorded
    assert r["p/x"]["commit"] == "abc" and r["p/x"]["verdict"] == {"verdict": "reproduced", "commit": "def",
                                                                   "date": "2026-11-27"}
    st = reg.status(_entry(threshold="reproduced if the 95% interval lies above +5", verdict="inconclusive"), r)
    assert (st["status"], st["changed_fields"]) == ("changed", ["parts"])
    assert st["registered_verdict"]["verdict"] == "reproduced"
    assert reg.status(_entry(seeds=(0, 1, 2)), r)["changed_fields"] == ["runs"]
    assert reg.status(_entry(cid="p/y"), r)["status"] == "unregistered"


def test_a_changed_rule_needs_a_reason_and_keeps_the_registered_verdict():
    r, _ = reg.register([_entry()], {}, "abc", "2026-11-26")
    changed = _entry(rule="greater than 5", verdict="inconclusive")
    with pytest.raises(ValueError, match=r"re-register with --why REASON: p/x \(rule\)"):
        reg.register([changed], r, "def", "2026-11-27")
    r2, done = reg.register([changed], r, "def", "2026-11-27", why="a reason")
    assert done == ["re-registered p/x (rule): a reason"]
    (h,) = r2["p/x"]["history"]
    assert (h["rule"], h["verdict"], h["changed"], h["why"], h["registered"]) == (
        "greater than 0", "reproduced", "def 2026-11-27", "a reason", "abc")
    assert reg.status(changed, r2)["status"] == "registered"
    with pytest.raises(ValueError, match="not in the claims read: p/zz"):
        reg.register([changed], r2, "x", "d", ids=["p/zz"])


def test_history_reads_an_earlier_rule_live_from_a_sensitivity_reading():
    record = {"rule": "C.3.2", "reading": "paper", "verdict": "reproduced", "verdict_source": "computed"}
    live = reg.resolve(record, _entry())
    assert (live["verdict"], live["estimate"], live["ci95"]) == ("inconclusive", 3.0, [-1.0, 7.0])
    assert reg.resolve(record | {"reading": "absent"}, _entry())["verdict"] == "reproduced"  # as recorded


def test_bad_registry_file_is_one_line(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="not valid JSON"):
        reg.load(bad)
    bad.write_text('{"p/x": {"commit": "a"}}')
    with pytest.raises(ValueError, match="expected"):
        reg.load(bad)
    assert reg.load(tmp_path / "absent.json") == {}


def test_cli_registers_into_the_named_file(tmp_path):
    claims = tmp_path / "claims.json"
    claims.write_text(json.dumps({"claims": [_entry()]}))
    out = tmp_path / "registry.json"
    run = [sys.executable, "-m", "fedbench.cli", "claims", "register", "--claims", str(claims), "--registry", str(out)]
    proc = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "registered p/x", proc.stderr
    body = json.loads(out.read_text())
    assert body["p/x"]["hash"] == reg.content_hash(reg.rule_spec(_entry())) and body["p/x"]["before_result"] is False
    claims.write_text(json.dumps({"claims": [_entry(rule="greater than 5")]}))
    proc = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "re-register with --why REASON: p/x (rule)" in proc.stderr
    assert json.loads(out.read_text()) == body  # nothing half-written


def test_committed_registry_covers_the_committed_report():
    """Every claim of reports/claims.json is registered with its current rule, and the rules changed after a
    result (issue 21, item 1) keep their earlier verdicts."""
    claims = [c for c in json.loads((ROOT / "reports/claims.json").read_text())["claims"] if not c["id"].endswith("/*")]
    registered = reg.load()
    assert {c["id"]: reg.status(c, registered)["status"] for c in claims} == {c["id"]: "registered" for c in claims}
    earlier = {k: [h.get("verdict") for h in v["history"]] for k, v in registered.items() if v["history"]}
    assert earlier["fedprox/synthetic-1-1/stragglers-90/accuracy-gain"] == ["inconclusive"]
    assert earlier["fedlaavg/example-1/fedlaavg-converges"] == ["not-reproduced"]
    assert earlier["scaffold/quadratics/unaffected-by-heterogeneity"] == ["not-reproduced", None]
    assert earlier["scaffold/quadratics/local-steps-help"] == ["reproduced"]
    assert earlier["fedprox/synthetic-iid/robust-to-stragglers"] == ["not-reproduced"]

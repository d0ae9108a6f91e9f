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


# a rule's words with the decision decision_words reads (fedbench.claims.verdict.Rule.text's), and other words for it
RULE = "greater than 0; reproduced if the 95% interval lies above 0, not-reproduced if it lies below 0"
OTHER_WORDS = "greater than 0, in other words; reproduced if the 95% interval lies above 0, not-reproduced if it lies below 0"


def _entry(rule=RULE, threshold="reproduced if the 95% interval lies above 0", verdict="reproduced",
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
    assert spec == {"rule": RULE, "parts": [["a", "reproduced if the 95% interval lies above 0"]],
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
        RULE, "reproduced", "def 2026-11-27", "a reason", "abc")
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
    # the headline: inconclusive under its first rule, reproduced under the 5-point threshold that issue 32 removed
    assert earlier["fedprox/synthetic-1-1/stragglers-90/accuracy-gain"] == ["inconclusive", "reproduced"]
    assert earlier["fedlaavg/example-1/fedlaavg-converges"] == ["not-reproduced"]
    # issue 51: re-registered with its project-chosen 25% band counted without (reproduced under the band)
    assert earlier["scaffold/quadratics/unaffected-by-heterogeneity"] == ["not-reproduced", None, "reproduced"]
    # "4x": reproduced, then not-reproduced on its size; issue 32 splits direction-only from it
    assert earlier["scaffold/quadratics/local-steps-help"] == ["reproduced", "not-reproduced"]
    assert earlier["fedprox/synthetic-iid/robust-to-stragglers"] == ["not-reproduced", "not-reproduced"]  # issue 51


def _not_run_entry(seeds=(0, 1, 2, 3, 4), scale=None, cid="p/x"):
    return _entry(verdict="not-run", seeds=seeds, cid=cid) | {
        "rounds_run": None, "scale": scale or {"study": "s", "budget": "paper", "runs": [{"rounds": 200, "runs": 5}]}}


def test_a_not_run_claims_hash_covers_the_seeds_and_runs_it_declares():
    spec = reg.rule_spec(_not_run_entry())
    assert spec["runs"] == {"scale": {"study": "s", "budget": "paper", "runs": [{"rounds": 200, "runs": 5}]},
                            "seeds": {"training": [0, 1, 2, 3, 4], "data": [0]}, "rounds_run": None, "rounds_paper": 200}
    r, _ = reg.register([_not_run_entry()], {}, "abc", "2026-11-26")
    three = _not_run_entry(seeds=(0, 1, 2))
    assert reg.content_hash(reg.rule_spec(three)) != r["p/x"]["hash"]
    assert (reg.status(three, r)["status"], reg.status(three, r)["changed_fields"]) == ("changed", ["runs"])
    fewer_rounds = _not_run_entry(scale={"study": "s", "budget": "paper", "runs": [{"rounds": 100, "runs": 5}]})
    assert reg.status(fewer_rounds, r)["changed_fields"] == ["runs"]
    # when it first runs, its scale is stated (no change), but the seeds it declared must be the ones run
    assert reg.status(_entry(), r)["status"] == "registered"
    assert reg.status(_entry(seeds=(0, 1, 2)), r)["changed_fields"] == ["runs"]
    # a registration that declared no seeds: stating them before any run is a change (re-register with --why)
    old, _ = reg.register([_not_run_entry(seeds=())], {}, "abc", "2026-11-26")
    assert reg.status(_not_run_entry(), old)["changed_fields"] == ["runs"]
    assert reg.status(_entry(), old)["status"] == "registered"  # nothing declared, nothing to hold it to


def test_paper_study_not_run_entries_declare_their_seeds_and_runs(monkeypatch):
    import dataclasses

    from fedbench.studies import mime_emnist
    from fedbench.studies.real_data import not_run_entry

    (e,) = not_run_entry("mime_emnist")
    assert e["seeds"]["training"] == [0, 1, 2, 3, 4] and e["rounds_run"] is None
    assert e["scale"]["runs"] == [dataclasses.asdict(s) for s in mime_emnist.DECLARATION.scales] and len(e["scale"]["runs"]) == 3
    r, _ = reg.register([e], {}, "abc", "2026-11-26")
    monkeypatch.setitem(mime_emnist.BUDGETS, "paper", dataclasses.replace(mime_emnist.BUDGETS["paper"], seeds=(0, 1, 2)))
    (three,) = not_run_entry("mime_emnist")
    assert reg.status(three, r)["changed_fields"] == ["runs"]


def _frozen_registry(seeds=(0, 1, 2, 3, 4)):
    r, _ = reg.register([_entry(seeds=seeds)], {}, "abc", "2026-11-26")
    return reg.freeze([_entry(seeds=seeds)], r, "def", "2026-11-27")


def test_freezing_names_fresh_seeds_that_no_run_has_used():
    r, done = _frozen_registry()
    frozen = r["p/x"]["frozen"]
    assert frozen == {"hash": reg.frozen_hash(_entry()), "commit": "def", "date": "2026-11-27",
                      "seeds": [1000, 1001, 1002, 1003, 1004]}
    assert done == ["froze p/x (confirm seeds 1000-1004)"]
    # a run (or a tuning seed in a scale) that used 1001, and an earlier frozen block: never reused
    used = _entry(cid="p/y", seeds=(0, 1001)) | {"scale": {"tuning_seeds": [1003]}}
    r2, _ = reg.register([used], r, "abc", "2026-11-26")
    assert reg.used_seeds([used], r2) >= {0, 1001, 1003, 1000, 1002, 1004}
    again, _ = reg.freeze([used], r2, "ghi", "2026-11-28")
    assert again["p/y"]["frozen"]["seeds"] == [1005, 1006, 1007, 1008, 1009]
    assert not set(again["p/y"]["frozen"]["seeds"]) & reg.used_seeds([_entry(), used], r2)
    assert reg.fresh_seeds({1000, 1002}, 3) == [1001, 1003, 1004]


def test_a_frozen_rule_refuses_a_changed_hash_and_confirms_on_its_seeds():
    r, _ = _frozen_registry()
    rerun = _entry(seeds=(1000, 1001, 1002, 1003, 1004), verdict="inconclusive")  # same rule, fresh seeds
    confirmed = reg.confirm(rerun, r, "jkl", "2026-11-29", frozen_in="f00d")
    assert confirmed["p/x"]["confirmatory"] == {
        "verdict": "inconclusive", "commit": "jkl", "date": "2026-11-29", "hash": r["p/x"]["frozen"]["hash"],
        "seeds": [1000, 1001, 1002, 1003, 1004], "p_claim": None, "frozen_in": "f00d",  # no p: nothing decided
        "registration": "shown: frozen in f00d, on HEAD's history and a clean tree when the run began (its result "
                        "lands in a later commit)"}
    assert confirmed["p/x"]["verdict"]["verdict"] == "reproduced"  # the exploratory verdict stays beside it
    st = reg.status(_entry(), confirmed)
    assert st["confirmation"] == "confirmed" and st["confirmatory"]["verdict"] == "inconclusive"
    changed = _entry(seeds=(1000, 1001, 1002, 1003, 1004), threshold="reproduced if the 95% interval lies above +5")
    with pytest.raises(ValueError, match=r"^p/x: rule changed since it was frozen on def \(sha256:\w+ -> sha256:\w+\); "
                                         r"its confirmation is void: freeze it again and rerun on new seeds$"):
        reg.confirm(changed, r, "jkl", "2026-11-29")
    with pytest.raises(ValueError, match=r"confirmed on seeds \[0, 1, 2, 3, 4\], frozen with \[1000,"):
        reg.confirm(_entry(), r, "jkl", "2026-11-29")  # the exploratory seeds are no confirmation
    with pytest.raises(ValueError, match="p/z: not frozen"):
        reg.check_frozen(_entry(cid="p/z"), r)


def test_a_study_that_draws_its_data_freezes_fresh_data_seeds_and_confirms_only_on_them():
    """Issue 51, item 2: where the claim's study draws its own data (``fresh_data``), the block records one fresh
    data seed per training seed, none a training seed of the block or any used seed; the confirmation must have run
    on exactly those draws and records them; a claim of a fixed dataset freezes training seeds only."""
    entries = [_entry(cid="p/x"), _entry(cid="p/y")]
    r, _ = reg.register(entries, {}, "abc", "2026-11-26")
    frozen, done = reg.freeze(entries, r, "def", "2026-11-27", fresh_data=lambda e: e["id"] == "p/x")
    assert frozen["p/x"]["frozen"]["seeds"] == [1000, 1001, 1002, 1003, 1004]
    assert frozen["p/x"]["frozen"]["data_seeds"] == [1005, 1006, 1007, 1008, 1009]
    assert "data_seeds" not in frozen["p/y"]["frozen"]
    assert done == ["froze p/x (confirm seeds 1000-1004, fresh data seeds 1005-1009)",
                    "froze p/y (confirm seeds 1000-1004)"]
    assert reg.history_seeds({"results": [], "registry": [("def", frozen)]}) == set(range(1000, 1010))
    assert reg.used_seeds([], frozen) >= set(range(1000, 1010))  # a block's data seeds are never drawn again
    moved = {"p/x": frozen["p/x"] | {"frozen": None, "earlier_blocks": [{"frozen": frozen["p/x"]["frozen"]}]}}
    assert reg.used_seeds([], moved) >= set(range(1000, 1010))  # nor an earlier block's, once frozen again
    block = (1000, 1001, 1002, 1003, 1004)
    with pytest.raises(ValueError, match=r"^p/x: confirmed on data seeds \[0\], frozen with fresh data seeds "
                                         r"\[1005, 1006, 1007, 1008, 1009\]: rerun on the frozen data seeds$"):
        reg.confirm(_entry(cid="p/x", seeds=block), frozen, "jkl", "2026-11-29", frozen_in="f00d")
    rerun = _entry(cid="p/x", seeds=block)
    rerun["seeds"]["data"] = [1005, 1006, 1007, 1008, 1009]
    confirmed = reg.confirm(rerun, frozen, "jkl", "2026-11-29", frozen_in="f00d")
    assert confirmed["p/x"]["confirmatory"]["data_seeds"] == [1005, 1006, 1007, 1008, 1009]
    fixed = reg.confirm(_entry(cid="p/y", seeds=block), frozen, "jkl", "2026-11-29", frozen_in="f00d")
    assert "data_seeds" not in fixed["p/y"]["confirmatory"]


def test_a_later_rule_change_voids_the_confirmation():
    r, _ = _frozen_registry()
    r = reg.confirm(_entry(seeds=(1000, 1001, 1002, 1003, 1004)), r, "jkl", "2026-11-29", frozen_in="f00d")
    changed = _entry(threshold="reproduced if the 95% interval lies above +5")
    assert reg.status(changed, r)["confirmation"] == "void (the rule changed since it was frozen)"
    assert reg.status(changed, r)["confirmatory"] is None
    r2, _ = reg.register([changed], r, "mno", "2026-11-30", why="a sharper rule")
    assert "frozen" not in r2["p/x"] and "confirmatory" not in r2["p/x"]
    assert r2["p/x"]["history"][-1]["confirmatory"]["verdict"] == "reproduced"  # kept, as history
    assert reg.status(changed, r2)["confirmation"] == "none (not frozen)"
    with pytest.raises(ValueError, match="register these rules before freezing them"):
        reg.freeze([changed], r, "pqr", "2026-12-01")  # changed but not re-registered


def test_disclosure_rows_name_both_verdicts_and_the_commit():
    r = {"p/x": {"hash": "h2", "verdict": {"verdict": "not-reproduced", "commit": "c3", "date": "2026-11-26"},
                 "history": [{"rule": "r0", "changed": "c1 2026-11-22", "why": "w0", "verdict": "inconclusive",
                              "verdict_source": "s0"},
                             {"rule": "r1", "changed": "c2 2026-11-23", "why": "w1", "verdict": None},
                             {"rule": "r2", "changed": "c3 2026-11-24", "why": "w2", "verdict": "reproduced",
                              "verdict_source": "s2", "verdict_after": "reproduced", "verdict_after_source": "s3"}]}}
    rows = reg.disclosures(r)
    assert [(x["commit"], x["date"], x["verdict_before"], x["verdict_after"], x["moved"]) for x in rows] == [
        ("c1", "2026-11-22", "inconclusive", "reproduced", True),  # the next record with a verdict
        ("c3", "2026-11-24", "reproduced", "reproduced", False)]  # its own verdict_after; r1 had no verdict
    assert rows[0]["verdict_after_source"] == "s2" and rows[0]["rule_before"] == "r0"


def test_the_committed_registry_discloses_every_rule_changed_after_a_result():
    # issue 32: 21 rules had changed after a result when it was filed; 7 had no history until then (git log -p
    # reports/claims.json: their rules changed in fa8e885, between the reports of 593a6ba and d86b4fd). Every
    # claim whose history records a verdict under an earlier rule is disclosed, and none of those 21 is lost.
    registry = reg.load()
    rows = reg.disclosures(registry)
    changed_after = {cid for cid, r in registry.items() if any(h.get("verdict") is not None for h in r.get("history") or [])}
    assert {x["id"] for x in rows if not x.get("rewording")} == changed_after and len(changed_after) >= 21
    found = {x["id"]: (x["verdict_before"], x["verdict_after"]) for x in rows if x["commit"] == "fa8e885"
             and x["verdict_before_source"].endswith("593a6ba (2026-11-22)")}
    assert found == {"fedprox/synthetic-1-1/partial-work": ("inconclusive", "inconclusive"),
                     "fedprox/synthetic/heterogeneity-hurts-fedavg": ("reproduced", "reproduced"),
                     "fedprox/synthetic/dissimilarity-tracks-loss": ("reproduced", "reproduced"),
                     "fedlaavg/example-1/fedavg-bias": ("reproduced", "reproduced"),
                     "delta-fl/gaussian-triangle/longest-side-midpoint": ("reproduced", "reproduced"),
                     "fedlaavg/synthetic/diurnal-gain": ("inconclusive", "not-reproduced"),
                     "mime/synthetic-1-1/momentum-helps": ("not-reproduced", "not-reproduced")}


def test_a_rule_naming_its_own_seeds_keeps_its_frozen_hash_on_fresh_seeds():
    """mime_synthetic's rule says "per seed (0-4)": rerun on the frozen block it says "per seed (1000-1004)", the same
    rule; any other change of the text, or seeds named inside a longer number, still changes the frozen hash."""
    def said(seeds, text="per seed ({}), effect above 0"):
        shown = reg.seeds_text(list(seeds))
        return _entry(rule=text.format(shown), threshold=f"reproduced over seeds {shown} if above 0", seeds=seeds)

    fresh = (1000, 1001, 1002, 1003, 1004)
    assert reg.frozen_hash(said(range(5))) == reg.frozen_hash(said(fresh))
    assert reg.frozen_hash(said(range(5))) != reg.frozen_hash(said(fresh, "per seed ({}), effect above 1"))
    assert reg.without_seeds("seeds 0, 1, 2, 3, 4; 0-40; 10-4; 0, 1, 2, 3, 4, 5; above 0", [0, 1, 2, 3, 4]) == (
        "seeds {seeds}; 0-40; 10-4; 0, 1, 2, 3, 4, 5; above 0")
    assert reg.without_seeds("above 0", [0]) == "above 0"  # one seed: its number is no mark of a seed


def test_rewording_rekeys_a_rule_whose_words_alone_changed_and_keeps_its_confirmation():
    r, _ = _frozen_registry()
    r = reg.confirm(_entry(seeds=(1000, 1001, 1002, 1003, 1004)), r, "jkl", "2026-11-29", frozen_in="f00d")
    reworded = _entry(rule=OTHER_WORDS)  # parts, readings, runs: all as registered
    st = reg.status(reworded, r)
    assert (st["status"], st["changed_fields"], st["confirmation"]) == (
        "changed", ["rule"], "void (the rule changed since it was frozen)")
    with pytest.raises(ValueError, match="needs its reason"):
        reg.reword([reworded], r, "stu", "2026-11-30", why="")
    r2, done = reg.reword([reworded], r, "stu", "2026-11-30", why="generated from its data")
    assert done == ["reworded p/x (confirmation kept)"]
    new = r2["p/x"]
    assert (new["commit"], new["date"], new["verdict"], new["history"]) == (
        r["p/x"]["commit"], r["p/x"]["date"], r["p/x"]["verdict"], r["p/x"]["history"])  # the registration stands
    assert new["spec"] == {**r["p/x"]["spec"], "rule": reworded["rule"]}  # what was registered, in the new words
    assert new["hash"] == reg.content_hash(new["spec"])
    assert new["frozen"] == {**r["p/x"]["frozen"], "hash": reg.frozen_hash(reworded)}
    assert new["confirmatory"] == {**r["p/x"]["confirmatory"], "hash": reg.frozen_hash(reworded)}
    assert new["rewordings"] == [{"rule": RULE, "hash": r["p/x"]["hash"], "changed": "stu 2026-11-30",
                                  "why": "generated from its data", "decision": "the same decision (decision_words)",
                                  "frozen_hash": r["p/x"]["frozen"]["hash"],
                                  "confirmatory_hash": r["p/x"]["confirmatory"]["hash"]}]
    st = reg.status(reworded, r2)
    assert (st["status"], st["confirmation"], st["confirmatory"]["verdict"]) == ("registered", "confirmed", "reproduced")
    assert st["rewordings"] == [{"changed": "stu 2026-11-30", "why": "generated from its data",
                                 "decision": "the same decision (decision_words)"}]
    assert reg.reword([reworded], r2, "vwx", "2026-12-01", why="again") == (r2, [])  # nothing left to reword
    assert reg.disclosures(r2) == reg.disclosures(r)  # a rewording is no rule change after a result


def test_rewording_refuses_more_than_words_and_a_confirmation_of_another_rule():
    r, _ = _frozen_registry()
    sharper = _entry(rule=OTHER_WORDS, threshold="reproduced if the 95% interval lies above +5")
    with pytest.raises(ValueError, match=r"more than the words changed \(re-register with --why REASON\): p/x "
                                         r"\(rule, parts\)"):
        reg.reword([sharper], r, "stu", "2026-11-30", why="w")
    stale = {k: dict(v) for k, v in r.items()}
    stale["p/x"]["frozen"] = {**stale["p/x"]["frozen"], "hash": "sha256:0000000000000000"}  # frozen on another rule
    with pytest.raises(ValueError, match="p/x: its frozen block .* is not of the rule in its registered words"):
        reg.reword([_entry(rule=OTHER_WORDS)], stale, "stu", "2026-11-30", why="w")


def test_cli_rewords_into_the_named_file(tmp_path):
    r, _ = _frozen_registry()
    path = tmp_path / "registry.json"
    reg.dump(r, path)
    claims = tmp_path / "claims.json"
    claims.write_text(json.dumps({"claims": [_entry(rule=OTHER_WORDS)]}))
    args = [sys.executable, "-m", "fedbench.cli", "claims", "register", "--claims", str(claims), "--registry", str(path)]
    refused = subprocess.run(args + ["--reworded"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert refused.returncode == 1 and refused.stderr.strip() == "fedbench claims register: a rewording needs its reason (--why)"
    done = subprocess.run(args + ["--reworded", "--why", "generated"], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reworded p/x"  # frozen, not yet confirmed: the frozen block moves with it
    assert reg.load(path)["p/x"]["frozen"]["hash"] == reg.frozen_hash(_entry(rule=OTHER_WORDS))


def test_rewording_keeps_what_was_registered_open():
    """A rule registered before any run leaves its parts and readings open (filled at the first judgement): after
    rewording they are still open, so a run at another size (a fixture's fewer parts) is the registered rule in the
    new words exactly when it was in the old."""
    r, _ = reg.register([_entry(verdict="not-run")], {}, "abc", "2026-11-26")
    other = _entry(threshold="reproduced if the 95% interval lies above +5")  # parts the registration left open
    assert reg.status(other, r)["status"] == "registered"
    r2, done = reg.reword([_entry(rule=OTHER_WORDS)], r, "stu", "2026-11-30", why="generated")
    assert done == ["reworded p/x"] and r2["p/x"]["spec"] == {**r["p/x"]["spec"], "rule": OTHER_WORDS}
    assert reg.status(other | {"rule": OTHER_WORDS}, r2)["status"] == "registered"
    assert reg.status(other, r2)["status"] == "changed"  # the old words are no longer the registered ones


def test_rewording_refuses_words_that_state_another_decision():
    """A rule registered before its parts were judged holds its decision only in its words: another threshold or
    another combination in the new words is a rule change (register --why), never a rewording."""
    from fedbench.claims.verdict import Rule, rule_text

    sign, three = Rule("greater", 0.0, "points"), Rule("greater", 3.0, "points")
    words = rule_text("per seed, A - B", [("each level", sign)], "every")
    r, _ = reg.register([_entry(rule=words, verdict="not-run")], {}, "abc", "2026-11-26")
    assert reg.decision_words(words) == [sign.text(), reg.decision_words(words)[1]] and "every part is" in words
    for other in (rule_text("per seed, A - B", [("each level", three)], "every"),
                  rule_text("per seed, A - B", [("each level", sign)], "often")):
        with pytest.raises(ValueError, match=r"more than the words changed .*: p/x \(its decision: "):
            reg.reword([_entry(rule=other, verdict="not-run")], r, "stu", "2026-11-30", why="w")
    same = rule_text("per seed, A minus B, in points", [("each level", sign)], "every", "Registered first")
    assert reg.reword([_entry(rule=same, verdict="not-run")], r, "stu", "2026-11-30", why="w")[1] == ["reworded p/x"]


def test_a_rule_changed_after_rewording_keeps_its_earlier_words_in_its_history():
    r, _ = reg.register([_entry()], {}, "abc", "2026-11-26")
    r, _ = reg.reword([_entry(rule=OTHER_WORDS)], r, "stu", "2026-11-30", why="generated")
    sharper = _entry(rule="greater than 5", threshold="reproduced if the 95% interval lies above +5")
    r2, _ = reg.register([sharper], r, "vwx", "2026-12-01", why="a sharper rule")
    (h,) = r2["p/x"]["history"]
    assert h["rule"] == OTHER_WORDS and h["rewordings"][0]["rule"] == RULE
    assert "rewordings" not in r2["p/x"]


def test_a_rewording_is_accepted_only_where_decision_words_shows_the_same_decision():
    """Issue 51, item 7: decision_words reads the same decision on both sides, or the change of words is a rule change
    (disclosed); reword refuses words it cannot read a decision in."""
    assert reg.rewording_decision(RULE, OTHER_WORDS) == "the same decision (decision_words)"
    assert reg.rewording_decision("greater than 0", OTHER_WORDS) == (
        "a rule change: decision_words reads 0 decision(s) in the earlier words and 1 in the later ones; the earlier "
        "words state none it can read")
    sharper = OTHER_WORDS.replace("above 0, not-reproduced if it lies below 0", "above +5, not-reproduced if it lies "
                                                                                  "below +5")
    assert reg.rewording_decision(RULE, sharper).endswith("1 in the later ones, not the same")
    r, _ = reg.register([_entry(rule="greater than 0")], {}, "abc", "2026-11-26")
    with pytest.raises(ValueError, match=r"p/x \(its decision: reproduced if the 95% interval lies above 0, "):
        reg.reword([_entry(rule=OTHER_WORDS)], r, "stu", "2026-11-30", why="words")  # none read before: refused


def test_the_committed_rewordings_that_change_the_decision_are_disclosed_as_rule_changes():
    """The 77 rewordings of the committed registry: decision_words shows the same decision in 5; the other 72 are
    rule changes, disclosed (local-steps-help's bands and gamma-and-period-trends' 'generally' among them)."""
    registry = reg.load()
    marks = {(cid, r["changed"]): r["decision"] for cid, v in registry.items()
             for r in [*(x for h in v.get("history") or [] for x in h.get("rewordings") or []), *v.get("rewordings", [])]}
    assert len(marks) == 77 and sum(m == reg.SAME_DECISION for m in marks.values()) == 5
    for cid, v in registry.items():  # the current rule's rewordings (a rule re-registered since keeps its own in history)
        words = [r["rule"] for r in v.get("rewordings") or []] + [v["spec"]["rule"]]
        for i, r in enumerate(v.get("rewordings") or []):
            assert r["decision"] == reg.rewording_decision(words[i], words[i + 1]), cid
    rows = {(x["id"], x["commit"]) for x in reg.disclosures(registry) if x.get("rewording")}
    assert len(rows) == 72
    assert ("scaffold/quadratics/local-steps-help", "0f91f4bbdb56") in rows
    assert ("fedlaavg/cifar10/gamma-and-period-trends", "0f91f4bbdb56") in rows
    assert ("scaffold/quadratics/local-steps-help", "afd4d58d795a") not in rows  # its second rewording: the same

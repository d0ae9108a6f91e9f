"""Confirmatory runs (fedbench.studies.confirm): the frozen blocks are disjoint from every used seed and every seed
the history recorded a result on, a deterministic study is marked rather than rerun, and ``fedbench claims confirm``
on a shortened seeded study freezes and stops (the block to be committed), runs only from a clean tree whose history
holds the block, records the confirmatory verdict with that commit, refuses a rerun whose rule differs from the
frozen one, and refuses a claim whose rule changed since freezing (its confirmation void). Git itself is stood in
for (:func:`gate`); tests/claims/test_git_registration.py reads the real history."""

import dataclasses
import json

import pytest

from fedbench.claims import registry as reg
from fedbench.claims.entry import new_entry
from fedbench.studies import confirm
from fedbench.studies import fedlaavg_diurnal as diurnal
from fedbench.study.contract import drive
from tests.studies import spy_simulate


@pytest.fixture(autouse=True)
def gate(monkeypatch):
    """The git the command reads, stood in for: HEAD abc123def456, a clean tree, every frozen block committed in
    f00d (its own commit), no seed in the history; a test changes what it needs."""
    state = {"clean": True, "committed": True, "history": set()}
    monkeypatch.setattr(confirm, "git_commit", lambda: "abc123def456")
    monkeypatch.setattr(confirm, "tree_clean", lambda: state["clean"])

    def frozen_commit(cid, frozen):
        if not state["committed"]:
            raise ValueError(f"{cid}: its frozen block (seeds {reg.seeds_text(frozen['seeds'])}) is in no commit on "
                             "HEAD's history: commit the registry (git commit fedbench/claims/registry.json), then confirm")
        return "f00d" * 10

    monkeypatch.setattr(confirm, "frozen_commit", frozen_commit)
    monkeypatch.setattr(confirm, "seeds_in_history", lambda: set(state["history"]))
    return state


def _entry(cid, study, seeds=(0, 1, 2, 3, 4), verdict="reproduced"):
    e = new_entry(id=cid, paper="p", where="w", claim_text="c", published={"value": None, "unit": "u", "scope": "",
                                                                             "statement": ""},
                  rule="greater than 0", scale={"rounds": 20, "tuning_seeds": [100, 101]}, deviations=[], figure=None,
                  fidelity="stand-in", rounds_run=20, rounds_paper=200, training_seeds=list(seeds), data_seeds=[0])
    return e | {"verdict": verdict, "study": study,
                "parts": [{"part": "a", "rule": "reproduced if the 95% interval lies above 0", "verdict": verdict}]}


def test_each_study_gets_its_own_block_of_never_used_seeds_and_a_deterministic_one_none():
    entries = [_entry("a/1", "mime_synthetic"), _entry("a/2", "mime_synthetic"),
               _entry("b/1", "fedlaavg_diurnal", seeds=(0, 1, 2)), _entry("c/1", "delta_fl_triangle", seeds=(0,)),
               _entry("d/1", "main job", seeds=(0, 1000))]  # an exploratory run that happened to use 1000
    r, _ = reg.register(entries, {}, "abc", "2026-11-26")
    groups = confirm.choose(entries, [], [], ["mime_synthetic", "fedlaavg_diurnal", "delta_fl_triangle"])
    assert list(groups) == ["mime_synthetic", "fedlaavg_diurnal", "delta_fl_triangle"]  # the order named; d/1 not
    r2, done = confirm.freeze_all(groups, entries, r, "def", "2026-11-27")
    a, b = r2["a/1"]["frozen"]["seeds"], r2["b/1"]["frozen"]["seeds"]
    assert a == r2["a/2"]["frozen"]["seeds"] == [1001, 1002, 1003, 1004, 1005]  # 1000 was used: skipped
    assert b == [1006, 1007, 1008]  # as many as the study's exploratory seeds, after the block frozen before it
    used = reg.used_seeds(entries, r)  # every seed a run, a tuning seed or an earlier block used
    assert used == {0, 1, 2, 3, 4, 100, 101, 1000} and not (set(a) | set(b)) & used
    assert "frozen" not in r2["c/1"] and r2["c/1"]["deterministic"]["hash"] == reg.frozen_hash(entries[3])
    assert reg.status(entries[3], r2)["confirmation"] == reg.DETERMINISTIC == "deterministic: no seeds to confirm"
    assert done[-1] == "c/1: deterministic: no seeds to confirm (study delta_fl_triangle has no seed randomness)"
    again, nothing = confirm.freeze_all(groups, entries, r2, "ghi", "2026-11-28")
    assert again == r2 and nothing == []  # frozen blocks and marks are kept


def test_a_seed_any_commit_recorded_a_result_on_is_never_fresh(gate):
    """Issue 51, item 1: fresh_seeds skipped only the seeds the current registry lists; a block a reverted commit ran
    stays used (the history's seeds, fedbench.claims.registry.history_seeds)."""
    entries = [_entry("a/1", "mime_synthetic")]
    r, _ = reg.register(entries, {}, "abc", "2026-11-26")
    gate["history"] = {1000, 1001, 1002, 1003, 1004, 1007}
    r2, done = confirm.freeze_all(confirm.choose(entries, [], [], ["mime_synthetic"]), entries, r, "d", "2026-11-27")
    assert r2["a/1"]["frozen"]["seeds"] == [1005, 1006, 1008, 1009, 1010]
    assert done == ["froze a/1 (confirm seeds 1005, 1006, 1008, 1009, 1010)"]


def test_a_confirmation_git_does_not_show_is_not_counted_and_frozen_again_on_a_fresh_block():
    """Issue 51, item 1: a confirmation whose freeze and result git does not show in that order is marked not shown:
    status gives no confirmatory verdict (the tally counts none), and confirm freezes it anew, the earlier block and
    its verdict kept under earlier_blocks."""
    e = _entry("a/1", "mime_synthetic")
    r, _ = reg.register([e], {}, "abc", "2026-11-26")
    r, _ = reg.freeze([e], r, "def", "2026-11-27", 5)
    ran = e | {"seeds": {"training": [1000, 1001, 1002, 1003, 1004], "data": [0]}}
    shown = reg.confirm(ran, r, "ghi", "2026-11-28", frozen_in="f00d" * 10)
    assert reg.status(e, shown)["confirmation"] == "confirmed" and reg.status(e, shown)["confirmatory"]["p_claim"] is None
    assert shown["a/1"]["confirmatory"]["registration"].startswith("shown: frozen in f00df00df00d")
    same = reg.confirm(ran, r, "ghi", "2026-11-28")  # no commit of its block recorded
    st = reg.status(e, same)
    assert st["confirmatory"] is None and st["unshown_confirmatory"]["verdict"] == "reproduced"
    assert st["confirmation"] == ("confirmed on seeds 1000-1004, not counted: pre-registration not shown: no commit of "
                                  "its frozen block recorded")
    assert not confirm.settled(e, same) and confirm.unshown(e, same)
    again, done = confirm.freeze_all({"mime_synthetic": [e]}, [e], same, "jkl", "2026-11-29")
    assert again["a/1"]["frozen"]["seeds"] == [1005, 1006, 1007, 1008, 1009] and "confirmatory" not in again["a/1"]
    (earlier,) = again["a/1"]["earlier_blocks"]
    assert earlier["frozen"]["seeds"] == [1000, 1001, 1002, 1003, 1004] and earlier["confirmatory"]["verdict"] == "reproduced"
    assert done == ["froze a/1 (confirm seeds 1005-1009) again: its confirmation on 1000-1004 is not shown "
                    "pre-registered"]


def test_choosing_an_unknown_study_or_id_is_one_line():
    entries = [_entry("a/1", "mime_synthetic")]
    with pytest.raises(ValueError, match=r"^--study nope: no judged claim in the claims read; allowed: mime_synthetic$"):
        confirm.choose(entries, ["nope"], [], [])
    with pytest.raises(ValueError, match=r"^claim ids not judged in the claims read: a/9$"):
        confirm.choose(entries, [], ["a/9"], [])


def test_a_real_data_claim_of_a_paper_study_is_confirmed_by_that_study_named_either_way():
    """A "real data" entry of a paper-scale claim study (its scale names the study that ran it) is grouped under that
    study, whose own run confirms it; --study picks it by either name; the MNIST-5k claims stay the train group's."""
    mime = _entry("mime/fashion-mnist/ordering", "real data") | {"scale": {"study": "mime_fashion"}}
    mnist = _entry("fedprox/mnist5k/stragglers-hurt-fedavg", "real data")
    for chosen in (["mime_fashion"], ["real data"]):
        groups = confirm.choose([mime, mnist], chosen, [], [])
        assert groups["mime_fashion"] == [mime] and confirm.runnable("mime_fashion")
    assert confirm.choose([mime, mnist], ["mime_fashion"], [], []) == {"mime_fashion": [mime]}
    assert confirm.choose([mime, mnist], ["real data"], [], [])["real data"] == [mnist]


def test_a_claim_unfrozen_beside_frozen_ones_is_refused_with_the_study_then_confirmed_alone_on_its_own_block():
    """A claim whose rule was registered again after its study's others were frozen (their confirmation stands):
    named with the study, it is refused in one line that says how to confirm it alone; named by id, it is frozen on a
    fresh block of its own, and the others keep theirs."""
    entries = [_entry("a/1", "mime_synthetic"), _entry("a/2", "mime_synthetic")]
    r, _ = reg.register(entries, {}, "abc", "2026-11-26")
    r, _ = reg.freeze(entries, r, "def", "2026-11-27", 5, ["a/1"])
    both = confirm.choose(entries, ["mime_synthetic"], [], [])
    assert confirm.refusals(both, r) == [
        "study mime_synthetic: its claims are frozen with different seed blocks ([(1000, 1001, 1002, 1003, 1004)]); "
        "confirm the others by id (frozen on a block of their own: fedbench claims confirm a/2), or freeze them all "
        "together: fedbench claims freeze a/1 a/2"]
    alone = confirm.choose(entries, [], ["a/2"], [])
    assert alone == {"mime_synthetic": [entries[1]]} and confirm.refusals(alone, r) == []
    r2, done = confirm.freeze_all(alone, entries, r, "ghi", "2026-11-28")
    assert r2["a/2"]["frozen"]["seeds"] == [1005, 1006, 1007, 1008, 1009] and r2["a/1"] == r["a/1"]
    assert done == ["froze a/2 (confirm seeds 1005-1009)"]
    # each confirmed on its own block: the study has nothing left to run, so naming it is no longer refused
    # (fedbench claims confirm with no argument names every default study)
    a1 = entries[0] | {"seeds": {"training": [1000, 1001, 1002, 1003, 1004], "data": [0]}}
    r3 = reg.confirm(a1, r2, "jkl", "2026-11-29", frozen_in="f00d")
    assert confirm.refusals(both, r3) != []  # a/2 not confirmed yet: still refused
    a2 = entries[1] | {"seeds": {"training": [1005, 1006, 1007, 1008, 1009], "data": [0]}}
    r4 = reg.confirm(a2, r3, "jkl", "2026-11-29", frozen_in="f00d")
    assert confirm.refusals(both, r4) == [] and all(confirm.settled(e, r4) for e in entries)
    assert confirm.blocks_text(entries, r4) == "1000-1004 and 1005-1009"


def test_a_claim_whose_rule_changed_since_freezing_is_refused_its_confirmation_void():
    e = _entry("a/1", "mime_synthetic")
    r, _ = reg.register([e], {}, "abc", "2026-11-26")
    r, _ = confirm.freeze_all({"mime_synthetic": [e]}, [e], r, "def", "2026-11-27")
    assert confirm.refusals({"mime_synthetic": [e]}, r) == []
    changed = e | {"parts": [{"part": "a", "rule": "reproduced if the 95% interval lies above +5", "verdict": "reproduced"}]}
    assert confirm.refusals({"mime_synthetic": [changed]}, r) == [
        "a/1: rule changed since registration (fedbench claims register --why REASON), then confirm it"]
    assert reg.status(changed, r)["confirmation"] == "void (the rule changed since it was frozen)"
    assert confirm.refusals({"mime_synthetic": [_entry("a/2", "mime_synthetic")]}, r) == [
        "a/2: rule not registered (fedbench claims register), then confirm it"]
    # registered again but frozen under the old rule (a registry edited by hand): the frozen check refuses it
    r[e["id"]] |= {"hash": reg.content_hash(reg.rule_spec(changed)), "spec": reg.rule_spec(changed)}
    (line,) = confirm.refusals({"mime_synthetic": [changed]}, r)
    assert line.startswith("a/1: rule changed since it was frozen on def (") and line.endswith(
        "its confirmation is void: freeze it again and rerun on new seeds")


@pytest.fixture
def short_diurnal(tmp_path, monkeypatch):
    """FedLaAvg's diurnal study at 8 rounds on 2 seeds, judged once (the exploratory claims.json) and registered."""
    monkeypatch.setattr(diurnal, "ROUNDS", 8)
    spy_simulate(monkeypatch)
    (entry,) = drive(diurnal, tmp_path / "explore", seeds=(0, 1), workers=1)
    claims = tmp_path / "claims.json"
    claims.write_text(json.dumps({"claims": [entry | {"study": "fedlaavg_diurnal"}]}))
    registry = tmp_path / "registry.json"
    reg.dump(reg.register([entry], {}, "abc", "2026-11-26")[0], registry)
    args = ["--study", "fedlaavg_diurnal", "--claims", str(claims), "--registry", str(registry),
            "--root", str(tmp_path / "confirm"), "--workers", "1"]
    return entry, registry, args


def test_confirm_freezes_and_stops_then_runs_from_a_clean_tree_on_the_committed_block(short_diurnal, tmp_path, capsys,
                                                                                      gate):
    entry, registry, args = short_diurnal
    assert confirm.main(args + ["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "fedlaavg_diurnal: would run for 1 claim on seeds 1000-1001" in out and "commit the registry" in out
    assert "frozen" not in reg.load(registry)[entry["id"]]  # a dry run writes nothing
    assert confirm.main(args) == 0  # freezes, writes the registry, runs nothing
    out = capsys.readouterr().out
    # the study draws its own data (StudyDeclaration.fresh_data): the block draws fresh data seeds beside its seeds
    assert ("froze fedlaavg/synthetic/diurnal-gain (confirm seeds 1000-1001, fresh data seeds 1002-1003)" in out
            and "confirmatory run" not in out)
    assert reg.load(registry)[entry["id"]]["frozen"]["data_seeds"] == [1002, 1003]
    assert "new blocks frozen; nothing run. Commit the registry" in out
    assert "confirmatory" not in reg.load(registry)[entry["id"]]
    gate["clean"] = False
    assert confirm.main(args) == 1  # a dirty tree: refused, nothing run
    assert "the tree has uncommitted changes (git status)" in capsys.readouterr().err
    gate["clean"], gate["committed"] = True, False
    assert confirm.main(args) == 1  # the block not committed: refused
    assert "is in no commit on HEAD's history: commit the registry" in capsys.readouterr().err
    assert "confirmatory" not in reg.load(registry)[entry["id"]]
    gate["committed"] = True
    assert confirm.main(args) == 0
    out = capsys.readouterr().out
    assert ("fedlaavg_diurnal: confirmatory run on seeds 1000-1001, fresh data seeds 1002-1003 (frozen in "
            "f00df00df00d)") in out
    r = reg.load(registry)[entry["id"]]
    assert r["confirmatory"]["frozen_in"] == "f00d" * 10 and r["confirmatory"]["commit"] == "abc123def456"
    assert r["confirmatory"]["registration"] == ("shown: frozen in f00df00df00d, on HEAD's history and a clean tree "
                                                 "when the run began (its result lands in a later commit)")
    got = r["confirmatory"]
    assert r["frozen"]["seeds"] == got["seeds"] == [1000, 1001] and got["hash"] == r["frozen"]["hash"]
    assert got["data_seeds"] == [1002, 1003]
    assert got["where"] == str(tmp_path / "confirm" / "fedlaavg_diurnal" / "pipeline") and got["seconds"] > 0
    rerun = json.loads((tmp_path / "confirm" / "fedlaavg_diurnal" / "pipeline" / "claims.json").read_text())["claims"][0]
    assert rerun["seeds"]["training"] == [1000, 1001]  # the study ran on exactly the frozen seeds
    assert rerun["seeds"]["data"] == [1002, 1003]  # each on its own fresh draw of the data
    records = [json.loads(line) for line in (tmp_path / "confirm" / "fedlaavg_diurnal" / "pipeline" /
                                             "simulations.jsonl").read_text().splitlines()]
    assert {(r["name"].split("/")[1], r["params"]["data_seed"]) for r in records} == {("seed=1000", 1002),
                                                                                      ("seed=1001", 1003)}
    assert (got["verdict"], got["estimate"], got["ci95"]) == (rerun["verdict"], rerun["effect"]["estimate"],
                                                              rerun["effect"]["ci95"])
    assert r["verdict"]["verdict"] == entry["verdict"]  # the exploratory verdict stays beside it
    assert f"{rerun['verdict']:>15}  {entry['id']}  (exploratory: {entry['verdict']})" in out
    assert reg.status(entry, reg.load(registry))["confirmation"] == "confirmed"
    assert confirm.main(args) == 0 and reg.load(registry)[entry["id"]] == r  # confirmed: not run again
    assert "fedlaavg_diurnal: already confirmed on its frozen seeds 1000-1001" in capsys.readouterr().out
    assert confirm.main(args + ["--dry-run"]) == 0
    assert "fedlaavg_diurnal: already confirmed on its frozen seeds 1000-1001 (nothing to run)" in capsys.readouterr().out


def test_a_rerun_under_another_rule_than_the_frozen_one_records_nothing(short_diurnal, monkeypatch, capsys):
    entry, registry, args = short_diurnal
    assert confirm.main(args) == 0  # frozen (and committed: the gate)
    (claim,) = diurnal.DECLARATION.claims
    other = dataclasses.replace(diurnal.DECLARATION, claims=(dataclasses.replace(claim, rule=claim.rule + " (edited)"),))
    monkeypatch.setattr(diurnal, "DECLARATION", other)  # the study's code changed after freezing
    assert confirm.main(args) == 1
    err = capsys.readouterr().err
    assert f"fedbench claims confirm: {entry['id']}: rule changed since it was frozen on " in err
    assert "its confirmation is void" in err
    r = reg.load(registry)[entry["id"]]
    assert "frozen" in r and "confirmatory" not in r


def test_fresh_data_freezes_a_confirmed_claim_of_a_data_drawing_study_again_and_discloses_the_first(gate):
    """Issue 51, item 2 (`fedbench claims confirm --fresh-data`): a claim of a study that draws its own data, confirmed
    on a block that drew training seeds only, is frozen again on a block with fresh data seeds; its confirmation
    moves to earlier_blocks with why (disclosed, no longer counted); a claim whose study trains on one fixed dataset,
    and one whose block already drew data, are left as they are; without the flag nothing moves."""
    entries = [_entry("fedlaavg/synthetic/diurnal-gain", "fedlaavg_diurnal"), _entry("m/1", "mime_synthetic")]
    r, _ = reg.register(entries, {}, "abc", "2026-11-26")
    groups = confirm.choose(entries, [], [], ["fedlaavg_diurnal", "mime_synthetic"])
    r, _ = confirm.freeze_all(groups, entries, r, "def", "2026-11-27")
    diurnal_id = "fedlaavg/synthetic/diurnal-gain"
    assert r[diurnal_id]["frozen"]["data_seeds"] == [1005, 1006, 1007, 1008, 1009]
    assert "data_seeds" not in r["m/1"]["frozen"]  # mime_synthetic trains on one declared draw
    gate["history"] = set(r[diurnal_id]["frozen"].pop("data_seeds"))  # a block frozen before data was drawn (its
    # popped seeds stay used: the history of the stand-in holds them)
    r = reg.confirm(_entry(diurnal_id, "fedlaavg_diurnal", seeds=(1000, 1001, 1002, 1003, 1004)), r, "ghi",
                    "2026-11-28", frozen_in="f00d" * 10)
    first = r[diurnal_id]["confirmatory"]
    assert confirm.freeze_all(groups, entries, r, "jkl", "2026-11-29") == (r, [])  # without the flag: as it was
    again, done = confirm.freeze_all(groups, entries, r, "jkl", "2026-11-29", redraw=True)
    block = again[diurnal_id]["frozen"]
    assert (block["seeds"], block["data_seeds"]) == ([1015, 1016, 1017, 1018, 1019], [1020, 1021, 1022, 1023, 1024])
    assert "confirmatory" not in again[diurnal_id] and again["m/1"] == r["m/1"]
    assert again[diurnal_id]["earlier_blocks"] == [{
        "frozen": r[diurnal_id]["frozen"], "confirmatory": first,
        "why": "frozen again with fresh data seeds too (issue 51, item 2): the block drew fresh training seeds only"}]
    assert done == [f"froze {diurnal_id} (confirm seeds 1015-1019, fresh data seeds 1020-1024) again: its block "
                    "1000-1004 drew no fresh data"]
    assert confirm.freeze_all(groups, entries, again, "mno", "2026-11-30", redraw=True) == (again, [])


def test_a_headline_block_takes_the_seeds_its_power_rule_declares(gate):
    """Issue 51, item 3: a headline claim's block has the seeds whose 95% half-width, at the exploratory seeds' sd, is
    below half the published effect (or half the exploratory estimate), at least 6; recorded with the block."""
    import math

    from scipy import stats as sps

    head = _entry("h/1", "mime_synthetic") | {"fidelity": "paper-scale"}
    head |= {"published": head["published"] | {"value": 4.0},
             "effect": {"estimate": 3.0, "per_seed": [1.0, 3.0, 5.0, 7.0, 9.0]}}  # sd sqrt(10); target 0.5 x 4 = 2
    rule = confirm.power_rule([head, _entry("s/1", "mime_synthetic")])  # a stand-in counts toward no headline
    assert rule["seeds"] == 13 and set(rule["claims"]) == {"h/1"} and rule["claims"]["h/1"]["of"] == "published"
    assert sps.t.ppf(0.975, 12) * math.sqrt(10 / 13) < 2.0 <= sps.t.ppf(0.975, 11) * math.sqrt(10 / 12)
    no_number = head | {"published": head["published"] | {"value": None}}  # half the exploratory +3: 1.5
    assert confirm.power_rule([no_number])["claims"]["h/1"]["of"] == "exploratory"
    assert confirm.power_rule([no_number])["seeds"] > 13
    assert confirm.power_rule([_entry("s/1", "mime_synthetic")]) is None
    r, _ = reg.register([head], {}, "abc", "2026-11-26")
    r2, done = confirm.freeze_all({"mime_synthetic": [head]}, [head], r, "def", "2026-11-27")
    assert r2["h/1"]["frozen"]["seeds"] == list(range(1000, 1013)) and r2["h/1"]["frozen"]["power"] == rule
    assert done == ["froze h/1 (confirm seeds 1000-1012)"]


def test_claims_freeze_takes_the_power_rules_seeds_and_refuses_fewer(tmp_path, capsys):
    """`fedbench claims freeze` sizes its block by the power rule of the claims it freezes, as `claims confirm` does:
    a --count below it is refused in one line, and nothing is written."""
    head = _entry("h/1", "mime_synthetic") | {"fidelity": "paper-scale"}
    head |= {"published": head["published"] | {"value": 4.0},
             "effect": {"estimate": 3.0, "per_seed": [1.0, 3.0, 5.0, 7.0, 9.0]}}  # 13 seeds (the test above)
    claims, registry = tmp_path / "claims.json", tmp_path / "registry.json"
    claims.write_text(json.dumps({"claims": [head]}))
    assert reg.main(["freeze", "--claims", str(claims), "--registry", str(registry), "--count", "12"]) == 2
    assert capsys.readouterr().err.startswith("fedbench claims freeze: --count 12: below the power rule's 13 seeds")
    assert not registry.exists()


def test_a_confirmation_reruns_the_budget_its_exploratory_entries_ran_at_not_the_home_budget(monkeypatch, tmp_path):
    # fedproxvr_fashion's Table 1 ran at its "convex" budget; its home budget, "paper", adds Table 2 (122 h)
    members = [{"id": "a", "scale": {"budget": "convex"}}, {"id": "b", "scale": {"budget": "convex"}}]
    assert confirm.budget_of("fedproxvr_fashion", members) == "convex"
    assert confirm.budget_of("fedproxvr_fashion", [{"id": "a", "scale": None}, {"id": "b"}]) is None  # home budget
    with pytest.raises(ValueError, match="^fedproxvr_fashion: its entries ran at budgets convex, paper; a confirm"):
        confirm.budget_of("fedproxvr_fashion", members + [{"id": "c", "scale": {"budget": "paper"}}])
    assert confirm.folder("fedproxvr_fashion", tmp_path, None, "convex") == tmp_path / "fedproxvr_fashion" / "convex"
    assert confirm.folder("fedproxvr_fashion", tmp_path, None) == tmp_path / "fedproxvr_fashion" / "paper"
    seen = {}
    import fedbench.studies.stage as stage
    monkeypatch.setattr(stage, "run_study", lambda cfg, study, **kw: seen.update(kw, study=study) or [])
    a = confirm.parser().parse_args(["--root", str(tmp_path), "--workers", "1"])
    assert confirm._rerun("fedproxvr_fashion", [1131, 1132], None, a, None, "convex") == []
    assert (seen["study"], seen["budget"], seen["seeds"]) == ("fedproxvr_fashion", "convex", (1131, 1132))

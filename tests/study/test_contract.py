"""The study contract (fedbench.study.contract): a study stated as a declaration plus three hooks, run by the one
driver, which names the runs until no new one appears, writes their records in that order, judges each declared claim
with its declared rules and builds the entries."""

from __future__ import annotations

import dataclasses
import json
import types

import pytest

from fedbench.claims.verdict import Part, Rule
from fedbench.errors import ConfigError
from fedbench.study import contract
from fedbench.study.record import record as contract_record
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.study.runner import Outcome, Simulation, sim_config

RULE = Rule("greater", 0.0, "points")
PUBLISHED = {"value": None, "unit": "points", "scope": "toy", "statement": "B beats A"}


def _declaration(seeds=(0, 1, 2)) -> StudyDeclaration:
    return StudyDeclaration(
        name="toy", paper="a paper", dataset="none", seeds=seeds, budgets={"pipeline": 3, "paper": 5},
        arms=(Arm("A", "fedavg"), Arm("B", "fedavg")),
        claims=(Claim(id="toy/gain", where="s1", claim_text="B beats A", published=PUBLISHED,
                      effect="B - A", rules=(("", RULE),), reads=("A", "B")),
                Claim(id="toy/later", where="s2", claim_text="not run here", published=PUBLISHED,
                      effect="none", rules=(("", RULE),), reads=("A",))))


def _outcome(name: str, value: float) -> Outcome:
    return Outcome(name=name, history=[{"round": 0, "train/loss": value}], final={"train/loss": value},
                   diverged=False, param_digest="0" * 16, device="cpu", models=None, seconds=0.0)


def _module(calls: list, declaration: StudyDeclaration | None = None) -> types.ModuleType:
    """A study whose tuning run (key "tune") comes first and whose judged runs are named once it is in."""
    m = types.ModuleType("toy")
    m.DECLARATION = declaration or _declaration()

    def simulations(run):
        calls.append(sorted(map(str, run.outcomes)))
        named = {"tune": Simulation("tune", sim_config(rounds=run.rounds), dataset=None, model=None, algorithm=None)}
        if "tune" in run.outcomes:
            named |= {(a, s): Simulation(f"{a}/{s}", sim_config(rounds=run.rounds, seed=s), None, None, None)
                      for s in run.seeds for a in ("A", "B")}
        return named

    def measure(claim, run):
        if claim.id == "toy/later":
            return contract.Measurement(not_run=("not run: needs a GPU", "running it on one"))
        gain = [run.outcomes["B", s].final["train/loss"] - run.outcomes["A", s].final["train/loss"]
                for s in run.seeds]
        return contract.Measurement([Part("B - A", claim.rule_for())], lambda reading, budget: [gain],
                                    entry=dict(scale={"rounds": run.rounds}, figure=None, fidelity="stand-in",
                                               rounds_run=run.rounds, observed="gains " + ", ".join(f"{g:.2f}" for g in gain)))

    def figure(run, out):
        (out / "toy.txt").write_text(f"{len(run.outcomes)} runs\n")

    def record(sim, outcome):  # the optional fourth: a record with the study's own metrics
        return contract_record(sim.name, {"seed": sim.config.seed}, outcome, metrics={"study/loss": outcome.final[
            "train/loss"]})

    m.simulations, m.measure, m.figure, m.record = simulations, measure, figure, record
    return m


@pytest.fixture
def fake_runs(monkeypatch):
    """run_simulations replaced by one that gives A a loss of seed / 10 and B one 1.5 + seed / 5 above it."""
    ran: list[list[str]] = []

    def run_simulations(sims, workers=1):
        ran.append([s.name for s in sims])
        return [_outcome(s.name, (1.5 + s.config.seed / 5 if s.name.startswith("B") else 0.0) + s.config.seed / 10)
                for s in sims]

    monkeypatch.setattr("fedbench.study.runner.run_simulations", run_simulations)
    return ran


def test_the_driver_names_runs_until_none_is_new_and_judges_every_declared_claim(tmp_path, fake_runs):
    calls: list = []
    entries = contract.drive(_module(calls), tmp_path)
    assert calls == [[], ["tune"], ["('A', 0)", "('A', 1)", "('A', 2)", "('B', 0)", "('B', 1)", "('B', 2)", "tune"]]
    assert fake_runs == [["tune"], ["A/0", "B/0", "A/1", "B/1", "A/2", "B/2"]]  # one batch each, in named order
    gain, later = entries
    assert gain["id"] == "toy/gain" and gain["verdict"] == "reproduced"
    assert gain["effect"]["estimate"] == pytest.approx(1.7) and gain["rounds_run"] == 3
    assert gain["seeds"] == {"training": [0, 1, 2], "data": [0]} and gain["observed"] == "gains 1.50, 1.70, 1.90"
    assert later["verdict"] == "not-run" and later["observed"] == "not run: needs a GPU"
    records = [json.loads(line) for line in (tmp_path / "simulations.jsonl").read_text().splitlines()]
    assert [r["name"] for r in records] == ["tune", "A/0", "B/0", "A/1", "B/1", "A/2", "B/2"]
    assert [r["metrics"]["study/loss"] for r in records] == [0.0, 0.0, 1.5, 0.1, 1.8, 0.2, 2.1]
    assert (tmp_path / "toy.txt").read_text() == "7 runs\n"


def test_other_seeds_and_budgets_reach_the_hooks_and_an_unknown_budget_is_refused(tmp_path, fake_runs):
    entries = contract.drive(_module([]), tmp_path, budget="paper", seeds=(7, 9))
    assert entries[0]["rounds_run"] == 5 and entries[0]["seeds"]["training"] == [7, 9]
    assert fake_runs[1] == ["A/7", "B/7", "A/9", "B/9"]
    with pytest.raises(ConfigError, match="budget 'fixture'; allowed: pipeline, paper"):
        contract.drive(_module([]), tmp_path, budget="fixture")


def test_a_measurement_judges_parts_or_says_why_not():
    with pytest.raises(ValueError, match="not_run"):
        contract.Measurement()
    assert contract.Measurement(not_run=("why", "what")).parts == ()


def test_only_a_module_with_all_three_hooks_follows_the_contract():
    m = _module([])
    assert contract.follows_contract(m)
    del m.figure
    assert not contract.follows_contract(m)


def test_the_driver_combines_a_claims_parts_as_the_claim_declares(tmp_path, fake_runs):
    """A claim declared 'generally' (reproduced if every part is, not-reproduced if every part is, else
    inconclusive): one part reproduced and one not-reproduced make it inconclusive, not the 'every' not-reproduced;
    the note says why, and each sensitivity cell is combined the same way."""
    from fedbench.study.declaration import Claim

    d = _declaration()
    mixed = Claim(id="toy/gain", where="s1", claim_text="B beats A, and A beats B", published=PUBLISHED,
                  effect="B - A; A - B", rules=(("B - A", RULE), ("A - B", RULE)), combination="generally",
                  reads=("A", "B"))
    m = _module([], dataclasses.replace(d, claims=(mixed,)))

    def measure(claim, run):
        gain = [run.outcomes["B", s].final["train/loss"] - run.outcomes["A", s].final["train/loss"] for s in run.seeds]
        return contract.Measurement([Part("B - A", claim.rule_for("B - A")), Part("A - B", claim.rule_for("A - B"))],
                                    lambda reading, budget: [gain, [-g for g in gain]],
                                    entry=dict(figure=None, fidelity="stand-in", rounds_run=run.rounds))

    m.measure = measure
    (e,) = contract.drive(m, tmp_path)
    assert [p["verdict"] for p in e["parts"]] == ["reproduced", "not-reproduced"]
    assert e["verdict"] == "inconclusive"
    assert "'generally'" in e["verdict_text"] and "so inconclusive" in e["verdict_text"]
    assert {c["verdict"] for c in e["sensitivity"]} == {"inconclusive"}
    assert e["would_change"].endswith("inconclusive otherwise")


def test_a_run_on_a_confirmatory_block_replaces_a_budgets_judged_seeds_and_keeps_its_others():
    """A study whose budget is a dataclass with its own seeds (deltafl_iambic's Budget: judged and selection seeds):
    on a confirmatory block the budget's judged seeds are the block, its selection seeds stay, and the declaration's
    rule names the block (StudyDeclaration.on_seeds); without a block, the budget and declaration as declared."""
    from fedbench.studies import deltafl_iambic as iambic

    declared = iambic.DECLARATION.budgets["fixture"]
    run = contract.seeded(iambic.DECLARATION, "fixture", (1060, 1061))
    b, d = run.budget, run.declaration
    assert (b.seeds, b.selection_seeds, d.seeds, run.seeds) == ((1060, 1061), declared.selection_seeds, (1060, 1061),
                                                                (1060, 1061))
    assert b.rounds == declared.rounds == run.rounds
    assert d.claims[0].rule != iambic.DECLARATION.claims[0].rule and "1060" in d.claims[0].rule
    same = contract.seeded(iambic.DECLARATION, "fixture")
    assert same.budget is declared and same.declaration is iambic.DECLARATION


def test_the_drivers_default_budget_is_the_layouts():
    from fedbench.study.layout import PIPELINE_BUDGET

    assert contract.PIPELINE_BUDGET == PIPELINE_BUDGET

"""FedProxVR on MNIST (paper-scale study, stand-in for the slides' Table 2): end to end on fixture-sized
mnist_fedproxvr, the declaration and the paper budget's declared runs, the readings, repeatability and the not-run
entry."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.study.runner import Outcome, run_simulations
from fedbench.studies import fedproxvr_mnist as study
from fedbench.studies import fedproxvr_tables as tables
from fedbench.studies.real_data import not_run_entry
from fedbench.study.record import read_simulations

D = study.DECLARATION
METHODS = ("FedAvg", "SVRG", "SARAH")


@pytest.fixture(scope="module")
def real_root(real_root_of):
    return real_root_of(study.NAME)


def test_fixture_budget_judges_the_claim(study_run):
    """The run at the fixture budget (tests/studies/end_to_end.py)."""
    ran = study_run(study.NAME)
    (c,), out = ran.claims, ran.out
    b = study.BUDGETS["fixture"]
    assert c["verdict"] != "not-run" and c["fidelity"] == "smoke-check"  # 2 of the paper's 1,000 rounds
    assert len(c["effect"]["per_seed"]) == len(b.seeds) and c["rounds_run"] == b.rounds
    assert [p["part"] for p in c["parts"]] == ["SVRG - FedAvg", "SARAH - FedAvg"]
    for p, m in zip(c["parts"], ("SVRG", "SARAH")):  # the effect is the per-seed difference of the best accuracies
        assert p["per_seed"] == [pytest.approx(a - f, abs=2e-3) for a, f in
                                 zip(c["reproduced"][m], c["reproduced"]["FedAvg"])]
    assert c["figure"] == {"path": f"figures/{study.NAME}/{study.NAME}.png", "panel": "test accuracy"}
    records = read_simulations(out)
    assert len(records) == len(METHODS) * len(b.seeds)
    assert {r["params"]["algorithm"] for r in records} == {"FedAvg", "FedProxVR"}
    assert all(len(r["history"]["test/accuracy"]) == b.rounds + 1 for r in records)


def test_the_declaration_is_table_2_as_run():
    assert [a.name for a in D.arms] == list(D.claims[0].reads) == list(METHODS)
    assert [a.algorithm for a in D.arms] == ["fedavg", "fedproxvr", "fedproxvr"]
    assert [(a.settings["tau"], a.settings["mu"], a.settings["batch_size"]) for a in D.arms] == [
        (20, 0.0, 16), (20, 0.01, 16), (20, 0.01, 32)]  # Table 2's tau, mu, B
    assert {a.settings["lr"] for a in D.arms} == {0.01} and D.knobs == {}
    paper = study.BUDGETS["paper"]  # the paper budget runs the arms' tau (VR iterations, FedAvg's epochs)
    assert (paper.fedavg_epochs, paper.tau, paper.tau) == tuple(a.settings["tau"] for a in D.arms)
    assert D.seeds == D.seeds_at("paper") == (0, 1, 2, 3, 4) and D.seeds_at("fixture") == (0, 1)
    assert D.data_seeds == () and D.variants == ("mnist_fedproxvr",) and D.rounds("paper") == 1000
    assert [(e.split, e.every, e.final, e.clients_sample, e.samples_sample) for e in D.evaluation] == [
        ("train", 1, True, None, None), ("test", 1, True, None, None)]  # every round, every user (eval_every 1)
    c = D.claims[0]
    assert (c.fidelity, c.rounds_paper, c.published["value"]) == ("stand-in", 1000, 94.06)
    assert [s.local_steps for s in D.scales] == [None, 25 + 38, 13 + 38]  # ceil(390 / B) + 2 (tau - 1)
    assert [(s.runs, s.rounds, s.clients_per_round, s.local_epochs) for s in D.scales] == [
        (5, 1000, 10, 20), (5, 1000, 10, 1), (5, 1000, 10, 1)]


def test_paper_budget_declares_table_2_runs(real_root):
    b = study.BUDGETS["paper"]
    assert len(b.seeds) >= 3 and b.device == "auto" and b.rounds == 1000
    fedavg = study.simulation("FedAvg", 0, b, real_root)
    svrg = study.simulation("SVRG", 1, b, real_root)
    sarah = study.simulation("SARAH", 2, b, real_root)
    assert (fedavg.config.local_epochs, fedavg.config.local_steps, fedavg.config.batch_size) == (20, 0, 16)
    assert (svrg.config.local_steps, svrg.config.batch_size, sarah.config.batch_size) == (19, 16, 32)
    assert (svrg.algorithm.estimator, sarah.algorithm.estimator) == ("svrg", "sarah")
    assert svrg.algorithm.mu == sarah.algorithm.mu == 0.01 and svrg.algorithm.tau == 20
    assert fedavg.config.clients_per_round == 10 and fedavg.config.device == "auto"
    assert fedavg.dataset() is svrg.dataset()  # one cached copy shared by every run


def _outcome(acc, loss=None) -> Outcome:
    loss = loss or [1.0] * len(acc)
    return Outcome(name="x", history=[{"round": r, "train/loss": lo, "test/accuracy": a}
                                              for r, (lo, a) in enumerate(zip(loss, acc))], final={},
                   diverged=False, param_digest="", device="cpu", models=None, seconds=0.0)


def test_readings_of_a_run():
    o = _outcome([0.1, 0.5, 0.3, 0.2, 0.4, 0.35, 0.3])
    assert tables.accuracy(o, "best", 6) == pytest.approx(50.0)
    assert tables.accuracy(o, "final", 6) == pytest.approx(30.0)
    assert tables.accuracy(o, "tail", 6) == pytest.approx(100 * np.mean([0.3, 0.2, 0.4, 0.35, 0.3]))
    # a run whose loss turns non-finite scores 0 from there on: its best is the best before
    dead = _outcome([0.1, 0.6, 0.9], [1.0, 1.0, float("nan")])
    assert tables.accuracy(dead, "best", 2) == pytest.approx(60.0)


def test_same_seed_same_numbers(real_root):
    b = study.BUDGETS["fixture"]
    sims = [study.simulation("SARAH", 0, b, real_root)]
    first, second = run_simulations(sims, workers=1)[0], run_simulations(sims, workers=1)[0]
    assert first.param_digest == second.param_digest
    assert first.series("test/accuracy") == second.series("test/accuracy")


def test_not_run_entry_has_the_command_and_a_cost():
    entries = not_run_entry(study.NAME)
    assert [e["id"] for e in entries] == [c.id for c in D.claims]
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == f"fedbench paper run {study.NAME}"
        assert e["cost"]["seconds"] > 0 and e["cost"]["runs"] == 3 * len(D.seeds)
        assert e["fidelity"] == "stand-in" and e["scale"]["variants"] == ["mnist_fedproxvr"]


def test_a_table_is_each_vr_method_minus_fedavg_per_seed():
    """fedproxvr_tables.Table (what both FedProxVR table studies measure) on made-up runs of 2 rounds, keyed as the
    hooks name them: per seed, each VR method's accuracy minus FedAvg's, both read the same way."""
    from fedbench.study.contract import StudyRun

    c = D.claims[0]
    acc = {("FedAvg", 0): [0.1, 0.5, 0.3], ("FedAvg", 1): [0.2, 0.4, 0.4], ("SVRG", 0): [0.3, 0.6, 0.6],
           ("SVRG", 1): [0.1, 0.45, 0.2], ("SARAH", 0): [0.7, 0.2, 0.2], ("SARAH", 1): [0.3, 0.3, 0.35]}
    outcomes = {(c.id, m, s): _outcome(a) for (m, s), a in acc.items()}  # (claim id, method, seed)
    t = tables.Table(c, StudyRun(D, "fixture", study.BUDGETS["fixture"], outcomes=outcomes))
    assert [p.label for p in t.parts()] == ["SVRG - FedAvg", "SARAH - FedAvg"]
    assert {p.rule for p in t.parts()} == {c.rule_for()} == {tables.GAIN_RULE}
    assert t.gains("best", 1.0) == [[10.0, 5.0], [20.0, -5.0]]
    assert t.gains("final", 1.0) == [[30.0, -20.0], [-10.0, -5.0]]
    assert t.reproduced() == {"unit": "best test accuracy (%) within 2 rounds", "FedAvg": [50.0, 40.0],
                              "SVRG": [60.0, 45.0], "SARAH": [70.0, 35.0]}
    # the effects are the paired t intervals of the best gains (2 seeds: t = 12.706 on 1 degree of freedom)
    assert t.observed("2 seeds", "slides") == (
        "best test accuracy (mean of 2 seeds): FedAvg 45.00%, SVRG 52.50%, SARAH 52.50% (slides); VR - FedAvg: "
        "SVRG - FedAvg +7.50 [-24.3, +39.3] accuracy points; SARAH - FedAvg +7.50 [-151, +166] accuracy points")

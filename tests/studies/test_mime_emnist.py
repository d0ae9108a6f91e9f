"""Mime and MimeLite vs FedAvgM on FEMNIST (paper-scale study, stand-in for the Mime slides' Figure 3): end to end
on fixture-sized femnist_leaf, the paper budget's declared runs, the readings and the rule on made-up runs,
repeatability and the not-run entry."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedbench.algorithms.fedavg_momentum import FedAvgMomentum
from fedbench.algorithms.mime import Mime
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.contract import drive
from fedbench.study.runner import Outcome, run_simulations
from fedbench.studies import mime_emnist as study
from fedbench.studies.mime_emnist import DECLARATION
from fedbench.studies.mime_real import femnist_simulation
from fedbench.studies.real_data import not_run_entry
from tests.studies.real_fixtures import build_real


@pytest.fixture(scope="module")
def real_root(tmp_path_factory):
    return build_real(tmp_path_factory.mktemp("mime_emnist"), "femnist_leaf")


def test_paper_budget_declares_the_stated_setup(real_root):
    b = DECLARATION.budget("paper")
    assert b.seeds == DECLARATION.seeds == (0, 1, 2, 3, 4)
    assert len(b.seeds) >= 3 and b.device == "auto" and b.model == "leaf_femnist_cnn"
    sims = {a.name: femnist_simulation(DECLARATION, a.name, 0, b, real_root) for a in DECLARATION.arms}
    assert sims["Mime"].algorithm == Mime(lr=0.004, variant="mime", base="sgdm", momentum=0.9)
    assert sims["MimeLite"].algorithm == Mime(lr=0.004, variant="mimelite", base="sgdm", momentum=0.9)
    assert sims["FedAvgM"].algorithm == FedAvgMomentum(lr=0.004, beta=0.9, server_lr=1.0)
    cfg = sims["Mime"].config
    assert (cfg.rounds, cfg.clients_per_round, cfg.local_epochs, cfg.batch_size) == (500, 35, 1, 10)
    assert cfg.evaluations == (EvalSpec("test", metrics=("test/loss", "test/accuracy"), every=5),)
    assert [c.reads for c in DECLARATION.claims] == [("Mime", "MimeLite", "FedAvgM")]
    assert sims["Mime"].model.num_params == 6_603_710  # LEAF's reference CNN for 62 classes (real-data.md)


def _outcome(acc) -> Outcome:
    return Outcome(name="x", history=[{"round": r, "test/accuracy": a} for r, a in enumerate(acc)], final={},
                   diverged=False, param_digest="", device="cpu", models=None, seconds=0.0)


def test_readings_and_rule_on_made_up_runs(monkeypatch, tmp_path):
    o = _outcome([0.0, 0.2, 0.6, 0.5, 0.55, 0.58])
    assert (study.accuracy(o, "best", 5, every=1), study.accuracy(o, "final", 5, every=1)) == (
        pytest.approx(60.0), pytest.approx(58.0))
    assert study.accuracy(o, "tail", 5, every=1) == pytest.approx(100 * (0.2 + 0.6 + 0.5 + 0.55 + 0.58) / 5)
    # the protocol's cadence: rounds 0 and 5 of these (every 5, and the final model), read by round
    assert study.accuracy(o, "best", 5) == pytest.approx(58.0)
    sparse = Outcome(name="x", history=[{"round": 0, "test/accuracy": 0.1}, {"round": 5, "test/accuracy": 0.4},
                                        {"round": 7, "train/loss": float("nan")}], final={}, diverged=True,
                     param_digest="", device="cpu", models=None, seconds=0.0)
    np.testing.assert_allclose(study.curve(sparse, 12, every=5), [10.0, 40.0, 0.0, 0.0])  # diverged at 7: 0 from 10 on
    # Mime above FedAvgM on every seed, MimeLite below on every seed: Mime's part holds, MimeLite's does not
    best = {"Mime": (0.50, 0.61, 0.55), "MimeLite": (0.35, 0.30, 0.33), "FedAvgM": (0.40, 0.40, 0.40)}
    curves = {(m, s): [0.1, v] for m, vals in best.items() for s, v in enumerate(vals)}

    def fake_run(sims, workers):
        return [_outcome(curves[(s.knobs["method"], s.config.seed)]) for s in sims]

    monkeypatch.setattr("fedbench.study.runner.run_simulations", fake_run)  # StudyRuns.run calls it
    monkeypatch.setattr("fedbench.study.record.write_simulations", lambda out, records: None)
    monkeypatch.setattr("fedbench.study.record.sim_record", lambda sim, o, keys=(), metrics=None: {})
    monkeypatch.setitem(study.BUDGETS, "fixture", study.Budget(rounds=1, clients_per_round=2, seeds=(0, 1, 2),
                                                               device="cpu", model="mclr"))
    real_root = build_real(tmp_path, "femnist_leaf")
    (c,) = drive(study, tmp_path / "out", budget="fixture", workers=1, real_root=real_root)
    assert c["parts"][0]["per_seed"] == pytest.approx([10.0, 21.0, 15.0])
    assert c["parts"][1]["per_seed"] == pytest.approx([-5.0, -10.0, -7.0])
    assert [p["verdict"] for p in c["parts"]] == ["reproduced", "not-reproduced"]
    assert c["verdict"] == "not-reproduced" and c["reproduced"]["FedAvgM"] == [40.0, 40.0, 40.0]


def test_same_seed_same_numbers(real_root):
    sims = [femnist_simulation(DECLARATION, "Mime", 1, DECLARATION.budget("fixture"), real_root)]
    first, second = run_simulations(sims, workers=1)[0], run_simulations(sims, workers=1)[0]
    assert first.param_digest == second.param_digest
    assert first.series("test/accuracy") == second.series("test/accuracy")
    assert [row["round"] for row in first.history] == [0, 2]  # round 0 and the final model (every 5 rounds)
    assert all(math.isfinite(v) for v in first.at_rounds("test/accuracy").values())


def test_not_run_entry_has_the_command_and_a_cost():
    entries = not_run_entry(DECLARATION.name)
    assert [e["id"] for e in entries] == [c.id for c in DECLARATION.claims]
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == "fedbench paper run mime_emnist"
        assert e["cost"]["seconds"] > 0 and e["cost"]["runs"] == 3 * len(DECLARATION.seeds)
        assert e["fidelity"] == "stand-in" and e["scale"]["variants"] == ["femnist_leaf"]

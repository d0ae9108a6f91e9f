"""Simulation records: params from the algorithm, config and knobs; compact floats; the JSONL round trip; and
run_claim_study refusing a study that records nothing."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import numpy as np
import pytest

from fedbench.algorithms import FedAvg, FedLaAvg
from fedbench.availability import AvailabilityConfig
from fedbench.engine.simulation import SimulationConfig
from fedbench.studies import run_claim_study
from fedbench.studies.record import SIMULATIONS, compact, params, read_simulations, record, write_simulations


def test_params_take_algorithm_config_and_knobs():
    cfg = SimulationConfig(rounds=7, seed=3, device="cpu")
    p = params(cfg, FedAvg(lr=0.1), G=10.0)
    assert p["algorithm"] == "FedAvg" and p["lr"] == 0.1 and p["rounds"] == 7 and p["seed"] == 3 and p["G"] == 10.0
    assert "device" not in p and "keeps_partial_work" not in p and p["availability.model"] == "always"
    diurnal = SimulationConfig(availability=AvailabilityConfig(model="diurnal", period=8, beta=0.25, groups=(0, 1)))
    p = params(diurnal, FedLaAvg(lr=0.1))
    assert (p["availability.period"], p["availability.beta"], p["availability.groups"]) == (8, 0.25, (0, 1))
    with pytest.raises(ValueError, match="clash"):
        params(cfg, FedAvg(lr=0.1), seed=4)


def test_record_keeps_six_digits_and_writes_one_line_per_run(tmp_path):
    final = SimpleNamespace(scalars=lambda: {"train/loss": 0.123456789, "test/accuracy": float("nan")})
    result = SimpleNamespace(history=[{"train/loss": 1 / 3, "test/accuracy": 0.5}, {"train/loss": np.float32(0.25),
                                                                                   "test/accuracy": float("inf")}],
                             final=final, diverged=False, param_digest="abc", device="cpu")
    rec = record("fedavg/seed=0", {"lr": 0.1}, result, series={"model/w": np.array([3.0, 2.0])},
                 metrics={"study/rounds_to_target": None})
    assert rec["history"] == {"train/loss": [0.333333, 0.25], "test/accuracy": [0.5, None], "model/w": [3.0, 2.0]}
    assert rec["final"] == {"train/loss": 0.123457, "test/accuracy": None}
    assert rec["metrics"] == {"study/rounds_to_target": None}
    assert compact(123456789.0) == 123457000.0 and compact(-1.5e-9) == -1.5e-9
    write_simulations(tmp_path, [rec, rec | {"name": "fedavg/seed=1"}])
    assert len((tmp_path / SIMULATIONS).read_text().splitlines()) == 2
    assert read_simulations(tmp_path) == [rec, rec | {"name": "fedavg/seed=1"}]
    with pytest.raises(ValueError, match="repeat"):
        write_simulations(tmp_path, [rec, rec])


def test_a_study_that_records_nothing_fails_and_leaves_nothing(tmp_path, monkeypatch):
    fake = types.ModuleType("fedbench.studies.fake_study")
    fake.run = lambda out_dir: []
    monkeypatch.setitem(sys.modules, "fedbench.studies.fake_study", fake)
    with pytest.raises(RuntimeError, match=SIMULATIONS):
        run_claim_study("fake_study", tmp_path)
    assert list(tmp_path.iterdir()) == []

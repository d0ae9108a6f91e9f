"""FedProxVR synthetic study: the smoothness bound, the rule on made-up outcomes, and a shortened run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.data.synthetic import generate_synthetic
from fedbench.models import build_model
from fedbench.studies import fedproxvr_synthetic as study
from tests.studies import assert_every_run_recorded, assert_valid_entries, spy_simulate


def test_smoothness_bounds_every_sample_hessian():
    ds = generate_synthetic(0.0, 0.0, num_devices=5, seed=0, lognormal_mean=2.0, lognormal_sigma=0.5, min_samples=5)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    lip = study.smoothness(ds.train.x)
    gen = torch.Generator().manual_seed(0)
    largest = int(np.argmax((ds.train.x**2).sum(1)))  # the sample that sets L, and two others
    for i in (largest, 0, len(ds.train.y) - 1):
        x, y = torch.from_numpy(ds.train.x[i:i + 1]).double(), torch.from_numpy(ds.train.y[i:i + 1])
        theta = 0.3 * torch.randn(model.num_params, generator=gen, dtype=torch.float64)
        hess = torch.autograd.functional.hessian(lambda t, x=x, y=y: model.loss_fn(t, x, y), theta)
        assert torch.linalg.eigvalsh(hess).max() <= lip + 1e-9


def test_short_run_writes_claim_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "BUDGETS", {"pipeline": 2, "paper": 4})
    monkeypatch.setattr(study, "PAPER_ROUNDS", 4)
    monkeypatch.setattr(study, "NUM_USERS", 10)
    monkeypatch.setattr(study, "SEEDS", (0, 1))
    monkeypatch.setattr(study, "FEDAVG", {**study.FEDAVG, "local_epochs": 1})
    study._dataset.cache_clear()
    calls = spy_simulate(monkeypatch)
    (c,) = study.run(tmp_path, workers=1)
    study._dataset.cache_clear()
    assert_every_run_recorded(tmp_path, calls)
    assert_valid_entries([c])
    assert c["id"] == "fedproxvr/synthetic/matches-or-beats-fedavg"
    assert (c["fidelity"], c["rounds_run"], c["rounds_paper"]) == ("stand-in", 2, 4)
    assert [p["part"] for p in c["parts"]] == ["SVRG", "SARAH"]
    assert c["parts"][0]["per_seed"] == [pytest.approx(a - b, abs=0.011) for a, b in
                                         zip(c["reproduced"]["SVRG"], c["reproduced"]["FedAvg"])]
    assert study.COMMAND in c["deviations"][0]
    assert (tmp_path / "fedproxvr_synthetic.png").stat().st_size > 0


def test_paper_budget_runs_the_slides_rounds(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "BUDGETS", {"pipeline": 1, "paper": 3})
    monkeypatch.setattr(study, "PAPER_ROUNDS", 3)
    monkeypatch.setattr(study, "NUM_USERS", 10)
    monkeypatch.setattr(study, "SEEDS", (0,))
    monkeypatch.setattr(study, "FEDAVG", {**study.FEDAVG, "local_epochs": 1})
    study._dataset.cache_clear()
    (c,) = study.run(tmp_path, workers=1, budget="paper")
    study._dataset.cache_clear()
    assert (c["fidelity"], c["rounds_run"]) == ("stand-in", 3)  # the slides do not say which synthetic data

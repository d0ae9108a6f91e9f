"""FedProxVR synthetic study: the smoothness bound, the rule on made-up outcomes, and a shortened run."""

from __future__ import annotations

import json

import numpy as np
import torch

from fedbench.data.synthetic import generate_synthetic
from fedbench.models import build_model
from fedbench.studies import CLAIM_KEYS
from fedbench.studies import fedproxvr_synthetic as study
from tests.studies import assert_every_run_recorded, spy_simulate


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


def test_rule():
    still = {k: [True] for k in ("FedAvg", "SVRG", "SARAH")}
    settled = {k: [False] for k in ("FedAvg", "SVRG", "SARAH")}
    assert study.verdict({"FedAvg": 80.0, "SVRG": 79.5, "SARAH": 81.0}, still) == "reproduced"
    assert study.verdict({"FedAvg": 80.0, "SVRG": 70.0, "SARAH": 81.0}, still) == "inconclusive"
    assert study.verdict({"FedAvg": 80.0, "SVRG": 70.0, "SARAH": 81.0}, settled) == "not-reproduced"


def test_short_run_writes_claim_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 2)
    monkeypatch.setattr(study, "NUM_USERS", 10)
    monkeypatch.setattr(study, "FEDAVG", {**study.FEDAVG, "local_epochs": 1})
    calls = spy_simulate(monkeypatch, study)
    (c,) = study.run(tmp_path)
    assert_every_run_recorded(tmp_path, calls)
    assert tuple(c) == CLAIM_KEYS and c["id"] == "fedproxvr/synthetic/matches-or-beats-fedavg"
    json.dumps(c)
    assert c["verdict"] in ("reproduced", "not-reproduced", "inconclusive")
    assert np.isfinite(c["reproduced"]["value"]["SVRG"])
    assert (tmp_path / "fedproxvr_synthetic.png").stat().st_size > 0

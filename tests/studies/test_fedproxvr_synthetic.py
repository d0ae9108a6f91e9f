"""FedProxVR synthetic study: the smoothness bound, the rule on made-up outcomes, and a shortened run."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import torch

from fedbench.data.synthetic import generate_synthetic
from fedbench.models import build_model
from fedbench.studies import fedproxvr_synthetic as study
from tests.studies import spy_simulate


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


def _shrunk(monkeypatch, budgets, seeds):
    """The study with a few rounds, ``seeds``, 10 users and FedAvg at 1 local epoch (its declaration replaced)."""
    fedavg = study.DECLARATION.arm("FedAvg")
    arms = tuple(dataclasses.replace(a, settings={**a.settings, "local_epochs": 1}) if a is fedavg else a
                 for a in study.DECLARATION.arms)
    monkeypatch.setattr(study, "DECLARATION", dataclasses.replace(study.DECLARATION, budgets=budgets, seeds=seeds, arms=arms))
    monkeypatch.setattr(study, "NUM_USERS", 10)
    study._dataset.cache_clear()


def test_paper_budget_runs_the_slides_rounds(tmp_path, monkeypatch):
    _shrunk(monkeypatch, {"pipeline": 1, "paper": 3}, (0,))
    (c,) = study.run(tmp_path, workers=1, budget="paper")
    study._dataset.cache_clear()
    assert (c["fidelity"], c["rounds_run"]) == ("stand-in", 3)  # the slides do not say which synthetic data


def test_seeds_override_runs_other_seeds_and_says_so(tmp_path, monkeypatch):
    _shrunk(monkeypatch, {"pipeline": 1, "paper": 3}, (0, 1, 2, 3, 4))
    calls = spy_simulate(monkeypatch)
    (c,) = study.run(tmp_path, workers=1, seeds=(7, 9))
    study._dataset.cache_clear()
    assert c["seeds"]["training"] == [7, 9] and len(c["parts"][0]["per_seed"]) == 2
    assert sorted({json.loads(line)["name"].split("/")[1] for line in (tmp_path / "simulations.jsonl").read_text()
                   .splitlines()}) == ["seed=7", "seed=9"]
    assert {cfg.seed for cfg, _, _ in calls} == {7, 9}  # the runs themselves, not only their names


def test_declaration_is_what_the_pipeline_runs():
    assert study.DECLARATION.budgets == study.BUDGETS == {"pipeline": 40, "paper": 1000}
    assert study.DECLARATION.seeds == (0, 1, 2, 3, 4) and study.METHODS == ("FedAvg", "SVRG", "SARAH")
    (claim,) = study.DECLARATION.claims
    assert claim.reads == study.METHODS and "over the 41 evaluations" in claim.rule_at(evaluations=41)

"""FedProxVR synthetic study: the smoothness bound, the rule on made-up outcomes, and a shortened run."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np

import pytest
import torch

from fedbench.data.synthetic import generate_synthetic
from fedbench.models import build_model
from fedbench.studies import fedproxvr_synthetic as study
from fedbench.study.contract import drive
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
    c, *_ = drive(study, tmp_path, budget="paper", workers=1)
    study._dataset.cache_clear()
    assert (c["fidelity"], c["rounds_run"]) == ("stand-in", 3)  # the slides do not say which synthetic data


def test_seeds_override_runs_other_seeds_and_says_so(tmp_path, monkeypatch):
    _shrunk(monkeypatch, {"pipeline": 1, "paper": 3}, (0, 1, 2, 3, 4))
    calls = spy_simulate(monkeypatch)
    c, *_ = drive(study, tmp_path, seeds=(7, 9), workers=1)
    study._dataset.cache_clear()
    assert c["seeds"]["training"] == [7, 9] and len(c["parts"][0]["per_seed"]) == 2
    assert sorted({json.loads(line)["name"].split("/")[1] for line in (tmp_path / "simulations.jsonl").read_text()
                   .splitlines()}) == ["seed=7", "seed=9"]
    assert {cfg.seed for cfg, _, _ in calls} == {7, 9}  # the runs themselves, not only their names


def test_declaration_is_what_the_pipeline_runs():
    assert study.DECLARATION.budgets == study.BUDGETS == {"pipeline": 40, "paper": 1000}
    assert study.DECLARATION.seeds == (0, 1, 2, 3, 4) and study.METHODS == ("FedAvg", "SVRG", "SARAH")
    claim, mu, beta = study.DECLARATION.claims
    assert beta.reads == ("SVRG beta=4 tau=8", "SVRG beta=7 tau=27", "SVRG beta=10 tau=57") == study.BETA_ARMS
    assert [study.DECLARATION.arm(a).settings for a in beta.reads] == [
        study.VR | {"beta": b, "tau": t} for b, t in ((4.0, 8), (7.0, 27), (10.0, 57))]  # (5b^2 - 4b) // 8
    assert mu.reads == ("SVRG mu=0", "SVRG mu=0.001", "SVRG mu=0.01", "SVRG", "SVRG mu=1") == study.MU_ARMS
    assert all(study.DECLARATION.arm(a).settings == study.VR | {"mu": m} for a, m in zip(mu.reads, study.MU_SWEEP))
    assert claim.reads == study.METHODS and "over the 41 evaluations" in claim.rule_at(evaluations=41)


def test_spearman_ranks_ties_and_infinities_and_reads_no_order_as_undefined():
    """Hand-computed: a diverged run (inf) ranks last; tied values share their mean rank; all equal: undefined (NaN,
    left out of the statistics; issue 51: it was 0, which put [0, 0] intervals on seeds that ordered nothing)."""
    mus = [0.0, 0.001, 0.01, 0.1, 1.0]
    assert study.spearman(mus, [5.0, 4.0, 3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert study.spearman(mus, [float("inf"), 2.0, 3.0, 1.0, 0.5]) == pytest.approx(-0.9)  # 1 - 6*2/120
    assert study.spearman(mus, [1.0, 1.0, 2.0, 2.0, 3.0]) == pytest.approx(9 / 90 ** 0.5)  # ranks 1.5,1.5,3.5,3.5,5: 9 / sqrt(10 * 9)
    assert math.isnan(study.spearman(mus, [0.0] * 5))

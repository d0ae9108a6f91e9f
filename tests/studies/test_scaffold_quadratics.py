"""SCAFFOLD quadratics study: the model object against autograd, the problem's G and optimum, the rules of
both entries on made-up outcomes, and a shortened run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedbench.studies import CLAIM_KEYS
from fedbench.studies import scaffold_quadratics as study
from tests.studies import assert_every_run_recorded, spy_simulate


@pytest.mark.parametrize("g", [0.01, 1.0, 100.0])
def test_problem_has_dissimilarity_g_at_its_optimum(g):
    p = study.make_problem(1, g, 0.5)
    x = p.dataset.train.x.astype(np.float64)
    h, b = x[:, : study.DIM], x[:, study.DIM:]
    grads = h * (p.x_star - b)  # grad f_i(x*)
    np.testing.assert_allclose(grads.sum(0), 0.0, atol=1e-9 * max(g, 1))  # x* is the optimum of the mean
    assert np.sqrt((grads**2).sum(1).mean()) == pytest.approx(g, rel=1e-5)
    f0 = np.mean(0.5 * (h * b**2).sum(1))  # f(0)
    assert f0 - p.f_star == pytest.approx(p.gap0, rel=1e-9)


def test_heterogeneity_rule():
    gs = study.G_VALUES
    tail, floor, warm = {g: [1] for g in gs}, {g: [0.1] for g in gs}, {g: [5] for g in gs}

    def res(lo, hi):  # rounds per seed at the small G's and at the largest
        return {**{g: lo for g in gs[:-1]}, gs[-1]: hi}

    def verdict(sc, fa):
        return study.heterogeneity_claim({"scaffold": sc, "fedavg": fa}, tail, floor, warm)["verdict"]

    assert verdict(res([10], [14]), res([10], [None])) == "reproduced"
    assert verdict(res([10], [40]), res([10], [None])) == "not-reproduced"
    assert verdict(res([10], [20]), res([10], [None])) == "inconclusive"
    assert verdict(res([10], [10]), res([10], [12])) == "not-reproduced"  # FedAvg unaffected too
    assert verdict(res([10], [10]), res([None], [None])) == "inconclusive"  # FedAvg never measurable


def test_local_steps_rule():
    def verdict(r1, r2, r10):
        return study.local_steps_claim({1: r1, 2: r2, 10: r10})["verdict"]

    assert verdict([48], [24], [12]) == "reproduced"
    assert verdict([48], [47], [46]) == "inconclusive"  # helps, but far less than the slides say
    assert verdict([48], [50], [30]) == "not-reproduced"
    assert verdict([48], [24], [None]) == "inconclusive"


def test_short_run_writes_claims_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "SEEDS", (0,))
    monkeypatch.setattr(study, "G_VALUES", (0.01, 100.0))
    monkeypatch.setattr(study, "LR_GRID", (0.35 / study.L,))
    monkeypatch.setattr(study, "MAX_ROUNDS", 30)
    calls = spy_simulate(monkeypatch, study)
    claims = study.run(tmp_path)
    assert_every_run_recorded(tmp_path, calls)
    assert [c["id"] for c in claims] == ["scaffold/quadratics/unaffected-by-heterogeneity",
                                         "scaffold/quadratics/local-steps-help"]
    for c in claims:
        assert tuple(c) == CLAIM_KEYS
        json.dumps(c)
    assert (tmp_path / "scaffold_quadratics.png").stat().st_size > 0

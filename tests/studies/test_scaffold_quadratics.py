"""SCAFFOLD on the section 7.2 instance: the model against autograd, the instance's constants (delta = beta = 1,
dissimilarity G), the warm start, the speed and plateau measures, both rules on made-up curves, and a
shortened run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedbench.models.quadratics import scalar_quadratics
from fedbench.study import contract
from fedbench.studies import scaffold_quadratics as study


def test_model_gradients_match_autograd():
    from fedbench.engine.kernels import choose_kernel

    ds = study.instance(10.0)
    model = scalar_quadratics(study.X0)
    kernel = choose_kernel(model, "cpu")
    x = torch.from_numpy(ds.train.x)  # [2, 2]
    theta = torch.tensor([[0.7], [-1.3]])
    expected = torch.tensor([[2.0 * 0.7 + 10.0], [-10.0]])  # h theta + g per client
    w = torch.ones(2, 1)
    torch.testing.assert_close(kernel.grad(theta, *kernel.batch(x.unsqueeze(1), torch.zeros(2, 1, dtype=torch.long), w)),
                               expected)
    seg = kernel.segment_grads(theta, x, torch.zeros(2, dtype=torch.long), torch.arange(2), torch.ones(2, dtype=torch.long))
    torch.testing.assert_close(seg, expected)


@pytest.mark.parametrize("g", [1.0, 10.0, 100.0])
def test_instance_has_delta_beta_one_and_dissimilarity_g(g):
    x = study.instance(g).train.x.astype(np.float64)
    h, lin = x[:, 0], x[:, 1]
    assert h.mean() == study.MU == 1.0  # f = (1/2) x^2: beta = mu = 1
    assert np.abs(h - h.mean()).max() == 1.0  # delta = 1
    np.testing.assert_allclose(h * 0.0 + lin, [g, -g])  # client gradients at x* = 0: +-G
    loss = scalar_quadratics(study.X0).loss_fn(torch.tensor([0.5], dtype=torch.float64), torch.from_numpy(x), None)
    assert float(loss.mean()) == pytest.approx(0.5 * 0.5**2)  # the engine's loss is f - f*


def test_warm_start_control_variates():
    from fedbench.algorithms.scaffold import Scaffold

    warm = study.WarmStartScaffold(Scaffold(lr=0.1), 10.0)
    c_i = warm.init_clients(2, torch.zeros(1))
    torch.testing.assert_close(c_i, torch.tensor([[12.0], [-10.0]]))  # 2 mu x0 + G and -G at x0 = 1
    assert float(warm.init(torch.full((1,), 1.0), 2).c) == pytest.approx(1.0)  # their mean = grad f(x0)


def test_rounds_per_decade_and_plateau(monkeypatch):
    monkeypatch.setattr(study, "MAX_ROUNDS", 20)
    gap = np.array([10.0 ** (1 - t) for t in range(21)])  # one decade per round from 10
    assert study.rounds_per_decade(gap) == pytest.approx(1.0)
    slow = np.array([100.0 * 10 ** (-t / 2) for t in range(21)])  # 2 rounds per decade, peak at round 0
    assert study.rounds_per_decade(slow) == pytest.approx(2.0)
    bump = np.concatenate([[1.0, 1000.0], 1000.0 * 10.0 ** (-np.arange(1, 20) / 1.0)])  # peak at round 1
    assert study.rounds_per_decade(bump) == pytest.approx(1.0)
    stuck = np.array([1.0] + [0.5] * 20)
    assert study.rounds_per_decade(stuck) == math.inf and study.plateau(stuck) == 0.5
    assert study.rounds_per_decade(np.array([0.5, 0.0] + [0.0] * 19)) == 0.0  # lands on x* in one round


def _curves(rpd, plateau_of, sgd_rpd):
    """Made-up curves: SCAFFOLD (both starts) falling at rpd(G, K) rounds per decade, FedAvg flat at
    plateau_of(G, K) from round 1, SGD at sgd_rpd(lr) rounds per decade; every step size of the grid alike."""
    t = np.arange(study.MAX_ROUNDS + 1)
    out = {}
    for g in study.G_VALUES:
        for k in study.K_VALUES:
            for lr in set(study.LR_GRID) | set(study.COMMON_LRS):
                out[("scaffold", g, k, lr)] = 0.5 * 10.0 ** (-t / rpd(g, k, lr))
                out[("scaffold-warm", g, k, lr)] = out[("scaffold", g, k, lr)]
                out[("fedavg", g, k, lr)] = np.where(t == 0, 0.5, plateau_of(g, k))
    for lr in set(study.LR_GRID) | set(study.COMMON_LRS):
        out[("sgd", study.STEPS_G, 1, lr)] = 0.5 * 10.0 ** (-t / sgd_rpd(lr))
    return out


def judged(claim_id: str, curves: dict) -> dict:
    """Claim ``claim_id``'s entry from made-up ``curves``, judged as the driver judges it (fedbench.study.contract)."""
    claim = study.DECLARATION.claim(claim_id)
    run = contract.StudyRun(study.DECLARATION, "pipeline", study.MAX_ROUNDS)
    return contract.entry(run, claim, study.measured(claim, curves))


def heterogeneity_claim(curves: dict) -> dict:
    return judged("scaffold/quadratics/unaffected-by-heterogeneity", curves)


def local_steps_claim(curves: dict) -> dict:
    return judged("scaffold/quadratics/local-steps-help", curves)


def test_heterogeneity_rule():
    # SCAFFOLD 1% and 2% slower with G: "unaffected" within the 25% this project chose (no number in the paper),
    # judged beside; counted without a margin any change is one (deterministic): not-reproduced (issue 51, item 4)
    good = _curves(lambda g, k, lr: 10.0 + 0.1 * math.log10(g), lambda g, k: 1e-4 * g**2, lambda lr: 50.0)
    e = heterogeneity_claim(good)
    assert e["verdict"] == "not-reproduced"
    assert next(c for c in e["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == "reproduced"
    same = _curves(lambda g, k, lr: 10.0, lambda g, k: 1e-4 * g**2, lambda lr: 50.0)  # SCAFFOLD exactly unaffected
    assert heterogeneity_claim(same)["verdict"] == "inconclusive"  # no equivalence without a margin
    slowed = _curves(lambda g, k, lr: 10.0 * (1 + math.log10(g)), lambda g, k: 1e-4 * g**2, lambda lr: 50.0)
    assert heterogeneity_claim(slowed)["verdict"] == "not-reproduced"  # SCAFFOLD 2x, 3x slower with G
    flat = _curves(lambda g, k, lr: 10.0, lambda g, k: 1e-4, lambda lr: 50.0)
    e = heterogeneity_claim(flat)
    assert e["verdict"] == "inconclusive"  # FedAvg's plateau does not move: exactly 0 decades
    assert [p["verdict"] for p in e["parts"] if p["part"].startswith("FedAvg")] == ["inconclusive"] * 4
    assert e["fidelity"] == "stand-in"  # a reconstructed instance


def test_local_steps_rule():
    # SGD at 20 rounds per decade; K=2 twice, K=10 four times as fast at every step size
    good = _curves(lambda g, k, lr: 20.0 / {2: 2.0, 10: 4.0}[k], lambda g, k: 1e-4, lambda lr: 20.0)
    e = local_steps_claim(good)
    assert e["verdict"] == "reproduced" and e["reproduced"]["speedup_same_step"]["step 0.1"]["K=10"] == 4.0
    too_fast = _curves(lambda g, k, lr: 20.0 / {2: 2.0, 10: 8.0}[k], lambda g, k: 1e-4, lambda lr: 20.0)
    assert local_steps_claim(too_fast)["verdict"] == "direction-only"  # faster, but 8x is outside "only 4 times"


def test_short_run_is_judged_deterministically(study_run):
    """The run at test size (tests/studies/end_to_end.SMALL: G 1 and 100, two step sizes, 30 rounds)."""
    claims = study_run(study.DECLARATION.name).claims
    assert all(c["effect"]["test"].startswith("none (deterministic") for c in claims)

"""Delta-FL: exact numbers against a float64 re-derivation of Algorithm 2 (both weightings, quantile period 1
and 2), the theta = 1 reduction to FedAvg, the boundary client's fractional weight, same-seed repeatability."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fedbench.algorithms import DeltaFL, FedAvg, build_algorithm
from fedbench.engine.sampling import minibatch_order, plan_round
from fedbench.engine.simulation import SimulationConfig, simulate
from tests.algorithms.handmade import (
    Recorder,
    _client,
    as_numpy,
    assert_repeatable,
    assert_same_history,
    ce_grad,
    ce_loss,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)

LR = 0.5


def replicated_quantile(losses, n, p_num: int, p_den: int) -> float:
    """The authors' quantile (simplicial-fl server.py): repeat each loss n_i times, sort, element
    ceil(p N) - 1, or the first when p = 0; p = p_num / p_den kept exact."""
    v = np.sort(np.repeat(losses, n))
    if p_num == 0:
        return float(v[0])
    return float(v[-(-len(v) * p_num // p_den) - 1])


def capped_weights(losses, n, theta) -> np.ndarray:
    """Maximiser of sum pi_i F_i over pi_i <= alpha_i / theta, sum pi = 1, in units of n: fill the largest
    losses to their cap first."""
    out, remaining = np.zeros(len(losses)), float(np.sum(n))
    for i in sorted(range(len(losses)), key=lambda i: -losses[i]):
        out[i] = min(n[i] / theta, remaining)
        remaining -= out[i]
    return out


def reference_run(ds, cfg, theta0, conformity: tuple[int, int], weighting: str, period: int):
    """float64 Delta-FL, written from the paper (section 4, Algorithm 2) and the authors' server.py."""
    theta_num, theta_den = conformity
    theta_c = theta_num / theta_den
    sizes = ds.train.sizes
    w, eta, log = theta0, None, []
    for r in range(cfg.rounds):
        plan = plan_round(cfg.seed, r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                          cfg.local_epochs, cfg.straggler_epochs)
        n = sizes[plan.clients]
        losses = np.array([ce_loss(w, *_client(ds, int(c))) for c in plan.clients])
        fresh = r % period == 0
        if fresh:
            eta = replicated_quantile(losses, n, theta_den - theta_num, theta_den)
        if weighting == "filter":
            weights = np.where(losses >= eta, n, 0.0)
        elif fresh:
            weights = capped_weights(losses, n, theta_c)
        else:
            weights = np.where(losses > eta, n / theta_c, 0.0)
        weights = np.where(plan.straggler, 0.0, weights)
        models, kept = [], []
        for c, e, wt in zip(plan.clients, plan.epochs, weights):
            if wt <= 0:
                continue
            x, y = _client(ds, int(c))
            local = w.copy()
            for batch in minibatch_order(cfg.seed, r, int(c), len(y), int(e), cfg.batch_size):
                idx = batch[batch >= 0]
                local = local - LR * ce_grad(local, x[idx], y[idx])
            models.append(local)
            kept.append(wt)
        if models:  # a round where nobody is left is skipped
            log.append((plan.clients[weights > 0].tolist(), weights[weights > 0] / weights.sum()))
            w = (np.array(kept)[:, None] * np.array(models)).sum(0) / np.sum(kept)
    return w, log


@pytest.mark.parametrize("weighting", ["exact", "filter"])
@pytest.mark.parametrize("conformity", [(1, 2), (3, 10)], ids=["theta=0.5", "theta=0.3"])
@pytest.mark.parametrize("period", [1, 2])
def test_matches_float64_reference(weighting, conformity, period):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, clients_per_round=3)
    alg = DeltaFL(lr=LR, theta=conformity[0] / conformity[1], weighting=weighting, quantile_period=period)
    rec = Recorder(alg)
    result = simulate(cfg, ds, model, rec)
    expected, log = reference_run(ds, cfg, initial_theta(cfg, model), conformity, weighting, period)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert len(rec.rounds) == len(log)
    for seen, (clients, weights) in zip(rec.rounds, log):
        order = np.argsort(seen["clients"])
        assert seen["clients"][order].tolist() == clients
        np.testing.assert_allclose(seen["weights"][order], weights, rtol=1e-6)


def test_filtering_happens_and_the_two_weightings_differ():
    # Guard for the test above: on this problem some rounds drop clients, and exact != filter.
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, clients_per_round=3)
    _, log = reference_run(ds, cfg, initial_theta(cfg, model), (1, 2), "exact", 1)
    assert any(len(clients) < 3 for clients, _ in log)
    exact = simulate(cfg, ds, model, DeltaFL(lr=LR, theta=0.5, weighting="exact"))
    filt = simulate(cfg, ds, model, DeltaFL(lr=LR, theta=0.5, weighting="filter"))
    plain = simulate(cfg, ds, model, FedAvg(lr=LR))
    assert float((exact.theta - filt.theta).abs().max()) > 1e-3
    assert float((exact.theta - plain.theta).abs().max()) > 1e-3


def test_boundary_client_gets_the_fractional_remainder():
    ds, model = handmade_dataset(), handmade_model()  # n = 5, 3, 4 (total 12)
    cfg = handmade_config(rounds=1, clients_per_round=3)
    rec = Recorder(DeltaFL(lr=LR, theta=0.5))
    simulate(cfg, ds, model, rec)
    theta0 = initial_theta(cfg, model)
    losses = np.array([ce_loss(theta0, *_client(ds, k)) for k in range(3)])
    top, mid, _ = np.argsort(-losses)
    n = ds.train.sizes
    # caps 2 n_i = 10, 6, 8 (of 12): the largest loss gets its full cap, the next one the remainder 12 - cap.
    expected = {int(top): 2 * n[top] / 12, int(mid): (12 - 2 * n[top]) / 12}
    seen = dict(zip(rec.rounds[0]["clients"].tolist(), rec.rounds[0]["weights"]))
    assert seen.keys() == expected.keys()
    for c in expected:
        assert seen[c] == pytest.approx(expected[c], rel=1e-6)
    assert 0 < seen[int(mid)] < 2 * n[mid] / 12  # fractional: less than its cap


@pytest.mark.parametrize("weighting", ["exact", "filter"])
@pytest.mark.parametrize("stragglers", [0.0, 0.5])
def test_theta_one_is_fedavg_exactly(weighting, stragglers):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, clients_per_round=3, local_epochs=3, straggler_fraction=stragglers)
    fedavg = simulate(cfg, ds, model, FedAvg(lr=LR))
    delta = simulate(cfg, ds, model, DeltaFL(lr=LR, theta=1.0, weighting=weighting))
    assert torch.equal(fedavg.theta, delta.theta)
    assert_same_history(fedavg.history, delta.history)


def test_theta_one_is_fedavg_exactly_on_synthetic():
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.models import build_model

    ds = generate_synthetic(1, 1, num_devices=6, seed=5, lognormal_mean=3.0, lognormal_sigma=0.3, min_samples=20)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10, seed=1, device="cpu",
                           checkpoint_every=10_000)
    fedavg = simulate(cfg, ds, model, FedAvg(lr=0.01))
    for weighting in ("exact", "filter"):
        delta = simulate(cfg, ds, model, DeltaFL(lr=0.01, theta=1.0, weighting=weighting, quantile_period=2))
        assert torch.equal(fedavg.theta, delta.theta)


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, clients_per_round=3)
    assert_repeatable(lambda: build_algorithm("delta_fl", lr=LR, theta=0.5, weighting="exact"), cfg)


def test_eta_is_kept_between_updates():
    alg = DeltaFL(lr=LR, theta=0.5, quantile_period=3)
    state = alg.init(torch.zeros(2), num_clients=4)
    assert math.isnan(state.eta)
    losses, n = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1, 1, 1, 1])
    state, w0 = alg.filter_cohort(state, 0, losses, n)
    assert state.eta == 2.0  # lower 0.5-quantile of four equally weighted losses
    np.testing.assert_array_equal(w0, [0.0, 0.0, 2.0, 2.0])
    state, w1 = alg.filter_cohort(state, 1, np.array([1.5, 2.5]), np.array([3, 1]))  # round 1: eta stays 2
    assert state.eta == 2.0
    np.testing.assert_array_equal(w1, [0.0, 2.0])  # alpha_i / theta above eta
    state, _ = alg.filter_cohort(state, 3, np.array([5.0, 6.0]), np.array([1, 1]))  # round 3: recomputed
    assert state.eta == 5.0


def test_invalid_hyperparameters():
    with pytest.raises(ValueError, match="conformity"):
        DeltaFL(lr=LR, theta=0.0)
    with pytest.raises(ValueError, match="weighting"):
        DeltaFL(lr=LR, theta=0.5, weighting="fractional")
    with pytest.raises(ValueError, match="quantile_period"):
        DeltaFL(lr=LR, theta=0.5, quantile_period=0)

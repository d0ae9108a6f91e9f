"""FedProx with adaptive mu: the heuristic's rules, state tracking, exact numbers on hand-made clients,
the reduction to FedProx while mu does not move, same-seed repeatability."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedProx, FedProxAdaptiveMu, build_algorithm
from fedbench.algorithms.fedprox_adaptive import next_mu
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    Recorder,
    as_numpy,
    assert_repeatable,
    assert_same_history,
    global_loss,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
    reference_round,
)

LR = 0.5


# ---- the rule (paper section 5.3.2: +0.1 on an increase, -0.1 after 5 consecutive decreases) ----------

def test_increase_adds_step_and_resets_count():
    mu, count = next_mu(1.0, last_loss=0.5, loss=0.6, decreasing=3)
    assert mu == pytest.approx(1.1, abs=1e-12) and count == 0
    assert next_mu(0.0, 0.5, 0.6, 0) == (pytest.approx(0.1, abs=1e-12), 0)


def test_four_decreases_keep_mu_fifth_lowers_it():
    mu, count = 1.0, 0
    for expected_count in (1, 2, 3, 4):
        mu, count = next_mu(mu, 1.0, 0.9, count)
        assert (mu, count) == (1.0, expected_count)
    mu, count = next_mu(mu, 1.0, 0.9, count)
    assert mu == pytest.approx(0.9, abs=1e-12) and count == 0  # the count restarts


def test_mu_never_below_zero():
    assert next_mu(0.0, 1.0, 0.9, 4) == (0.0, 0)
    mu, count = next_mu(0.05, 1.0, 0.9, 4)
    assert mu == 0.0 and count == 0


def test_increase_breaks_a_run_of_decreases():
    mu, count = 1.0, 0
    for loss_pair in [(1.0, 0.9)] * 4 + [(0.9, 0.95)] + [(0.95, 0.9)] * 4:
        mu, count = next_mu(mu, *loss_pair, count)
    # 4 decreases, an increase (+0.1, count 0), then 4 decreases again: not yet 5 in a row.
    assert mu == pytest.approx(1.1, abs=1e-12) and count == 4


def _track(losses, mu_init):
    alg = FedProxAdaptiveMu(lr=0.1, mu_init=mu_init)
    state = alg.init(torch.zeros(3), num_clients=2)
    mus = []
    for loss in losses:
        state = alg.begin_round(state, SimpleNamespace(train_loss=loss))
        assert state.last_loss == loss
        mus.append(state.mu)
        assert alg.broadcast(state).mu == state.mu
    return mus


def test_begin_round_tracks_mu():
    # round 0 only records the loss; then 5 decreases (-0.1), an increase (+0.1), 5 decreases (-0.1).
    losses = [10, 9, 8, 7, 6, 5, 6, 5, 4, 3, 2, 1, 0.5]
    expected = [1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.9]
    assert _track(losses, mu_init=1.0) == pytest.approx(expected, abs=1e-12)


def test_begin_round_from_zero_stays_at_zero_while_decreasing():
    assert _track([float(10 - t) for t in range(12)], mu_init=0.0) == [0.0] * 12
    assert _track([1.0, 2.0, 3.0], mu_init=0.0) == pytest.approx([0.0, 0.1, 0.2], abs=1e-12)


def test_init_state():
    state = FedProxAdaptiveMu(lr=0.1, mu_init=0.7).init(torch.ones(4), num_clients=3)
    assert state.mu == 0.7 and state.last_loss == float("inf") and state.decreasing_rounds == 0
    assert torch.equal(state.theta, torch.ones(4))


# ---- end to end on the hand-made problem ----------------------------------------------------------------

def _reference_adaptive(ds, cfg, theta0, lr, mu_init):
    """Float64 FedProx where, before each round, mu follows f(w^t) by the paper's rule."""
    theta, mu, last, dec, mus, losses = theta0, mu_init, None, 0, [], []
    for r in range(cfg.rounds):
        loss = global_loss(ds, theta)
        if last is not None:
            if loss > last:
                mu, dec = mu + 0.1, 0
            elif loss < last:
                dec += 1
                if dec == 5:
                    mu, dec = max(0.0, mu - 0.1), 0
        last = loss
        mus.append(mu)
        losses.append(loss)
        theta, _ = reference_round(ds, cfg, r, theta, lr, mu, keep_stragglers=True)
    return theta, mus, losses


def test_matches_float64_reference():
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=8, clients_per_round=3, local_epochs=2, straggler_fraction=0.5)
    expected, mus, losses = _reference_adaptive(ds, cfg, initial_theta(cfg, model), LR, mu_init=1.0)
    # Premises: the losses are far enough apart for float32 to order them like float64, and mu both falls
    # (5 decreases) and rises (increases at rounds 6 and 7).
    assert np.abs(np.diff(losses)).min() > 1e-4
    assert mus == pytest.approx([1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 1.0, 1.1], abs=1e-12)

    rec = Recorder(FedProxAdaptiveMu(lr=LR, mu_init=1.0))
    result = simulate(cfg, ds, model, rec)
    assert [s.mu for s in rec.begin_states] == pytest.approx(mus, abs=1e-12)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-5
    assert [row["train/loss"] for row in result.history[:-1]] == pytest.approx(losses, abs=1e-5)


def test_constant_mu_is_fedprox():
    # With decreasing losses for rounds 0..4, mu stays at mu_init (it would first move at round 5).
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=5, clients_per_round=3, local_epochs=2)
    adaptive = simulate(cfg, ds, model, FedProxAdaptiveMu(lr=LR, mu_init=1.0))
    fixed = simulate(cfg, ds, model, FedProx(lr=LR, mu=1.0))
    losses = [row["train/loss"] for row in fixed.history]
    assert all(b < a for a, b in itertools.pairwise(losses[:-1]))  # premise: no increase before round 5
    assert torch.equal(adaptive.theta, fixed.theta)
    assert_same_history(adaptive.history, fixed.history)


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=4, straggler_fraction=0.5)
    assert_repeatable(lambda: build_algorithm("fedprox_adaptive", lr=LR, mu_init=0.0), cfg)

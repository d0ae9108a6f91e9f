"""FedDane: exact numbers against a float64 re-derivation (FedProx appendix B / Li et al. 2019, with the
gradient set = the cohort), the one-device reduction to FedProx, the two local paths, same-seed
repeatability."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms.feddane import FedDane
from fedbench.algorithms.fedprox import FedProx
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    as_numpy,
    assert_same_history,
    ce_grad,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)
from tests.algorithms.rounds import round_work

LR = 0.3


def reference(ds, cfg, theta0, lr, mu):
    x, sizes = theta0.copy(), ds.train.sizes
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=True)
        grads = {w.client: w.full_grad(x) for w in work}
        n = np.array([sizes[w.client] for w in work], dtype=np.float64)
        g_t = np.tensordot(n / n.sum(), [grads[w.client] for w in work], axes=1)  # step 1, weights n_k
        new = np.zeros_like(x)
        for w in work:
            gold = g_t - grads[w.client]
            y = x.copy()
            for xb, yb in w.batches:
                y = y - lr * (ce_grad(y, xb, yb) + gold + mu * (y - x))  # pggd.py's update
            new += w.weight * y
        x = new
    return x


@pytest.mark.parametrize("mu,straggler_fraction", [(0.0, 0.0), (0.5, 0.0), (0.5, 0.5)])
def test_matches_float64_reference(mu, straggler_fraction):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, local_epochs=3, straggler_fraction=straggler_fraction)
    result = simulate(cfg, ds, model, FedDane(lr=LR, mu=mu))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, mu)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6


def test_correction_matters():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3, local_epochs=3)
    dane = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    prox = simulate(cfg, ds, model, FedProx(lr=LR, mu=0.5))
    assert (dane.theta - prox.theta).abs().max() > 1e-3


def test_one_device_per_round_is_fedprox():
    # c = K = 1: g_t is the device's own gradient, the correction g_t - grad F_k(w) vanishes.
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=4, clients_per_round=1)
    dane = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    prox = simulate(cfg, ds, model, FedProx(lr=LR, mu=0.5))
    torch.testing.assert_close(dane.theta, prox.theta, rtol=0, atol=1e-7)


def test_vectorized_matches_reference_path():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3, local_epochs=3)
    fast = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    slow = simulate(dataclasses.replace(cfg, local_path="reference"), ds, model, FedDane(lr=LR, mu=0.5))
    torch.testing.assert_close(fast.theta, slow.theta, rtol=0, atol=1e-5)


def test_same_seed_is_repeatable():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3, straggler_fraction=0.5,
                                                                           local_epochs=3)
    first = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    second = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    assert first.param_digest == second.param_digest
    assert_same_history(first.history, second.history)

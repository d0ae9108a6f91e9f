"""FedDane: exact numbers against a float64 re-derivation (FedProx appendix B / Li et al. 2019, with the
gradient set = the cohort, and with c = N gradient devices = the exact full gradient), the draw of the c - K
extra gradient devices, the one-device reduction to FedProx, the two local paths, same-seed
repeatability."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from fedbench.algorithms.feddane import FedDane
from fedbench.algorithms.fedprox import FedProx
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    as_numpy,
    assert_paths_agree,
    assert_repeatable,
    ce_grad,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)
from tests.algorithms.rounds import round_work

LR = 0.3


def reference(ds, cfg, theta0, lr, mu, full_gradient=False):
    x, sizes = theta0.copy(), ds.train.sizes
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=True)
        grads = {w.client: w.full_grad(x) for w in work}
        n = np.array([sizes[w.client] for w in work], dtype=np.float64)
        g_t = np.tensordot(n / n.sum(), [grads[w.client] for w in work], axes=1)  # step 1, weights n_k
        if full_gradient:  # c = N: the gradient of f = sum_k (n_k / n) F_k on all the data at once
            x_all = np.concatenate([ds.train.client(k)[0] for k in range(ds.num_clients)]).astype(np.float64)
            y_all = np.concatenate([ds.train.client(k)[1] for k in range(ds.num_clients)])
            g_t = ce_grad(x, x_all, y_all)
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


@pytest.mark.parametrize("mu", [0.0, 0.5])
def test_all_devices_sending_gradients_use_the_full_gradient(mu):
    # Figure 4's bottom row at its end: c = N (here 3 devices, K = 2 solving).
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, local_epochs=3)
    result = simulate(cfg, ds, model, FedDane(lr=LR, mu=mu, gradient_clients=3))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, mu, full_gradient=True)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert np.abs(expected - reference(ds, cfg, initial_theta(cfg, model), LR, mu)).max() > 1e-3  # c matters


def test_gradient_clients_equal_to_the_cohort_is_the_default():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3, local_epochs=3)
    default = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5))
    same = simulate(cfg, ds, model, FedDane(lr=LR, mu=0.5, gradient_clients=2))
    assert default.param_digest == same.param_digest


def _cohort(clients, available, round_=0, seed=0):
    return SimpleNamespace(clients=torch.tensor(clients), host_clients=np.array(clients), num_clients=len(available),
                           available=available, round=round_, seed=seed)


def test_extra_gradient_devices_are_other_available_clients_drawn_per_round():
    alg = FedDane(lr=LR, gradient_clients=6)
    available = np.ones(30, dtype=bool)
    available[20:] = False
    picks = [alg.extra_gradient_clients(_cohort([1, 5, 7], available, r)) for r in range(200)]
    for extra in picks:
        assert len(extra) == 3 and len(set(extra.tolist())) == 3
        assert not set(extra.tolist()) & {1, 5, 7} and np.all(available[extra])
    counts = np.bincount(np.concatenate(picks), minlength=30)
    eligible = [c for c in range(20) if c not in (1, 5, 7)]
    assert counts[eligible].min() > 0 and counts[20:].sum() == 0  # every eligible client gets picked
    np.testing.assert_array_equal(picks[4], alg.extra_gradient_clients(_cohort([1, 5, 7], available, 4)))
    assert not np.array_equal(picks[4], alg.extra_gradient_clients(_cohort([1, 5, 7], available, 4, seed=1)))
    few = available.copy()
    few[4:] = False  # clients 0..3 available, 1 of them in the cohort besides: all the others send
    np.testing.assert_array_equal(alg.extra_gradient_clients(_cohort([1], few)), [0, 2, 3])


def test_negative_gradient_clients_is_refused():
    with pytest.raises(ValueError, match="gradient_clients"):
        FedDane(lr=LR, gradient_clients=-1)


def test_fewer_gradient_devices_than_solving_devices_is_refused():
    with pytest.raises(ValueError, match="below the 3 solving devices"):
        FedDane(lr=LR, gradient_clients=2).extra_gradient_clients(_cohort([1, 5, 7], np.ones(30, dtype=bool)))


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
    assert_paths_agree(lambda: FedDane(lr=LR, mu=0.5), handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: FedDane(lr=LR, mu=0.5), cfg)

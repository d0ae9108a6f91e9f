"""FedAvg with server momentum: exact numbers against a float64 re-derivation, the beta = 0 / server lr 1
reduction to FedAvg, the two local paths, same-seed repeatability."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedavg_momentum import FedAvgMomentum
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

LR = 0.5


def reference(ds, cfg, theta0, lr, beta, server_lr):
    x, m = theta0.copy(), np.zeros_like(theta0)
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        if not work:
            continue
        average = np.zeros_like(x)
        for w in work:
            y = x.copy()
            for xb, yb in w.batches:
                y = y - lr * ce_grad(y, xb, yb)
            average += w.weight * y
        m = beta * m + (x - average)  # heavy ball on the pseudo-gradient x - avg y
        x = x - server_lr * m
    return x


@pytest.mark.parametrize("straggler_fraction", [0.0, 0.5])
def test_matches_float64_reference(straggler_fraction):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=3, straggler_fraction=straggler_fraction)
    result = simulate(cfg, ds, model, FedAvgMomentum(lr=LR, beta=0.6, server_lr=0.7))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, 0.6, 0.7)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    plain = reference(ds, cfg, initial_theta(cfg, model), LR, 0.0, 1.0)
    assert np.abs(expected - plain).max() > 1e-2  # momentum matters on this problem


@pytest.mark.parametrize("sampling", ["uniform", "proportional"])
def test_no_momentum_and_unit_server_lr_is_fedavg(sampling):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=3, straggler_fraction=0.5, sampling=sampling)
    fedavg = simulate(cfg, ds, model, FedAvg(lr=LR))
    fedavgm = simulate(cfg, ds, model, FedAvgMomentum(lr=LR, beta=0.0, server_lr=1.0))
    torch.testing.assert_close(fedavgm.theta, fedavg.theta, rtol=0, atol=1e-6)


def test_vectorized_matches_reference_path():
    assert_paths_agree(lambda: FedAvgMomentum(lr=LR, beta=0.9), handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: FedAvgMomentum(lr=LR, beta=0.9), cfg)

"""FedAvg with server Adam (FedAdam): exact numbers against a float64 re-derivation, one client with one full-batch
local step against torch.optim.Adam, the two local paths, same-seed repeatability, bad options refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.fedadam import FedAdam
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    TRAIN,
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

LR, SERVER_LR = 0.5, 0.2
HYPER = {"beta1": 0.8, "beta2": 0.9, "eps": 1e-3}


def reference(ds, cfg, theta0, lr, server_lr, beta1, beta2, eps):
    """Reddi et al.'s Algorithm 2 with Kingma and Ba's bias correction, in float64, written out step by step."""
    x, m, v, t = theta0.copy(), np.zeros_like(theta0), np.zeros_like(theta0), 0
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
        delta = x - average  # the pseudo-gradient
        t += 1
        m = beta1 * m + (1 - beta1) * delta
        v = beta2 * v + (1 - beta2) * delta**2
        x = x - server_lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
    return x


@pytest.mark.parametrize("straggler_fraction", [0.0, 0.5])
def test_matches_float64_reference(straggler_fraction):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=3, straggler_fraction=straggler_fraction)
    result = simulate(cfg, ds, model, FedAdam(lr=LR, server_lr=SERVER_LR, **HYPER))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, SERVER_LR, **HYPER)
    # float32 engine against float64 reference over 4 rounds of 3 epochs: the other algorithms' bound (1e-6) holds
    # here too, Adam's normalised step being at most server_lr / (1 - beta1) per coordinate and round
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert np.abs(expected - initial_theta(cfg, model)).max() > 0.1  # the model moved


def test_one_client_one_full_batch_step_is_adam_on_the_gradient():
    # One client, one full-batch local step: Delta = lr grad f(x), and Adam on lr g with eps is Adam on g with
    # eps / lr (m scales by lr, sqrt(v) by lr): R rounds = R steps of torch.optim.Adam(eps = eps / lr).
    x, y = TRAIN[0]
    split = Split.from_clients([np.array(x, np.float32)], [np.array(y)], (2,))
    ds = FederatedDataset(name="one", client_ids=("a",), train=split, test=split, num_classes=2)
    model = handmade_model()
    cfg = handmade_config(rounds=6, clients_per_round=1, local_epochs=1, batch_size=10)
    result = simulate(cfg, ds, model, FedAdam(lr=LR, server_lr=SERVER_LR, **HYPER))
    p = torch.tensor(initial_theta(cfg, model), dtype=torch.float32, requires_grad=True)
    opt = torch.optim.Adam([p], lr=SERVER_LR, betas=(HYPER["beta1"], HYPER["beta2"]), eps=HYPER["eps"] / LR)
    xs, ys = torch.from_numpy(ds.train.x), torch.from_numpy(ds.train.y)
    for _ in range(cfg.rounds):
        opt.zero_grad()
        model.loss_fn(p, xs, ys).backward()
        opt.step()
    # float32 on both sides; 6 steps of at most SERVER_LR / (1 - beta1) = 1 per coordinate, rounding ~1e-7 each
    torch.testing.assert_close(result.theta, p.detach(), rtol=0, atol=1e-6)


def test_vectorized_matches_reference_path():
    assert_paths_agree(lambda: FedAdam(lr=LR, server_lr=SERVER_LR, **HYPER), handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: FedAdam(lr=LR, server_lr=SERVER_LR), cfg)


@pytest.mark.parametrize("bad", [{"server_lr": 0.0}, {"beta1": 1.0}, {"beta2": -0.1}, {"eps": 0.0}])
def test_rejects_bad_options(bad):
    with pytest.raises(ValueError, match="server_lr > 0"):
        FedAdam(lr=0.1, **bad)

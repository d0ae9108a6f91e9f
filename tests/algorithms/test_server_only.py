"""The server-only baseline with a base optimizer: exact numbers against a float64 re-derivation (SGDm and Adam),
SGDm without momentum is minibatch SGD, one client with full batches is the base optimizer (against torch.optim),
the two local paths, same-seed repeatability, bad options refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.minibatch_sgd import MinibatchSGD
from fedbench.algorithms.server_only import ServerOnly
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

LR = 0.3
HYPER = {"sgdm": {"momentum": 0.7}, "adam": {"beta1": 0.8, "beta2": 0.9, "eps": 1e-3}}


def reference(ds, cfg, theta0, lr, base):
    """One step of the base optimizer a round on the weighted mean of the clients' mean minibatch gradients at x,
    in float64: heavy ball m <- g + beta m, x <- x - lr m (the slides); Adam as Kingma and Ba's Algorithm 1."""
    h = HYPER[base]
    x, m, v, t = theta0.copy(), np.zeros_like(theta0), np.zeros_like(theta0), 0
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        g = np.zeros_like(x)
        for w in work:
            g += w.weight * np.mean([ce_grad(x, xb, yb) for xb, yb in w.batches], axis=0)
        if base == "sgdm":
            m = g + h["momentum"] * m
            x = x - lr * m
        else:
            t += 1
            m = h["beta1"] * m + (1 - h["beta1"]) * g
            v = h["beta2"] * v + (1 - h["beta2"]) * g**2
            x = x - lr * (m / (1 - h["beta1"] ** t)) / (np.sqrt(v / (1 - h["beta2"] ** t)) + h["eps"])
    return x


@pytest.mark.parametrize("base", ["sgdm", "adam"])
def test_matches_float64_reference(base):
    # E=2, batch 2: clients average 6, 4 and 4 minibatch gradients (partial batches included)
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=4)
    result = simulate(cfg, ds, model, ServerOnly(lr=LR, base=base, **HYPER[base]))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, base)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6  # float32 against float64, as minibatch_sgd's
    assert np.abs(expected - initial_theta(cfg, model)).max() > 0.1  # the model moved


@pytest.mark.parametrize("sampling", ["uniform", "proportional"])
def test_sgd_without_momentum_is_minibatch_sgd(sampling):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=2, straggler_fraction=0.5, sampling=sampling)
    plain = simulate(cfg, ds, model, MinibatchSGD(lr=LR))
    server = simulate(cfg, ds, model, ServerOnly(lr=LR, base="sgdm", momentum=0.0))
    torch.testing.assert_close(server.theta, plain.theta, rtol=0, atol=1e-6)


@pytest.mark.parametrize("base", ["sgdm", "adam"])
def test_one_client_full_batch_is_the_base_optimizer(base):
    x, y = TRAIN[0]
    split = Split.from_clients([np.array(x, np.float32)], [np.array(y)], (2,))
    ds = FederatedDataset(name="one", client_ids=("a",), train=split, test=split, num_classes=2)
    model = handmade_model()
    cfg = handmade_config(rounds=6, clients_per_round=1, local_epochs=1, batch_size=10)
    result = simulate(cfg, ds, model, ServerOnly(lr=LR, base=base, **HYPER[base]))
    p = torch.tensor(initial_theta(cfg, model), dtype=torch.float32, requires_grad=True)
    h = HYPER[base]
    opt = (torch.optim.SGD([p], lr=LR, momentum=h["momentum"]) if base == "sgdm" else
           torch.optim.Adam([p], lr=LR, betas=(h["beta1"], h["beta2"]), eps=h["eps"]))
    xs, ys = torch.from_numpy(ds.train.x), torch.from_numpy(ds.train.y)
    for _ in range(cfg.rounds):
        opt.zero_grad()
        model.loss_fn(p, xs, ys).backward()
        opt.step()
    torch.testing.assert_close(result.theta, p.detach(), rtol=0, atol=1e-6)


def test_vectorized_matches_reference_path():
    cfg = handmade_config(rounds=3, local_epochs=3)
    for base in ("sgdm", "adam"):
        assert_paths_agree(lambda: ServerOnly(lr=LR, base=base, **HYPER[base]), cfg)


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: ServerOnly(lr=LR, base="adam"), cfg)


def test_rejects_unknown_options():
    with pytest.raises(ValueError, match="base optimizer"):
        ServerOnly(lr=0.1, base="adagrad")
    with pytest.raises(ValueError, match="momentum"):
        ServerOnly(lr=0.1, momentum=1.0)

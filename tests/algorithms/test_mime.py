"""Mime and MimeLite: exact numbers against a float64 re-derivation of Algorithm 1 (SGDm and Adam), the
reduction to the base optimizer with one client and full batches (against torch.optim), the two local
paths, same-seed repeatability."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from fedbench.algorithms.mime import Mime
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


def base_optimizer(name, h):
    """(init, U, V) of the base optimizer in float64, from the slides (SGDm) and Kingma and Ba (Adam)."""
    if name == "sgdm":
        return (lambda p: np.zeros_like(p), lambda g, m: g + h["momentum"] * m, lambda g, m: g + h["momentum"] * m)

    def moments(g, s):
        m, v, t = s
        return h["beta1"] * m + (1 - h["beta1"]) * g, h["beta2"] * v + (1 - h["beta2"]) * g * g, t + 1

    def update(g, s):
        m, v, t = moments(g, s)
        return (m / (1 - h["beta1"] ** t)) / (np.sqrt(v / (1 - h["beta2"] ** t)) + h["eps"])

    return (lambda p: (np.zeros_like(p), np.zeros_like(p), 0), update, moments)


def reference(ds, cfg, theta0, lr, variant, base):
    init, update, next_state = base_optimizer(base, HYPER[base])
    x, s = theta0.copy(), init(theta0)
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        grad_x = [w.full_grad(x) for w in work]
        c = np.mean(grad_x, axis=0)
        ys = []
        for w in work:
            y = x.copy()
            for xb, yb in w.batches:
                g = ce_grad(y, xb, yb)
                if variant == "mime":
                    g = g - ce_grad(x, xb, yb) + c
                y = y - lr * update(g, s)  # s fixed during local work
            ys.append(y)
        x = np.mean(ys, axis=0)
        s = next_state(c, s)
    return x


@pytest.mark.parametrize("base", ["sgdm", "adam"])
@pytest.mark.parametrize("variant", ["mime", "mimelite"])
def test_matches_float64_reference(variant, base):
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    result = simulate(cfg, ds, model, Mime(lr=LR, variant=variant, base=base, **HYPER[base]))
    expected = reference(ds, cfg, initial_theta(cfg, model), LR, variant, base)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6


@pytest.mark.parametrize("base", ["sgdm", "adam"])
def test_variants_differ(base):
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    theta0 = initial_theta(cfg, model)
    mime, lite = (reference(ds, cfg, theta0, LR, v, base) for v in ("mime", "mimelite"))
    assert np.abs(mime - lite).max() > 1e-3


def _one_client() -> FederatedDataset:
    x, y = TRAIN[0]
    split = Split.from_clients([np.array(x, np.float32)], [np.array(y)], (2,))
    return FederatedDataset(name="one", client_ids=("a",), train=split, test=split, num_classes=2)


@pytest.mark.parametrize("variant", ["mime", "mimelite"])
@pytest.mark.parametrize("base", ["sgdm", "adam"])
def test_one_client_full_batch_is_the_base_optimizer(variant, base):
    # One client, one full-batch step per round: Mime's correction vanishes (grad(x) - grad(x) + c with
    # c = grad f(x)) and the server's V sees the same gradient: R rounds = R steps of the base optimizer.
    ds, model = _one_client(), handmade_model()
    cfg = handmade_config(rounds=6, clients_per_round=1, local_epochs=1, batch_size=10)
    result = simulate(cfg, ds, model, Mime(lr=LR, variant=variant, base=base, **HYPER[base]))

    p = torch.tensor(initial_theta(cfg, model), dtype=torch.float32, requires_grad=True)
    h = HYPER[base]
    opt = (torch.optim.SGD([p], lr=LR, momentum=h["momentum"]) if base == "sgdm" else
           torch.optim.Adam([p], lr=LR, betas=(h["beta1"], h["beta2"]), eps=h["eps"]))
    x, y = torch.from_numpy(ds.train.x), torch.from_numpy(ds.train.y)
    for _ in range(cfg.rounds):
        opt.zero_grad()
        model.loss_fn(p, x, y).backward()
        opt.step()
    torch.testing.assert_close(result.theta, p.detach(), rtol=0, atol=1e-6)
    assert (p.detach() - torch.tensor(initial_theta(cfg, model), dtype=torch.float32)).abs().max() > 0.1


@pytest.mark.parametrize("variant", ["mime", "mimelite"])
def test_vectorized_matches_reference_path(variant):
    cfg = handmade_config(rounds=3, local_epochs=3)
    for base in ("sgdm", "adam"):
        assert_paths_agree(functools.partial(Mime, lr=LR, variant=variant, base=base, **HYPER[base]), cfg)


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: Mime(lr=LR, base="adam"), cfg)


def test_rejects_unknown_options():
    with pytest.raises(ValueError, match="variant"):
        Mime(lr=0.1, variant="mimeheavy")
    with pytest.raises(ValueError, match="base optimizer"):
        Mime(lr=0.1, base="adagrad")

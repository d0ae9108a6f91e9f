"""Minibatch SGD (server-only): exact numbers against a float64 re-derivation, one step per round on the
full gradient when E = 1 and the batch holds all the data, the two local paths, same-seed repeatability."""

from __future__ import annotations

import itertools

import numpy as np

from fedbench.algorithms.minibatch_sgd import MinibatchSGD
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


def reference(ds, cfg, theta0, lr):
    x = theta0.copy()
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        step = np.zeros_like(x)
        for w in work:  # mean of the client's minibatch gradients, all at the server model
            step += w.weight * np.mean([ce_grad(x, xb, yb) for xb, yb in w.batches], axis=0)
        x = x - lr * step
    return x


def test_matches_float64_reference():
    # E=2, batch 2: clients average 6, 4 and 4 minibatch gradients (partial batches included).
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    result = simulate(cfg, ds, model, MinibatchSGD(lr=LR))
    assert np.abs(as_numpy(result.theta) - reference(ds, cfg, initial_theta(cfg, model), LR)).max() < 1e-6


def test_full_batch_is_gradient_descent_on_the_weighted_objective():
    # Every client, one full batch: x <- x - lr sum_k (n_k / n) grad F_k(x) = x - lr grad f(x).
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=1, batch_size=10, clients_per_round=3)
    result = simulate(cfg, ds, model, MinibatchSGD(lr=LR))
    x, n = initial_theta(cfg, model), ds.train.sizes
    for _ in range(cfg.rounds):
        grads = [ce_grad(x, ds.train.client(k)[0].astype(np.float64), ds.train.client(k)[1]) for k in range(3)]
        x = x - LR * np.tensordot(n / n.sum(), grads, axes=1)
    assert np.abs(as_numpy(result.theta) - x).max() < 1e-6
    # and the model moves once per round: the training loss decreases monotonically on this convex problem
    losses = [row["train/loss"] for row in result.history]
    assert all(b < a for a, b in itertools.pairwise(losses))


def test_vectorized_matches_reference_path():
    assert_paths_agree(lambda: MinibatchSGD(lr=LR), handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: MinibatchSGD(lr=LR), cfg)

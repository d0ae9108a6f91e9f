"""Sequential SGD (FedLaAvg's baseline): K C minibatch steps per round on the pooled data, against a float64
re-derivation; the pooled dataset; the refusal to run federated; same-seed repeatability."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.algorithms import SequentialSGD, build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.availability import AvailabilityConfig
from fedbench.engine.sampling import minibatch_order
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    as_numpy,
    assert_repeatable,
    ce_grad,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)

LR = 0.3


def test_pool_clients():
    ds = handmade_dataset()
    pooled = pool_clients(ds)
    assert pooled.num_clients == 1 and pooled.client_ids == ("pooled",)
    np.testing.assert_array_equal(pooled.train.x, ds.train.x)
    np.testing.assert_array_equal(pooled.test.y, ds.test.y)
    assert pooled.train.sizes.tolist() == [12]


def test_matches_float64_sgd_on_pooled_data():
    ds, model = handmade_dataset(), handmade_model()
    federated = handmade_config(rounds=3, clients_per_round=2, local_steps=4, batch_size=2,
                                availability=AvailabilityConfig(model="dropout", probability=0.5))
    cfg = sequential_config(federated)
    assert (cfg.clients_per_round, cfg.local_steps, cfg.availability.model) == (1, 8, "always")
    pooled = pool_clients(ds)
    result = simulate(cfg, pooled, model, SequentialSGD(lr=LR))
    x, y = pooled.train.x.astype(np.float64), pooled.train.y
    w = initial_theta(cfg, model)
    for r in range(cfg.rounds):
        # 8 steps of batch 2 over 12 samples: a fresh permutation (6 batches), then 2 batches of the next one
        for batch in minibatch_order(cfg.seed, r, 0, 12, 2, 2)[:8]:
            w = w - LR * ce_grad(w, x[batch], y[batch])
    assert np.abs(as_numpy(result.theta) - w).max() < 1e-6


def test_refuses_more_than_one_client_per_round():
    ds, model = handmade_dataset(), handmade_model()
    with pytest.raises(ValueError, match="pooled"):
        simulate(handmade_config(rounds=1, clients_per_round=2), ds, model, SequentialSGD(lr=LR))
    with pytest.raises(ValueError, match="local_steps"):
        sequential_config(handmade_config())  # federated run given in epochs: no C to multiply


def test_same_seed_is_repeatable():
    cfg = sequential_config(handmade_config(rounds=3, clients_per_round=2, local_steps=3))
    assert_repeatable(lambda: build_algorithm("sequential_sgd", lr=LR), cfg, ds=pool_clients(handmade_dataset()))

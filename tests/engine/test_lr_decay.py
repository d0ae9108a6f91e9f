"""The engine's learning-rate schedule (SimulationConfig.lr_decay): round r runs with lr * lr_decay ** r, against a
float64 re-derivation (sequential SGD on pooled data, as in tests/algorithms/test_sequential_sgd.py); stacked
runs keep it; a bad decay or an algorithm without lr is refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedbench.algorithms import FedAvg, SequentialSGD
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.engine.round import algorithm_at
from fedbench.engine.sampling import minibatch_order
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack
from tests.algorithms.handmade import (
    as_numpy,
    ce_grad,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)

LR, DECAY = 0.3, 0.5


def test_decayed_rate_matches_float64_sgd():
    cfg = dataclasses.replace(sequential_config(handmade_config(rounds=3, clients_per_round=2, local_steps=2,
                                                                batch_size=2)), lr_decay=DECAY)
    pooled, model = pool_clients(handmade_dataset()), handmade_model()
    result = simulate(cfg, pooled, model, SequentialSGD(lr=LR))
    x, y = pooled.train.x.astype(np.float64), pooled.train.y
    w = initial_theta(cfg, model)
    for r in range(cfg.rounds):
        for batch in minibatch_order(cfg.seed, r, 0, 12, 1, 2)[:4]:
            w = w - LR * DECAY ** r * ce_grad(w, x[batch], y[batch])
    assert np.abs(as_numpy(result.theta) - w).max() < 1e-6


def test_stacked_runs_keep_the_schedule():
    ds, model = handmade_dataset(), handmade_model()
    cfgs = [handmade_config(rounds=3, clients_per_round=2, local_steps=2, seed=s, lr_decay=DECAY) for s in (0, 1)]
    alone = [simulate(c, ds, model, FedAvg(lr=LR)).param_digest for c in cfgs]
    stacked = [r.param_digest for r in simulate_stack(model, [RunSpec(c, ds, FedAvg(lr=LR)) for c in cfgs])]
    assert stacked == alone
    constant = simulate(dataclasses.replace(cfgs[0], lr_decay=1.0), ds, model, FedAvg(lr=LR)).param_digest
    assert constant != alone[0]


def test_refusals():
    with pytest.raises(ValueError, match="lr_decay"):
        SimulationConfig(lr_decay=0.0)
    with pytest.raises(ValueError, match="lr_decay"):
        SimulationConfig(lr_decay=1.5)
    assert algorithm_at(FedAvg(lr=LR), 1.0, 5) == FedAvg(lr=LR)
    assert algorithm_at(FedAvg(lr=LR), DECAY, 2).lr == pytest.approx(LR * DECAY ** 2)
    with pytest.raises(ValueError, match="no lr field"):
        algorithm_at(object(), DECAY, 1)

"""SCAFFOLD: exact numbers against a float64 re-derivation of Algorithm 1 (options I and II, partial
participation, eta_g != 1), the control-variate bookkeeping, the reductions to FedAvg and SGD, the two
local paths, same-seed repeatability."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.minibatch_sgd import MinibatchSGD
from fedbench.algorithms.scaffold import Scaffold
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

LR, ETA_G = 0.4, 0.8


class Keep:
    """Wraps the algorithm; keeps the live client table and the last server state."""

    def __init__(self, algorithm):
        self.algorithm, self.table, self.state = algorithm, None, None

    def __getattr__(self, name):
        return getattr(self.algorithm, name)

    def init_clients(self, num_clients, theta0):
        self.table = self.algorithm.init_clients(num_clients, theta0)
        return self.table

    def server_update(self, state, result, weights, cohort):
        self.state = self.algorithm.server_update(state, result, weights, cohort)
        return self.state


def reference(ds, cfg, theta0, lr, eta_g, option):
    """Algorithm 1 in float64: returns x, c and every c_i after cfg.rounds rounds."""
    n = ds.num_clients
    x, c, c_i = theta0.copy(), np.zeros_like(theta0), np.zeros((n, len(theta0)))
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        delta_y, delta_c, new = [], [], {}
        for w in work:
            y = x.copy()
            for xb, yb in w.batches:
                y = y - lr * (ce_grad(y, xb, yb) - c_i[w.client] + c)  # line 10
            k = len(w.batches)
            plus = w.full_grad(x) if option == "I" else c_i[w.client] - c + (x - y) / (k * lr)  # line 12
            delta_y.append(y - x)
            delta_c.append(plus - c_i[w.client])
            new[w.client] = plus
        x = x + eta_g * np.mean(delta_y, axis=0)  # line 16
        c = c + len(work) / n * np.mean(delta_c, axis=0)
        for k_, v in new.items():
            c_i[k_] = v
    return x, c, c_i


@pytest.mark.parametrize("option", ["I", "II"])
def test_matches_float64_reference(option):
    # 3 rounds, 2 of 3 clients per round, E=2 with batch 2 (unequal step counts 6, 4, 4), eta_g = 0.8.
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    alg = Keep(Scaffold(lr=LR, eta_g=ETA_G, control_variate=option))
    result = simulate(cfg, ds, model, alg)
    x, c, c_i = reference(ds, cfg, initial_theta(cfg, model), LR, ETA_G, option)

    assert np.abs(as_numpy(result.theta) - x).max() < 1e-6
    assert np.abs(as_numpy(alg.state.c) - c).max() < 1e-6
    assert np.abs(as_numpy(alg.table) - c_i).max() < 1e-6
    assert np.abs(c).max() > 1e-2  # the control variates are in play


@pytest.mark.parametrize("option", ["I", "II"])
def test_server_c_stays_the_mean_of_all_client_variates(option):
    # c <- c + (|S|/N) mean_S(delta c_i) keeps c = (1/N) sum_i c_i exactly, with partial participation.
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=4)
    alg = Keep(Scaffold(lr=LR, control_variate=option))
    simulate(cfg, ds, model, alg)
    torch.testing.assert_close(alg.state.c, alg.table.mean(0), rtol=0, atol=1e-6)
    assert alg.table.shape == (ds.num_clients, model.num_params)


def test_options_differ():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    one = simulate(cfg, ds, model, Scaffold(lr=LR, control_variate="I"))
    two = simulate(cfg, ds, model, Scaffold(lr=LR, control_variate="II"))
    assert (one.theta - two.theta).abs().max() > 1e-3


@pytest.mark.parametrize("local_epochs", [1, 3])
def test_zero_control_variates_is_fedavg(local_epochs):
    # Round 1 starts from c = c_i = 0: SCAFFOLD (eta_g = 1) is FedAvg with equal weights (sampling by n_k).
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=1, local_epochs=local_epochs, sampling="proportional")
    scaffold = simulate(cfg, ds, model, Scaffold(lr=LR))
    fedavg = simulate(cfg, ds, model, FedAvg(lr=LR))
    torch.testing.assert_close(scaffold.theta, fedavg.theta, rtol=0, atol=1e-6)


@pytest.mark.parametrize("option", ["I", "II"])
def test_one_local_step_with_every_client_is_sgd(option):
    # K = 1 full-batch step, all N clients: y_i - x = -eta_l (grad f_i(x) + c - c_i) and c = mean c_i, so
    # x moves by -eta_g eta_l mean_i grad f_i(x): gradient descent on the unweighted mean, every round.
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=4, local_epochs=1, batch_size=10, clients_per_round=3, sampling="proportional")
    scaffold = simulate(cfg, ds, model, Scaffold(lr=LR, eta_g=ETA_G, control_variate=option))
    sgd = simulate(cfg, ds, model, MinibatchSGD(lr=LR * ETA_G))
    torch.testing.assert_close(scaffold.theta, sgd.theta, rtol=0, atol=1e-6)

    x = initial_theta(cfg, model)
    for _ in range(cfg.rounds):
        x = x - LR * ETA_G * np.mean([ce_grad(x, *_xy(ds, k)) for k in range(3)], axis=0)
    assert np.abs(as_numpy(scaffold.theta) - x).max() < 1e-6


def _xy(ds, k):
    x, y = ds.train.client(k)
    return x.astype(np.float64), y


@pytest.mark.parametrize("option", ["I", "II"])
def test_vectorized_matches_reference_path(option):
    assert_paths_agree(lambda: Scaffold(lr=LR, eta_g=ETA_G, control_variate=option),
                       handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: Scaffold(lr=LR), cfg)


def test_rejects_unknown_option():
    with pytest.raises(ValueError, match="control_variate"):
        Scaffold(lr=0.1, control_variate="III")

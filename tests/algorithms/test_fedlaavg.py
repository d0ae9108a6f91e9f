"""FedLaAvg: exact numbers against a float64 re-derivation of Algorithm 1 with appendix E's local iterations
under diurnal availability; the selection of the clients absent the longest; the reduction to full-batch
gradient descent on the n_i-weighted objective (one local step, every client every round); same-seed
repeatability."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedAvg, FedLaAvg, build_algorithm
from fedbench.availability import AvailabilityConfig
from fedbench.engine.sampling import minibatch_order
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    Recorder,
    _client,
    as_numpy,
    assert_repeatable,
    ce_grad,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
)

LR = 0.5
GROUPS = (0, 1, 0)


def reference_run(ds, cfg, theta0, groups, period, beta, local_steps, lr):
    """float64 FedLaAvg from the paper: r_i, every client's latest accumulated scaled gradient G_i, their mean G
    (eq. 4), selection by a stable sort on r_i among the available clients (the authors' pick_clients)."""
    n_clients, sizes = ds.num_clients, ds.train.sizes
    last = [-1] * n_clients
    latest = np.zeros((n_clients, len(theta0)))
    mean_latest = np.zeros(len(theta0))
    w, picks = theta0, []
    for t in range(cfg.rounds):
        group_now = 0 if t % (period + int(beta * period)) < period else 1
        available = [i for i in range(n_clients) if groups[i] == group_now]
        picked = sorted(available, key=lambda i: last[i])[: min(cfg.clients_per_round, len(available))]
        picks.append(sorted(picked))
        for i in picked:
            last[i] = t
        for i in picked:
            x, y = _client(ds, i)
            scale = n_clients * sizes[i] / sizes.sum()  # N p_i
            epochs = -(-local_steps // -(-len(y) // cfg.batch_size))
            local = w.copy()
            for batch in minibatch_order(cfg.seed, t, i, len(y), epochs, cfg.batch_size)[:local_steps]:
                idx = batch[batch >= 0]
                local = local - lr * scale * ce_grad(local, x[idx], y[idx])
            g_i = (w - local) / lr
            mean_latest += (g_i - latest[i]) / n_clients
            latest[i] = g_i
        w = w - lr * mean_latest
    return w, picks, latest


class StateRecorder(Recorder):
    def server_update(self, state, result, weights, cohort):
        new = super().server_update(state, result, weights, cohort)
        self.begin_states.append(new)
        return new


def _diurnal_cfg(**changes):
    base = dict(rounds=6, clients_per_round=1, local_steps=3, batch_size=2,
                availability=AvailabilityConfig(model="diurnal", period=2, beta=0.5, groups=GROUPS))
    return handmade_config(**(base | changes))


def test_matches_float64_reference_under_diurnal_availability():
    ds, model = handmade_dataset(), handmade_model()
    cfg = _diurnal_cfg()
    rec = StateRecorder(FedLaAvg(lr=LR))
    result = simulate(cfg, ds, model, rec)
    expected, picks, latest = reference_run(ds, cfg, initial_theta(cfg, model), GROUPS, 2, 0.5, 3, LR)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    # group 0 = clients 0 and 2 in rounds 0, 1, 3, 4; group 1 = client 1 in rounds 2, 5; absent longest first
    assert picks == [[0], [2], [1], [0], [2], [1]]
    assert [r["clients"].tolist() for r in rec.rounds] == picks
    final = rec.begin_states[-1]
    np.testing.assert_array_equal(final.last_round, [3, 5, 4])
    # the server's G is the mean over all N clients of their latest accumulated gradients
    np.testing.assert_allclose(final.latest_mean.double().numpy(), latest.mean(0), atol=1e-6)


def test_multiple_clients_per_round_and_longest_absent_first():
    ds, model = handmade_dataset(), handmade_model()
    cfg = _diurnal_cfg(clients_per_round=2)
    result = simulate(cfg, ds, model, FedLaAvg(lr=LR))
    expected, picks, _ = reference_run(ds, cfg, initial_theta(cfg, model), GROUPS, 2, 0.5, 3, LR)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert picks[2] == [1]  # K = min(2, #available = 1)


def test_choose_clients_stable_sort_on_last_round():
    alg = FedLaAvg(lr=LR)
    state = dataclasses.replace(alg.init(torch.zeros(2), 6), last_round=np.array([3, -1, 0, -1, 2, 0]))
    available = np.array([True, True, True, False, True, True])
    new, chosen = alg.choose_clients(state, 7, available, 3)
    # available r: 0->3, 1->-1, 2->0, 4->2, 5->0; smallest first, ties by index: 1, 2, 5
    np.testing.assert_array_equal(chosen, [1, 2, 5])
    np.testing.assert_array_equal(new.last_round, [3, 7, 7, -1, 2, 7])
    np.testing.assert_array_equal(state.last_round, [3, -1, 0, -1, 2, 0])  # the old state is untouched


def test_one_step_full_participation_is_gradient_descent_on_the_weighted_objective():
    ds, model = handmade_dataset(), handmade_model()
    # every client every round, one local step on its whole data (batch 5 >= n_i): G = sum_i p_i grad F_i
    cfg = handmade_config(rounds=4, clients_per_round=3, local_steps=1, batch_size=5)
    result = simulate(cfg, ds, model, FedLaAvg(lr=LR))
    x_all, y_all = ds.train.x.astype(np.float64), ds.train.y
    w = initial_theta(cfg, model)
    for _ in range(cfg.rounds):
        w = w - LR * ce_grad(w, x_all, y_all)  # gradient of the mean loss over all samples = sum_i p_i grad F_i
    assert np.abs(as_numpy(result.theta) - w).max() < 1e-6
    assert np.abs(w - initial_theta(cfg, model)).max() > 0.1  # guard: it moved
    # ... and FedAvg with one full-batch step and full participation takes the same step
    fedavg = simulate(dataclasses.replace(cfg, local_steps=0, local_epochs=1), ds, model, FedAvg(lr=LR))
    assert np.abs(as_numpy(fedavg.theta) - w).max() < 1e-6


def test_same_seed_is_repeatable():
    assert_repeatable(lambda: build_algorithm("fedlaavg", lr=LR), _diurnal_cfg())


def test_client_table_is_per_client_state_on_the_models_device():
    table = FedLaAvg(lr=LR).init_clients(4, torch.zeros(6))
    assert table.shape == (4, 6) and table.dtype == torch.float32 and not table.any()


@pytest.mark.parametrize("local_path", ["vectorized", "reference"])
def test_both_local_paths_match_the_reference(local_path):
    ds, model = handmade_dataset(), handmade_model()
    cfg = _diurnal_cfg(clients_per_round=2, local_path=local_path)
    result = simulate(cfg, ds, model, FedLaAvg(lr=LR))
    expected, _, _ = reference_run(ds, cfg, initial_theta(cfg, model), GROUPS, 2, 0.5, 3, LR)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6

"""FedProxVR: exact numbers against a float64 re-derivation of Algorithm 1 (SVRG and SARAH), the random
output iterate, the step size from beta and L, a reduction to one gradient step, the two local paths,
same-seed repeatability."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.fedproxvr import FedProxVR
from fedbench.algorithms.minibatch_sgd import MinibatchSGD
from fedbench.engine.simulation import simulate
from fedbench.seeding import rng
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

ETA, MU, TAU = 0.4, 0.5, 3


def reference(ds, cfg, theta0, eta, mu, tau, estimator, seed):
    x = theta0.copy()
    for r in range(cfg.rounds):
        work = round_work(ds, cfg, r, keep_stragglers=False)
        new = np.zeros_like(x)
        for w in work:
            def prox(z, anchor=x):  # the slides' form: (eta / (1 + eta mu)) (mu w_bar + z / eta)
                return eta / (1 + eta * mu) * (mu * anchor + z / eta)

            v0 = w.full_grad(x)
            iterates, v_prev = [x, prox(x - eta * v0)], v0  # w^(0), w^(1)
            for t in range(1, tau):
                xb, yb = w.batches[t - 1]
                if estimator == "svrg":
                    v = ce_grad(iterates[t], xb, yb) - ce_grad(x, xb, yb) + v0
                else:
                    v = ce_grad(iterates[t], xb, yb) - ce_grad(iterates[t - 1], xb, yb) + v_prev
                iterates.append(prox(iterates[t] - eta * v))
                v_prev = v
            t_out = int(rng(seed, r, "algorithm", w.client).integers(1, tau + 1))
            new += w.weight * iterates[t_out]
        x = new
    return x


@pytest.mark.parametrize("estimator", ["svrg", "sarah"])
def test_matches_float64_reference(estimator):
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    result = simulate(cfg, ds, model, FedProxVR(lr=ETA, mu=MU, tau=TAU, estimator=estimator))
    expected = reference(ds, cfg, initial_theta(cfg, model), ETA, MU, TAU, estimator, cfg.seed)
    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6


def test_estimators_differ_on_this_draw():
    # Guard for the test above: some client outputs w^(3), where SVRG and SARAH part ways.
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=3)
    theta0 = initial_theta(cfg, model)
    svrg, sarah = (reference(ds, cfg, theta0, ETA, MU, TAU, e, cfg.seed) for e in ("svrg", "sarah"))
    assert np.abs(svrg - sarah).max() > 1e-4


def test_output_iterate_is_per_client_and_uniform():
    alg = FedProxVR(lr=0.1, tau=5)
    cohort = alg.output_iterates(11, 7, [0, 4, 9])
    assert cohort == [alg.output_iterates(11, 7, [c])[0] for c in (0, 4, 9)]  # independent of the cohort
    assert alg.output_iterates(11, 7, range(20)) != alg.output_iterates(12, 7, range(20))  # the run's seed counts
    draws = np.array([alg.output_iterates(11, r, range(50)) for r in range(40)]).ravel()
    counts = np.bincount(draws, minlength=6)
    assert counts[0] == 0 and draws.max() == 5
    assert np.all(np.abs(counts[1:] / len(draws) - 0.2) < 0.04)


def test_step_size_from_beta_and_smoothness():
    alg = FedProxVR(lr=123.0, beta=4.0, smoothness=2.5, tau=TAU, mu=MU)
    assert alg.eta == pytest.approx(0.1)
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=2)
    direct = simulate(cfg, ds, model, FedProxVR(lr=0.1, tau=TAU, mu=MU))
    derived = simulate(cfg, ds, model, alg)
    assert torch.equal(direct.theta, derived.theta)
    with pytest.raises(ValueError, match="beta and smoothness"):
        FedProxVR(lr=0.1, beta=7.0)


def test_one_iteration_without_prox_is_a_gradient_step():
    # tau = 1, mu = 0: every client returns w^(1) = w_bar - eta grad F_n(w_bar), so the round is one step
    # of gradient descent on the n_k-weighted objective, which is minibatch SGD with one full batch.
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, local_epochs=1, batch_size=10)
    vr = simulate(cfg, ds, model, FedProxVR(lr=ETA, mu=0.0, tau=1))
    sgd = simulate(cfg, ds, model, MinibatchSGD(lr=ETA))
    torch.testing.assert_close(vr.theta, sgd.theta, rtol=0, atol=1e-6)


def test_needs_tau_minus_one_local_steps():
    # E=1, batch 2: the clients have 3, 2 and 2 minibatches; tau = 4 needs 3.
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=1, local_epochs=1)
    with pytest.raises(ValueError, match="tau - 1"):
        simulate(cfg, ds, model, FedProxVR(lr=ETA, tau=4))


def test_fixed_local_steps_equal_frozen_extra_steps():
    # The engine's local_steps = tau - 1 gives each client the first tau - 1 minibatches of the schedule it
    # would get from whole epochs, so both ways of running FedProxVR agree exactly.
    ds, model = handmade_dataset(), handmade_model()
    epochs = simulate(handmade_config(rounds=3, local_epochs=3), ds, model,
                      FedProxVR(lr=ETA, mu=MU, tau=4, estimator="sarah"))
    steps = simulate(handmade_config(rounds=3, local_steps=3), ds, model,
                     FedProxVR(lr=ETA, mu=MU, tau=4, estimator="sarah"))
    torch.testing.assert_close(epochs.theta, steps.theta, rtol=0, atol=1e-7)


@pytest.mark.parametrize("estimator", ["svrg", "sarah"])
def test_vectorized_matches_reference_path(estimator):
    assert_paths_agree(lambda: FedProxVR(lr=ETA, mu=MU, tau=5, estimator=estimator),
                       handmade_config(rounds=3, local_epochs=3))


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, local_epochs=3)
    assert_repeatable(lambda: FedProxVR(lr=ETA, mu=MU, tau=5, estimator="sarah"), cfg)

"""FedProx: exact numbers on hand-made clients, the mu=0 reduction to FedAvg, partial work of stragglers,
same-seed repeatability."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedAvg, FedProx, build_algorithm
from fedbench.engine.simulation import simulate
from tests.algorithms.handmade import (
    Recorder,
    as_numpy,
    assert_repeatable,
    assert_same_history,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
    reference_run,
)

LR = 0.5


@pytest.mark.parametrize("mu", [0.0, 0.3, 2.0])
def test_matches_float64_reference_two_rounds(mu):
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=2)
    result = simulate(cfg, ds, model, FedProx(lr=LR, mu=mu))
    expected, losses, _ = reference_run(ds, cfg, initial_theta(cfg, model), LR, mu=mu, keep_stragglers=True)

    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert [row["train/loss"] for row in result.history] == pytest.approx(losses, abs=1e-6)


def test_mu_changes_the_result():
    # Guard for the test above: the proximal term matters on this problem (mu=2 vs mu=0 differ clearly).
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=2)
    theta0 = initial_theta(cfg, model)
    plain, _, _ = reference_run(ds, cfg, theta0, LR, mu=0.0, keep_stragglers=True)
    prox, _, _ = reference_run(ds, cfg, theta0, LR, mu=2.0, keep_stragglers=True)
    assert np.abs(plain - prox).max() > 1e-2
    # and it pulls the local models towards w^t: the global model moves less.
    assert np.linalg.norm(prox - theta0) < np.linalg.norm(plain - theta0)


def test_stragglers_keep_partial_work():
    # K=2, fraction 0.5, E=3: one client runs 3 epochs, the straggler 1 or 2 (authors' randint(1, E)).
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    rec = Recorder(FedProx(lr=LR, mu=0.3))
    result = simulate(cfg, ds, model, rec)
    expected, _, logs = reference_run(ds, cfg, initial_theta(cfg, model), LR, mu=0.3, keep_stragglers=True)

    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    sizes = ds.train.sizes
    for seen, log in zip(rec.rounds, logs):
        assert sorted(seen["clients"].tolist()) == sorted(log.received)
        assert len(seen["clients"]) == cfg.clients_per_round  # nobody dropped
        assert min(seen["epochs"]) in (1, 2) and max(seen["epochs"]) == 3
        np.testing.assert_allclose(seen["weights"], sizes[seen["clients"]] / sizes[seen["clients"]].sum(),
                                   rtol=1e-6)

    # With stragglers, FedProx differs from FedProx without them, and from FedAvg (which drops them).
    no_strag = simulate(handmade_config(rounds=3, local_epochs=3), ds, model, FedProx(lr=LR, mu=0.3))
    assert not torch.equal(no_strag.theta, result.theta)
    fedavg_rec = Recorder(FedAvg(lr=LR))
    fedavg = simulate(cfg, ds, model, fedavg_rec)
    fedprox0_rec = Recorder(FedProx(lr=LR, mu=0.0))
    fedprox0 = simulate(cfg, ds, model, fedprox0_rec)
    assert not torch.equal(fedavg.theta, fedprox0.theta)
    for avg_round, prox_round in zip(fedavg_rec.rounds, fedprox0_rec.rounds):
        assert len(avg_round["weights"]) == 1 and len(prox_round["weights"]) == 2


@pytest.mark.parametrize("sampling", ["uniform", "proportional"])
def test_mu_zero_without_stragglers_is_fedavg(sampling):
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, local_epochs=2, sampling=sampling)
    fedavg = simulate(cfg, ds, model, FedAvg(lr=LR))
    fedprox = simulate(cfg, ds, model, FedProx(lr=LR, mu=0.0))
    assert torch.equal(fedavg.theta, fedprox.theta)
    assert_same_history(fedavg.history, fedprox.history)


def test_mu_zero_is_fedavg_on_synthetic():
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.simulation import SimulationConfig
    from fedbench.models import build_model

    ds = generate_synthetic(1, 1, num_devices=6, seed=5, lognormal_mean=3.0, lognormal_sigma=0.3, min_samples=20)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    cfg = SimulationConfig(rounds=2, clients_per_round=3, local_epochs=2, batch_size=10, seed=1, device="cpu",
                           checkpoint_every=10_000)
    fedavg = simulate(cfg, ds, model, FedAvg(lr=0.01))
    fedprox = simulate(cfg, ds, model, FedProx(lr=0.01, mu=0.0))
    assert torch.equal(fedavg.theta, fedprox.theta)
    assert_same_history(fedavg.history, fedprox.history)


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    assert_repeatable(lambda: build_algorithm("fedprox", lr=LR, mu=0.3), cfg)

"""FedAvg: exact numbers on hand-made clients, straggler dropping, same-seed repeatability."""

from __future__ import annotations

import dataclasses

import math

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedAvg, build_algorithm
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import Model, mclr
from tests.algorithms.handmade import (
    Recorder,
    as_numpy,
    assert_repeatable,
    handmade_config,
    handmade_dataset,
    handmade_model,
    initial_theta,
    reference_run,
)

LR = 0.5


def zero_init(model: Model) -> Model:
    """The model with theta^0 = 0, so a round can be worked out with pencil and paper."""
    return dataclasses.replace(model, init_fn=lambda module, layout, generator: torch.zeros(model.num_params))


def _two_client_1d() -> FederatedDataset:
    xs = [np.array([[1.0], [2.0]], np.float32), np.array([[-1.0], [1.0], [3.0]], np.float32)]
    ys = [np.array([0, 1]), np.array([0, 0, 0])]
    test_x = [np.array([[1.0]], np.float32), np.array([[0.0]], np.float32)]
    test_y = [np.array([1]), np.array([0])]
    return FederatedDataset(name="pencil", client_ids=("p", "q"), train=Split.from_clients(xs, ys, (1,)),
                            test=Split.from_clients(test_x, test_y, (1,)), num_classes=2)


def test_one_round_by_hand():
    # theta = [W00, W01, b0, b1] = 0, so every softmax is (1/2, 1/2) and dL/dz = (1/2, 1/2) - onehot(y).
    # Client p (n=2): x=1,y=0 -> (-1/2, 1/2); x=2,y=1 -> (1/2, -1/2).
    #   grad W = mean(x * dL/dz) = ((-1/2, 1/2) + (1, -1)) / 2 = (1/4, -1/4); grad b = (0, 0).
    #   One full-batch step with lr 0.1: (-0.025, 0.025, 0, 0).
    # Client q (n=3): all y=0 -> dL/dz = (-1/2, 1/2); mean x = 1.
    #   grad = (-1/2, 1/2, -1/2, 1/2); after the step: (0.05, -0.05, 0.05, -0.05).
    # Server, weights n_k = (2, 3): (2 * p + 3 * q) / 5 = (0.02, -0.02, 0.03, -0.03).
    cfg = SimulationConfig(rounds=1, clients_per_round=2, local_epochs=1, batch_size=10, seed=0, device="cpu")
    model = zero_init(mclr(1, 2))
    result = simulate(cfg, _two_client_1d(), model, FedAvg(lr=0.1))

    expected = torch.tensor([0.02, -0.02, 0.03, -0.03])
    torch.testing.assert_close(result.theta, expected, rtol=0, atol=1e-7)
    # Before training every prediction is (1/2, 1/2): f(0) = ln 2.
    assert result.history[0]["train/loss"] == pytest.approx(math.log(2), abs=1e-7)
    assert len(result.history) == 2  # one training round plus the final evaluation


def test_matches_float64_reference_two_rounds():
    ds, model, cfg = handmade_dataset(), handmade_model(), handmade_config(rounds=2)
    result = simulate(cfg, ds, model, FedAvg(lr=LR))
    expected, losses, _ = reference_run(ds, cfg, initial_theta(cfg, model), LR, mu=0.0, keep_stragglers=False)

    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert [row["train/loss"] for row in result.history] == pytest.approx(losses, abs=1e-6)
    # The problem is not degenerate: the model moved.
    assert np.abs(expected - initial_theta(cfg, model)).max() > 1e-2


def test_drops_stragglers():
    # K=2, fraction 0.5: round(2 * 0.5) = 1 client runs E epochs, the other straggles and is dropped.
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=3, straggler_fraction=0.5, local_epochs=3)
    rec = Recorder(FedAvg(lr=LR))
    result = simulate(cfg, ds, model, rec)
    expected, _, logs = reference_run(ds, cfg, initial_theta(cfg, model), LR, mu=0.0, keep_stragglers=False)

    assert np.abs(as_numpy(result.theta) - expected).max() < 1e-6
    assert len(rec.rounds) == 3
    for seen, log in zip(rec.rounds, logs):
        assert len(seen["clients"]) == 1
        assert seen["clients"].tolist() == log.received
        assert seen["epochs"].tolist() == [cfg.local_epochs]  # only full work is aggregated
        assert seen["weights"].tolist() == [1.0]

    # Dropping the straggler changes the result compared with the run where it is not a straggler.
    no_strag = simulate(handmade_config(rounds=3, local_epochs=3), ds, model, FedAvg(lr=LR))
    assert not torch.equal(no_strag.theta, result.theta)


def test_all_stragglers_leave_the_model_unchanged():
    ds, model = handmade_dataset(), handmade_model()
    cfg = handmade_config(rounds=2, straggler_fraction=1.0)
    result = simulate(cfg, ds, model, FedAvg(lr=LR))
    assert torch.equal(result.theta, torch.from_numpy(initial_theta(cfg, model)).float())


def test_same_seed_is_repeatable():
    cfg = handmade_config(rounds=3, straggler_fraction=0.5)
    assert_repeatable(lambda: build_algorithm("fedavg", lr=LR), cfg)


def test_different_seed_differs():
    ds, model = handmade_dataset(), handmade_model()
    a = simulate(handmade_config(seed=3), ds, model, FedAvg(lr=LR))
    b = simulate(handmade_config(seed=4), ds, model, FedAvg(lr=LR))
    assert a.param_digest != b.param_digest


def _zero_pixel_clients() -> FederatedDataset:
    """MNIST-like: 8 x 8 images whose border is 0 in every sample and whose inside is half zeros, two labels a
    client (FedProx's MNIST split), so that gradients hold exact zeros of either sign."""
    rng = np.random.default_rng(0)
    xs, ys, test_x, test_y = [], [], [], []
    for k in range(8):
        n = int(rng.integers(12, 40))
        img = np.zeros((n + 4, 8, 8), np.float32)
        inside = rng.random((n + 4, 6, 6)).astype(np.float32)
        img[:, 1:7, 1:7] = np.where(inside < 0.5, 0.0, inside)
        labels = rng.choice([k % 10, (k + 3) % 10], size=n + 4)
        xs.append(img[:n].reshape(n, 64))
        ys.append(labels[:n])
        test_x.append(img[n:].reshape(4, 64))
        test_y.append(labels[n:])
    return FederatedDataset(name="zero-pixels", client_ids=tuple(map(str, range(8))),
                            train=Split.from_clients(xs, ys, (64,)), test=Split.from_clients(test_x, test_y, (64,)),
                            num_classes=10)


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)  # torch.equal holds -0 == +0; the digests do not


@pytest.mark.parametrize("init", ["glorot", "zeros"])
def test_stacked_beside_fedprox_is_fedavg_bit_for_bit_on_inputs_with_exact_zeros(init):
    # FedAvg trains as FedProx with mu = 0 dropping its stragglers (stacks_as): beside FedProx runs, its rows take
    # FedProx's in-place step with a per-row mu of 0. Every bit of every run (signs of zeros too) is FedAvg's own.
    from fedbench.algorithms import FedProx
    from fedbench.engine.simulation import RunSpec, simulate_stack, stack_key

    ds = _zero_pixel_clients()
    model = mclr(64, 10) if init == "glorot" else zero_init(mclr(64, 10))
    cfg = SimulationConfig(rounds=4, clients_per_round=4, local_epochs=2, batch_size=5, device="cpu",
                           checkpoint_every=10_000)
    avg = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=f), ds, FedAvg(lr=0.3))
           for s, f in ((1, 0.5), (2, 0.0))]
    prox = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=0.5), ds, FedProx(lr=0.3, mu=mu))
            for s, mu in ((1, 1.0), (3, 0.0))]
    assert len({stack_key(s) for s in avg + prox}) == 1  # one stack: FedAvg's rows get mu as a tensor
    merged = simulate_stack(model, avg + prox)
    assert merged[0].stack_size == 4
    for stacked, spec in zip(merged, avg):
        alone = simulate(spec.cfg, ds, model, FedAvg(lr=0.3))
        assert torch.equal(_bits(stacked.theta), _bits(alone.theta))
        assert stacked.param_digest == alone.param_digest
        assert [r["train/loss"] for r in stacked.history] == [r["train/loss"] for r in alone.history]
    assert not torch.equal(merged[0].theta, merged[2].theta)  # the same seed and stragglers with mu = 1: mu is per row


def test_the_proximal_step_with_mu_zero_is_the_plain_step_but_for_one_signed_zero():
    # Every combination of signed zeros and small numbers for theta, grad and the anchor: the in-place proximal step
    # with a tensor mu of 0 (FedAvg's rows beside FedProx's) gives sgd_step's bits everywhere except where theta is -0,
    # grad -0 and the anchor <= -0 (theta stays -0 where sgd_step gives +0), the case fedavg.py's docstring states
    # a run never reaches.
    from fedbench.ops import prox_sgd_step, sgd_step

    values = torch.tensor([0.0, -0.0, 1.5, -2.25, 1e-30])
    theta, grad, anchor = (g.reshape(-1, 1) for g in torch.meshgrid(values, values, values, indexing="ij"))
    theta, grad, anchor = theta.repeat(1, 3), grad.repeat(1, 3), anchor.repeat(1, 3)
    mu = torch.zeros(len(theta), 1)
    plain, prox = sgd_step(theta, grad, 0.3), prox_sgd_step(theta.clone(), grad, anchor, mu, 0.3)
    differs = (_bits(plain) != _bits(prox)).any(dim=1)
    def signed_zero(t):
        return (t == 0) & torch.signbit(t)

    expected = (signed_zero(theta) & signed_zero(grad) & ((anchor < 0) | signed_zero(anchor)))[:, 0]
    assert expected.any() and torch.equal(differs, expected)

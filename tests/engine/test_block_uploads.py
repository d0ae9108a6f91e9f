"""A block's arrays moved to the device in one transfer (fedbench.engine.uploads; CUDA's path, forced here on the
CPU): the rounds take the block's views, their numbers are those of the rounds that move their own arrays, bit for
bit, and a round the block did not foresee moves its own."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import fedbench.engine.uploads as uploads
from fedbench.algorithms import build_algorithm
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine import round as round_
from fedbench.engine import simulation
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import build_model

FULL = uploads.BLOCK_UPLOAD_BYTES


@pytest.fixture(scope="module")
def dataset():
    return generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=2.5, lognormal_sigma=0.5, min_samples=10)


def _run(dataset, monkeypatch, budget: int, capture: str, name: str = "fedprox", rounds: int = 22):
    monkeypatch.setattr(round_, "BATCHED_SIGNAL_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(uploads, "BLOCK_UPLOAD_BYTES", budget)
    cfg = SimulationConfig(rounds=rounds, clients_per_round=3, local_epochs=2, batch_size=10, device="cpu",
                           capture=capture, straggler_fraction=0.3, dissimilarity_every=0, checkpoint_every=10**9,
                           evaluations=(EvalSpec("train", every=10), EvalSpec("test", every=10)))
    hyper = {"mu": 1.0} if name == "fedprox" else {}
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), dataset, build_algorithm(name, lr=0.05, **hyper))
             for s in range(3)]
    model = build_model("mclr", dataset.feature_shape, dataset.num_classes)
    stacks = []
    real = simulation.build_stack

    def kept(*args):
        stack, states = real(*args)
        stacks.append(stack)
        return stack, states

    monkeypatch.setattr(simulation, "build_stack", kept)
    return simulate_stack(model, specs), stacks[0].uploads


@pytest.mark.parametrize("name,capture", [("fedprox", "static"), ("scaffold", "static"), ("fedprox", "none")])
def test_rounds_on_the_blocks_views_equal_rounds_moving_their_own_arrays(name, capture, dataset, monkeypatch):
    own, none_staged = _run(dataset, monkeypatch, 0, capture, name)
    staged, block = _run(dataset, monkeypatch, FULL, capture, name)
    assert none_staged.transfers == 0 and none_staged.taken == 0
    assert block.transfers == 2 and block.missed == 0 and block.taken > 0  # rounds 0-19 and 20-21: one transfer each
    for a, b in zip(own, staged):
        assert torch.equal(a.theta, b.theta)
        assert [r["train/loss"] for r in a.history] == [r["train/loss"] for r in b.history] and len(a.history) == 4


def test_a_round_the_block_did_not_foresee_moves_its_own_arrays(dataset, monkeypatch):
    """FedLaAvg picks its own cohort (choose_clients): its rounds are not drawn ahead, so nothing is staged for
    them and each moves its own arrays."""
    _, block = _run(dataset, monkeypatch, FULL, "static", "fedlaavg", rounds=3)
    assert block.transfers == 0 and block.taken == 0 and block.missed > 0


def test_a_blocks_views_hold_each_array_at_its_dtype_and_shape_and_past_the_budget_none():
    up = uploads.BlockUploads(torch.device("cpu"), budget=64)
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    w = np.array([0.25, 0.75], np.float32)
    m = np.array([[True, False, True]])
    up.stage({"a": a, "w": w, "m": m, "late": np.zeros(4, np.int64)})  # 48 + 8 + 3 (at 56): "late" is past 64 bytes
    assert up.transfers == 1 and set(up.host) == {"a", "w", "m"}
    assert torch.equal(up.take("a", a.copy()), torch.from_numpy(a))
    assert torch.equal(up.take("w", w), torch.from_numpy(w)) and up.take("m", m).dtype == torch.bool
    assert up.take("a", a + 1) is None and up.take("late", np.zeros(4, np.int64)) is None
    assert up.take("w", w.astype(np.float64)) is None  # another dtype: not the same array
    assert (up.taken, up.missed) == (3, 3)

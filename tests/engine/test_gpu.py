"""Every algorithm under the vectorized engine on a GPU: the same numbers as on the CPU (up to float32
reduction order), repeatable under one seed, per-client state kept on the GPU. Skipped where no CUDA device
is present (CI has none); run on a GPU machine with ``python -m pytest tests/engine/test_gpu.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import ALGORITHMS, build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import build_model
from tests.algorithms.cases import CASES

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")

def test_every_algorithm_has_a_case():
    assert set(CASES) == set(ALGORITHMS)


@pytest.fixture(scope="module")
def data():
    return generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)


def _run(name: str, device: str, ds, model_name: str = "mclr"):
    hyper, changes = CASES[name]
    cfg = SimulationConfig(rounds=4, clients_per_round=5, local_epochs=2, batch_size=10, straggler_fraction=0.3,
                           seed=5, device=device, checkpoint_every=10_000)
    cfg = dataclasses.replace(cfg, **changes)
    if name == "sequential_sgd":
        cfg, ds = sequential_config(cfg, local_steps=4), pool_clients(ds)
    model = build_model(model_name, ds.feature_shape, ds.num_classes)
    hyper = {"lr": 0.05} | hyper
    return simulate(cfg, ds, model, build_algorithm(name, **hyper))


@pytest.mark.parametrize("name", sorted(CASES))
def test_cuda_matches_cpu_and_repeats(name, data):
    cpu = _run(name, "cpu", data)
    gpu = _run(name, "cuda", data)
    again = _run(name, "cuda", data)
    assert gpu.device.startswith("cuda") and not gpu.diverged
    torch.testing.assert_close(gpu.theta, cpu.theta, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose([r["train/loss"] for r in gpu.history], [r["train/loss"] for r in cpu.history],
                               rtol=1e-4)
    torch.testing.assert_close(again.theta, gpu.theta, rtol=0, atol=1e-6)


class _RowDevices:
    """Wraps an algorithm and records the device of the per-client rows the engine hands it each round."""

    def __init__(self, algorithm):
        self.algorithm, self.devices = algorithm, []

    def __getattr__(self, name):
        return getattr(self.algorithm, name)

    def client_init(self, bcast, cohort):
        self.devices.append(cohort.client_rows.device.type)
        return self.algorithm.client_init(bcast, cohort)


@pytest.mark.parametrize("name", ["scaffold", "fedlaavg"])
def test_per_client_state_stays_on_the_gpu(name, data):
    hyper, changes = CASES[name]
    cfg = dataclasses.replace(SimulationConfig(rounds=3, clients_per_round=5, local_epochs=1, batch_size=10,
                                               seed=5, device="cuda", checkpoint_every=10_000), **changes)
    wrapped = _RowDevices(build_algorithm(name, **({"lr": 0.05} | hyper)))
    simulate(cfg, data, build_model("mclr", data.feature_shape, data.num_classes), wrapped)
    assert wrapped.devices == ["cuda"] * 3

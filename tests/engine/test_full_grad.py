"""The full local gradient (Cohort.full_grad, kernel.client_grads) read from the stored training arrays: every
kernel equals its own segment_grads on the gathered rows and the per-client autograd reference; the mclr
kernel, which reads each client's contiguous rows in place, gives the very numbers of the gathered path, for
one call and for a whole FedProxVR run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.algorithms.fedproxvr import FedProxVR
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.kernels import KERNELS, MclrKernel, generic
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import build_model, mclr
from tests.engine.test_kernels import CASES, MODELS, _in_dtype, _inputs, _reference_grad, _theta

SIZES = np.array([3, 0, 4, 1, 3])  # client 1 has no training data
COHORT = np.array([4, 1, 0, 3])  # a permuted subset, with the empty client; client 2 not in the cohort


@pytest.mark.parametrize("model_name,kernel_name", CASES, ids=[f"{m}-{k}" for m, k in CASES])
def test_client_grads_equal_the_gathered_segments_and_the_reference(model_name, kernel_name):
    model = _in_dtype(MODELS[model_name], torch.float64)
    kernel = KERNELS[kernel_name](model)
    offsets = np.concatenate([[0], np.cumsum(SIZES)])
    x, y = _inputs(model, int(offsets[-1]), torch.Generator().manual_seed(3), torch.float64)
    theta = _theta(model, len(COHORT), torch.float64)
    got = kernel.client_grads(theta, x, y, offsets, COHORT)
    assert got.shape == theta.shape
    idx, seg, counts = generic.client_segments(offsets, COHORT, x.device)
    assert idx.tolist() == [8, 9, 10, 0, 1, 2, 7] and counts.tolist() == [3, 0, 3, 1]
    assert torch.equal(got, kernel.segment_grads(theta, x[idx], y[idx], seg, counts))
    for k, c in enumerate(COHORT):
        rows = slice(offsets[c], offsets[c + 1])
        if SIZES[c]:
            torch.testing.assert_close(got[k], _reference_grad(model, theta[k], x[rows], y[rows]), rtol=0, atol=1e-10)
        else:
            assert not got[k].any()


def _fashion_shaped(clients: int, total: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Inputs of Fashion-MNIST's shape (784 standardised pixels, 10 classes) in ``clients`` contiguous blocks of
    unequal, power-law sizes summing to ``total``."""
    rng = np.random.default_rng(seed)
    weights = rng.pareto(1.5, clients) + 0.05
    sizes = np.maximum(1, np.floor(weights / weights.sum() * total)).astype(np.int64)
    sizes[0] += total - sizes.sum()
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(total, 784, generator=g)
    y = torch.randint(0, 10, (total,), generator=g)
    return x, y, np.concatenate([[0], np.cumsum(sizes)])


def test_mclr_in_place_rows_give_the_gathered_numbers_bit_for_bit():
    """float32 at Fashion-MNIST's row width, clients at every offset (one row of 784 floats is 3,136 bytes): the
    same products on the same values, read in place or gathered, round the same way."""
    kernel = MclrKernel(mclr(784, 10))
    x, y, offsets = _fashion_shaped(40, 3000, seed=0)
    cohort = np.random.default_rng(1).permutation(40)[:30]
    theta = 0.05 * torch.randn(len(cohort), kernel.model.num_params, generator=torch.Generator().manual_seed(2))
    got = kernel.client_grads(theta, x, y, offsets, cohort)
    assert got.abs().max() > 1e-3
    assert torch.equal(got, generic.client_grads(kernel, theta, x, y, offsets, cohort))


@pytest.mark.parametrize("estimator", ["svrg", "sarah"])
def test_a_fedproxvr_run_is_the_same_whether_rows_are_read_in_place_or_gathered(monkeypatch, estimator):
    ds = generate_synthetic(1, 1, num_devices=8, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)
    cfg = SimulationConfig(rounds=3, clients_per_round=5, batch_size=10, local_steps=3, seed=5, device="cpu",
                           kernel="mclr", checkpoint_every=10_000)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    algorithm = FedProxVR(lr=0.05, mu=0.1, tau=4, estimator=estimator)
    in_place = simulate(cfg, ds, model, algorithm)
    monkeypatch.setattr(MclrKernel, "client_grads", generic.client_grads)  # the gathered path
    gathered = simulate(cfg, ds, model, algorithm)
    assert in_place.param_digest == gathered.param_digest
    assert not torch.equal(in_place.theta, torch.zeros_like(in_place.theta))

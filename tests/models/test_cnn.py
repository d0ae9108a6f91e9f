"""The small CNN: vmap'd batched gradients and segment gradients against per-client autograd of its loss,
with padding, and the engine's two local paths agreeing on it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from fedbench.algorithms import FedAvg
from fedbench.engine import local
from fedbench.models import build_model, cnn
from fedbench.models.cnn import SmallCNN, tutorial_cnn
from fedbench.seeding import torch_generator

MODEL = SmallCNN()


def _autograd(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    th = theta.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(MODEL.loss(th, x, y), th)
    return g


def _cohort(dtype, k=3, b=4):
    """k clients with B=4 batch slots; valid samples 4, 2 and 1 (partial batches); padding holds junk."""
    g = torch.Generator().manual_seed(1)
    theta = torch.stack([MODEL.init(torch_generator(0, -1, "init", i)) for i in range(k)]).to(dtype)
    x = torch.randn(k, b, 3, 32, 32, generator=g, dtype=dtype)
    y = torch.randint(0, 10, (k, b), generator=g)
    valid = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.bool)[:k]
    return theta, x, y, valid


def _weights(valid, dtype):
    w = valid.to(dtype)
    return (w / w.sum(1, keepdim=True)).unsqueeze(-1)


def test_parameter_count_layout_and_init():
    assert MODEL.num_params == 62_006  # the PyTorch tutorial CNN (FedLaAvg's "CPCFF")
    net = tutorial_cnn()
    assert sum(p.numel() for p in net.parameters()) == MODEL.num_params
    theta = MODEL.init(torch_generator(0, -1, "init"))
    assert theta.dtype == torch.float32 and theta.shape == (MODEL.num_params,)
    assert torch.equal(theta, MODEL.init(torch_generator(0, -1, "init")))
    assert not torch.equal(theta, MODEL.init(torch_generator(1, -1, "init")))
    conv1 = theta[: 6 * 75]  # uniform in +-1/sqrt(fan_in), fan_in = 3 * 5 * 5
    assert conv1.abs().max() <= 75 ** -0.5 and conv1.abs().max() > 0.9 * 75 ** -0.5
    # the flat layout is the module's parameter order: same logits as the nn.Module loaded with theta
    torch.nn.utils.vector_to_parameters(theta, net.parameters())
    x = torch.randn(5, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(MODEL.logits(theta, x), net(x))


def test_flattened_inputs_and_build_model():
    assert build_model("cnn", (3, 32, 32), 10) == MODEL
    assert build_model("cnn", (3072,), 10) == MODEL
    with pytest.raises(ValueError, match="32x32 images"):
        build_model("cnn", (1, 28, 28), 10)
    theta = MODEL.init(torch_generator(0, -1, "init"))
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 1, 2, 3])
    torch.testing.assert_close(MODEL.loss(theta, x.flatten(1), y), MODEL.loss(theta, x, y))
    losses, correct = MODEL.per_sample(theta, x, y)
    torch.testing.assert_close(losses.mean(), MODEL.loss(theta, x, y))
    assert torch.equal(correct, MODEL.logits(theta, x).argmax(1) == y)


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-10), (torch.float32, 2e-6)])
@pytest.mark.parametrize("cpu_vmap_samples", [cnn.CPU_VMAP_SAMPLES, 4], ids=["one_chunk", "chunk_per_client"])
def test_batched_grad_equals_autograd_per_client_with_padding(dtype, atol, cpu_vmap_samples, monkeypatch):
    monkeypatch.setattr(cnn, "CPU_VMAP_SAMPLES", cpu_vmap_samples)
    theta, x, y, valid = _cohort(dtype)
    w = _weights(valid, dtype)
    target = F.one_hot(y, 10).to(dtype) * w
    got = MODEL.batched_grad(theta, MODEL.prepare_inputs(x), target, w)
    assert got.shape == theta.shape
    for k in range(len(theta)):
        want = _autograd(theta[k], x[k][valid[k]], y[k][valid[k]])
        torch.testing.assert_close(got[k], want, rtol=0, atol=atol)
    assert got.abs().max() > 1e-3  # not trivially zero


def test_segment_grads_and_losses_equal_per_segment_autograd():
    g = torch.Generator().manual_seed(2)
    counts = torch.tensor([3, 1, 5])
    segment = torch.tensor([2, 0, 2, 1, 0, 2, 2, 0, 2])  # unsorted segment ids
    x = torch.randn(len(segment), 3, 32, 32, generator=g, dtype=torch.float64)
    y = torch.randint(0, 10, (len(segment),), generator=g)
    theta = torch.stack([MODEL.init(torch_generator(0, -1, "init", i)) for i in range(3)]).double()
    got = MODEL.segment_grads(theta, x, y, segment, counts)
    losses = MODEL.segment_losses(theta, x, y, segment, counts)
    for m in range(3):
        sel = segment == m
        torch.testing.assert_close(got[m], _autograd(theta[m], x[sel], y[sel]), rtol=0, atol=1e-10)
        torch.testing.assert_close(losses[m], MODEL.loss(theta[m], x[sel], y[sel]), rtol=0, atol=1e-10)
    shared = MODEL.segment_losses(theta[0], x, y, segment, counts)
    torch.testing.assert_close(shared[1], MODEL.loss(theta[0], x[segment == 1], y[segment == 1]))


def test_engine_vectorized_path_equals_reference_loop_on_the_cnn():
    """Unequal steps (3, 2, 1) and a partial batch: run_vectorized against the per-client autograd loop."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(12, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (12,), generator=g)
    index = torch.tensor([
        [[0, 1, 2], [3, 4, 5], [6, -1, -1]],
        [[7, 8, 9], [10, -1, -1], [-1, -1, -1]],
        [[11, 0, 4], [-1, -1, -1], [-1, -1, -1]],
    ])
    data = local.CohortData(x=x, y=y, num_classes=10, index=index, steps=np.array([3, 2, 1]))
    theta0 = MODEL.init(torch_generator(0, -1, "init"))
    alg = FedAvg(lr=0.1)
    start = theta0.expand(3, -1).clone()
    vec = local.run_vectorized(alg, MODEL, theta0, start.clone(), data)
    ref = local.run_reference(alg, MODEL, theta0, start.clone(), data)
    torch.testing.assert_close(vec, ref, rtol=0, atol=1e-6)
    assert float((vec - start).abs().max()) > 1e-3

"""Multinomial logistic regression: the hand-written batched and per-segment gradients against autograd."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from fedbench.models import build_model
from fedbench.models.linear import MultinomialLogisticRegression
from fedbench.seeding import torch_generator

D, C = 5, 4
MODEL = MultinomialLogisticRegression(in_features=D, num_classes=C)


def _autograd(theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    th = theta.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(MODEL.loss(th, x, y), th)
    return g


def _explicit_loss(theta, x, y):
    """Mean cross-entropy written out, to check MODEL.loss's parameter layout [W (d x C) row-major, b]."""
    w, b = theta[: D * C].reshape(D, C), theta[D * C:]
    z = x @ w + b
    return (torch.logsumexp(z, dim=1) - z[torch.arange(len(y)), y]).mean()


def test_loss_layout_and_value():
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(MODEL.num_params, generator=g, dtype=torch.float64)
    x = torch.randn(6, D, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 3, 1, 2, 2, 0])
    assert MODEL.num_params == D * C + C
    torch.testing.assert_close(MODEL.loss(theta, x, y), _explicit_loss(theta, x, y), rtol=0, atol=1e-12)
    losses, correct = MODEL.per_sample(theta, x, y)
    torch.testing.assert_close(losses.mean(), _explicit_loss(theta, x, y), rtol=0, atol=1e-12)
    z = x @ theta[: D * C].reshape(D, C) + theta[D * C:]
    assert torch.equal(correct, z.argmax(1) == y)


def test_init_is_glorot_uniform_with_zero_bias_and_seeded():
    model = MultinomialLogisticRegression(in_features=60, num_classes=10)
    theta = model.init(torch_generator(0, -1, "init"))
    assert theta.dtype == torch.float32 and theta.shape == (610,)
    limit = math.sqrt(6.0 / 70)
    w = theta[:600]
    assert w.abs().max() <= limit and w.abs().max() > 0.9 * limit
    assert abs(float(w.mean())) < 0.03 and float(w.std()) == pytest.approx(limit / math.sqrt(3), rel=0.1)
    assert torch.equal(theta[600:], torch.zeros(10))
    assert torch.equal(theta, model.init(torch_generator(0, -1, "init")))
    assert not torch.equal(theta, model.init(torch_generator(1, -1, "init")))


def test_prepare_inputs_appends_a_column_of_ones():
    x = torch.arange(24.0).reshape(2, 3, 4)
    out = MODEL.prepare_inputs(x)
    assert out.shape == (2, 3, 5)
    assert torch.equal(out[..., :4], x) and torch.equal(out[..., 4], torch.ones(2, 3))


def _cohort(dtype):
    """3 clients, batch slots B=4, valid samples 4, 2 and 1 (partial batches); padding rows hold junk.
    ``batched_grad`` takes the inputs as the vectorized path feeds them (``prepare_inputs``)."""
    g = torch.Generator().manual_seed(1)
    k, b = 3, 4
    theta = torch.randn(k, MODEL.num_params, generator=g, dtype=dtype)
    x = torch.randn(k, b, D, generator=g, dtype=dtype) * 2
    y = torch.randint(0, C, (k, b), generator=g)
    valid = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 0]], dtype=torch.bool)
    return theta, x, y, valid


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_batched_grad_equals_autograd_per_client(dtype, atol):
    theta, x, y, valid = _cohort(dtype)
    weight = valid.to(dtype)
    weight = (weight / weight.sum(1, keepdim=True)).unsqueeze(-1)
    target = F.one_hot(y, C).to(dtype) * weight
    got = MODEL.batched_grad(theta, MODEL.prepare_inputs(x), target, weight)
    assert got.shape == theta.shape
    for i in range(len(theta)):
        expected = _autograd(theta[i].double(), x[i][valid[i]].double(), y[i][valid[i]])
        torch.testing.assert_close(got[i].double(), expected, rtol=0, atol=atol)


def test_batched_grad_ignores_padding_rows():
    theta, x, y, valid = _cohort(torch.float64)
    weight = valid.double()
    weight = (weight / weight.sum(1, keepdim=True)).unsqueeze(-1)
    target = F.one_hot(y, C).double() * weight
    before = MODEL.batched_grad(theta, MODEL.prepare_inputs(x), target, weight)
    x2 = torch.where(valid.unsqueeze(-1), x, torch.full_like(x, 1e3))
    y2 = torch.where(valid, y, (y + 1) % C)
    target2 = F.one_hot(y2, C).double() * weight
    assert torch.equal(MODEL.batched_grad(theta, MODEL.prepare_inputs(x2), target2, weight), before)


def test_batched_grad_does_not_modify_inputs():
    theta, x, y, valid = _cohort(torch.float64)
    weight = (valid.double() / valid.sum(1, keepdim=True)).unsqueeze(-1)
    target = F.one_hot(y, C).double() * weight
    x = MODEL.prepare_inputs(x)
    copies = [t.clone() for t in (theta, x, target, weight)]
    MODEL.batched_grad(theta, x, target, weight)
    for t, c in zip((theta, x, target, weight), copies):
        assert torch.equal(t, c)


@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-12), (torch.float32, 2e-6)])
def test_segment_grads_equal_per_segment_autograd(dtype, atol):
    g = torch.Generator().manual_seed(2)
    m, n = 4, 11
    theta = torch.randn(m, MODEL.num_params, generator=g, dtype=dtype)
    x = torch.randn(n, D, generator=g, dtype=dtype)
    y = torch.randint(0, C, (n,), generator=g)
    # interleaved segment ids; segment 2 is empty
    segment = torch.tensor([0, 1, 0, 3, 3, 1, 0, 3, 1, 1, 0])
    counts = torch.bincount(segment, minlength=m)
    assert counts.tolist() == [4, 4, 0, 3]
    got = MODEL.segment_grads(theta, x, y, segment, counts)
    assert got.shape == (m, MODEL.num_params)
    for s in range(m):
        rows = segment == s
        if rows.any():
            expected = _autograd(theta[s].double(), x[rows].double(), y[rows])
            torch.testing.assert_close(got[s].double(), expected, rtol=0, atol=atol)
        else:
            assert torch.equal(got[s], torch.zeros(MODEL.num_params, dtype=dtype))


def test_build_model():
    assert build_model("mclr", (60,), 10) == MultinomialLogisticRegression(60, 10)
    with pytest.raises(ValueError, match="unknown model 'resnet'"):
        build_model("resnet", (60,), 10)


@pytest.mark.parametrize("shared", [True, False], ids=["one_model", "model_per_segment"])
def test_segment_losses_equal_per_segment_mean_loss(shared):
    g = torch.Generator().manual_seed(3)
    m, n = 4, 11
    theta = torch.randn(MODEL.num_params if shared else (m, MODEL.num_params), generator=g, dtype=torch.float64)
    x = torch.randn(n, D, generator=g, dtype=torch.float64)
    y = torch.randint(0, C, (n,), generator=g)
    segment = torch.tensor([0, 1, 0, 3, 3, 1, 0, 3, 1, 1, 0])  # segment 2 is empty
    counts = torch.bincount(segment, minlength=m)
    got = MODEL.segment_losses(theta, x, y, segment, counts)
    assert got.shape == (m,)
    for s in range(m):
        rows = segment == s
        th = theta if shared else theta[s]
        expected = MODEL.loss(th, x[rows], y[rows]) if rows.any() else torch.tensor(0.0, dtype=torch.float64)
        torch.testing.assert_close(got[s], expected, rtol=0, atol=1e-12)

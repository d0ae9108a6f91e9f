"""Multinomial logistic regression: theta's layout [W (d x C) row-major, b], Glorot init, the builder."""

from __future__ import annotations

import math

import pytest
import torch

from fedbench.models import build_model, mclr
from fedbench.seeding import torch_generator

D, C = 5, 4
MODEL = mclr(D, C)


def _explicit_loss(theta, x, y):
    w, b = theta[: D * C].reshape(D, C), theta[D * C:]
    z = x @ w + b
    return (torch.logsumexp(z, dim=1) - z[torch.arange(len(y)), y]).mean()


def test_loss_layout_and_value():
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(MODEL.num_params, generator=g, dtype=torch.float64)
    x = torch.randn(6, D, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 3, 1, 2, 2, 0])
    assert MODEL.num_params == D * C + C
    torch.testing.assert_close(MODEL.loss_fn(theta, x, y), _explicit_loss(theta, x, y), rtol=0, atol=1e-12)
    z = x @ theta[: D * C].reshape(D, C) + theta[D * C:]
    assert torch.equal(MODEL.correct(MODEL.forward(theta, x), y), z.argmax(1) == y)


def test_without_bias_and_with_image_inputs():
    m = mclr(12, 3, bias=False)
    assert m.num_params == 36 and m != mclr(12, 3)
    theta = torch.randn(36, generator=torch.Generator().manual_seed(1))
    x = torch.randn(2, 3, 2, 2, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(m.forward(theta, x), x.flatten(1) @ theta.view(12, 3))


def test_init_is_glorot_uniform_with_zero_bias_and_seeded():
    model = mclr(60, 10)
    theta = model.init(torch_generator(0, -1, "init"))
    assert theta.dtype == torch.float32 and theta.shape == (610,)
    limit = math.sqrt(6.0 / 70)
    w = theta[:600]
    assert w.abs().max() <= limit and w.abs().max() > 0.9 * limit
    assert abs(float(w.mean())) < 0.03 and float(w.std()) == pytest.approx(limit / math.sqrt(3), rel=0.1)
    assert torch.equal(theta[600:], torch.zeros(10))
    assert torch.equal(theta, model.init(torch_generator(0, -1, "init")))
    assert not torch.equal(theta, model.init(torch_generator(1, -1, "init")))


def test_build_model():
    assert build_model("mclr", (60,), 10) == mclr(60, 10)
    assert build_model("mclr", (1, 28, 28), 10) == mclr(784, 10)
    with pytest.raises(ValueError, match="unknown model 'resnet'"):
        build_model("resnet", (60,), 10)

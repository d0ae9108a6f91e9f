"""fedbench.ops: the fused proximal SGD step is the composed one, bit for bit."""

from __future__ import annotations

import torch

from fedbench.ops import prox_gradient, prox_sgd_step, sgd_step


def _composed(theta, grad, anchor, mu, lr):
    return sgd_step(theta, prox_gradient(grad, theta, anchor, mu), lr)


def test_prox_sgd_step_is_the_composed_step_bit_for_bit():
    """Rows of every size a stacked cohort has, mu a number or a per-row column (runs with mu 0 and 1 stacked), the
    anchor one row or a row per cohort row, float32 and float64: the same bits, and the inputs untouched."""
    g = torch.Generator().manual_seed(0)
    for rows in (1, 3, 17, 450):
        for dtype in (torch.float32, torch.float64):
            theta = torch.randn(rows, 610, generator=g, dtype=dtype)
            grad = torch.randn(rows, 610, generator=g, dtype=dtype) * 3
            for anchor in (torch.randn(610, generator=g, dtype=dtype), theta + torch.randn(rows, 610, generator=g, dtype=dtype) / 7):
                column = torch.tensor([[float(i % 2)] for i in range(rows)], dtype=dtype)
                for mu in (1.0, 0.01, 0.0, column):
                    before = [t.clone() for t in (theta, grad, anchor)]
                    out = prox_sgd_step(theta, grad, anchor, mu, 0.01)
                    assert torch.equal(out, _composed(theta, grad, anchor, mu, 0.01)), (rows, dtype, mu)
                    assert all(torch.equal(a, b) for a, b in zip(before, (theta, grad, anchor)))


def test_prox_sgd_step_falls_back_where_in_place_could_differ():
    """A float32 model with a float64 mu column promotes in the composed form; autograd needs it out of place."""
    theta = torch.ones(2, 3)
    grad = torch.full((2, 3), 0.5)
    mu = torch.tensor([[1.0], [0.5]], dtype=torch.float64)
    out = prox_sgd_step(theta, grad, torch.zeros(3), mu, 0.1)
    assert out.dtype == torch.float64 and torch.equal(out, _composed(theta, grad, torch.zeros(3), mu, 0.1))
    w = torch.ones(2, 3, requires_grad=True)
    prox_sgd_step(w, grad, torch.zeros(3), 1.0, 0.1).sum().backward()
    assert torch.allclose(w.grad, torch.full((2, 3), 1 - 0.1))

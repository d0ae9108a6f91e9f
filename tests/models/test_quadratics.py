"""Diagonal quadratics (samples [h, b], loss (1/2) sum_j h_j (theta_j - b_j)^2) as a spec."""

from __future__ import annotations

import torch

from fedbench.models.quadratics import diagonal_quadratics

MODEL = diagonal_quadratics(2)


def test_loss_gradient_and_float64_evaluation():
    x = torch.tensor([[1.0, 4.0, 0.5, -1.0]], dtype=torch.float64)  # h = (1, 4), b = (0.5, -1)
    theta = torch.tensor([1.5, 0.0], dtype=torch.float64, requires_grad=True)
    loss = MODEL.loss_fn(theta, x, torch.zeros(1, dtype=torch.long))
    assert loss.item() == 0.5 * (1.0 * 1.0**2 + 4.0 * 1.0**2)
    (g,) = torch.autograd.grad(loss, theta)
    torch.testing.assert_close(g, torch.tensor([1.0, 4.0], dtype=torch.float64))  # h (theta - b)
    assert MODEL.eval_dtype == torch.float64 and torch.equal(MODEL.init(torch.Generator()), torch.zeros(2))

"""Mean estimation (loss (1/2)||w - x||^2) as a spec."""

from __future__ import annotations

import torch

from fedbench.models.mean_estimation import mean_estimation

MODEL = mean_estimation(dim=3, start=0.5)


def test_init_loss_and_gradient():
    theta = MODEL.init(torch.Generator())
    assert theta.dtype == torch.float32 and torch.equal(theta, torch.full((3,), 0.5))
    x = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]], dtype=torch.float64)
    w = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    loss = MODEL.loss_fn(w, x, torch.zeros(2, dtype=torch.long))
    assert loss.item() == 0.5 * (1.0 + 4.0) / 2
    (g,) = torch.autograd.grad(loss, w)
    assert g.tolist() == [-0.5, -1.0, 0.0]  # w - mean(x)
    assert not MODEL.has_accuracy

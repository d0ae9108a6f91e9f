"""Mean estimation (loss (1/2)||w - x||^2): the batched and per-segment gradients and losses against autograd
and closed forms."""

from __future__ import annotations

import torch

from fedbench.models.mean_estimation import MeanEstimation

MODEL = MeanEstimation(dim=3, start=0.5)


def test_init_and_loss():
    theta = MODEL.init(torch.Generator())
    assert theta.dtype == torch.float32 and torch.equal(theta, torch.full((3,), 0.5))
    x = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]], dtype=torch.float64)
    w = torch.zeros(3, dtype=torch.float64)
    assert MODEL.loss(w, x, torch.zeros(2, dtype=torch.long)).item() == 0.5 * (1.0 + 4.0) / 2
    loss, correct = MODEL.per_sample(w, x, torch.zeros(2, dtype=torch.long))
    assert loss.tolist() == [0.5, 2.0] and torch.isnan(correct).all()


def test_batched_grad_is_weighted_autograd_with_padding():
    g = torch.Generator().manual_seed(0)
    theta = torch.randn(2, 3, generator=g, dtype=torch.float64)
    x = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    valid = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]], dtype=torch.float64)
    weight = (valid / valid.sum(1, keepdim=True)).unsqueeze(-1)
    got = MODEL.batched_grad(theta, MODEL.prepare_inputs(x), torch.zeros(2, 4, 1, dtype=torch.float64), weight)
    for k in range(2):
        th = theta[k].clone().requires_grad_(True)
        rows = valid[k] > 0
        (expected,) = torch.autograd.grad(MODEL.loss(th, x[k][rows], None), th)
        torch.testing.assert_close(got[k], expected, rtol=0, atol=1e-12)


def test_segment_grads_and_losses():
    x = torch.tensor([[0.0, 0, 0], [2, 0, 0], [1, 1, 1], [0, 0, 4]], dtype=torch.float64)
    segment, counts = torch.tensor([0, 0, 2, 2]), torch.tensor([2, 0, 2])
    theta = torch.tensor([[1.0, 0, 0], [9, 9, 9], [0, 0, 0]], dtype=torch.float64)
    grads = MODEL.segment_grads(theta, x, None, segment, counts)
    torch.testing.assert_close(grads, torch.tensor([[0.0, 0, 0], [0, 0, 0], [-0.5, -0.5, -2.5]], dtype=torch.float64))
    losses = MODEL.segment_losses(theta, x, None, segment, counts)
    torch.testing.assert_close(losses, torch.tensor([0.5, 0.0, 0.5 * (3 + 16) / 2], dtype=torch.float64))
    shared = MODEL.segment_losses(torch.zeros(3, dtype=torch.float64), x, None, segment, counts)
    torch.testing.assert_close(shared, torch.tensor([1.0, 0.0, 0.5 * (3 + 16) / 2], dtype=torch.float64))

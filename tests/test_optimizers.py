"""The (U, V) base optimizers against torch.optim on a stream of gradients, and their row-wise use."""

from __future__ import annotations

import pytest
import torch

from fedbench.optimizers import Adam, SGDMomentum, build_base_optimizer


@pytest.mark.parametrize("name", ["sgdm", "adam"])
def test_u_then_v_is_torch_optimizer(name):
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(5, generator=gen, dtype=torch.float64) for _ in range(6)]
    base = build_base_optimizer(name, momentum=0.8, beta1=0.7, beta2=0.95, eps=1e-4)
    x = torch.zeros(5, dtype=torch.float64)
    s = base.init(x)
    p = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    opt = (torch.optim.SGD([p], lr=0.1, momentum=0.8) if name == "sgdm"
           else torch.optim.Adam([p], lr=0.1, betas=(0.7, 0.95), eps=1e-4))
    for g in grads:
        x = x - 0.1 * base.update(g, s)
        s = base.next_state(g, s)
        p.grad = g.clone()
        opt.step()
    torch.testing.assert_close(x, p.detach(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("base", [SGDMomentum(momentum=0.9), Adam(beta1=0.9, beta2=0.99)])
def test_update_is_rowwise(base):
    s = base.next_state(torch.tensor([0.3, -1.0]), base.init(torch.zeros(2)))
    rows = torch.tensor([[1.0, 2.0], [-0.5, 0.1], [0.0, 0.0]])
    together = base.update(rows, s)
    for i in range(3):
        torch.testing.assert_close(together[i], base.update(rows[i], s))


def test_rejects_bad_hyperparameters():
    with pytest.raises(ValueError, match="momentum"):
        build_base_optimizer("sgdm", momentum=1.0)
    with pytest.raises(ValueError, match="unknown base optimizer"):
        build_base_optimizer("rmsprop")

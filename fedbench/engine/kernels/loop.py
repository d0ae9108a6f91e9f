"""The per-client loop: each row's gradient by ordinary autograd through the module, one client at a time.

The reference every other kernel is tested against, and the fastest choice where batching does not pay (CNNs
and recurrent networks on CPU, measured by ``fedbench bench``). Padding (weight 0) is dropped before the
forward pass."""

from __future__ import annotations

import torch

import fedbench.engine.kernels.generic as generic
from fedbench.models.spec import Model


class LoopKernel(generic.GenericEvaluation):
    name = "loop"

    def __init__(self, model: Model) -> None:
        self.model = model

    @staticmethod
    def supports(model: Model) -> bool:
        return True

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, y, w

    def grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(theta)
        with torch.enable_grad():
            for k in range(theta.shape[0]):
                keep = w[k] > 0
                th = theta[k].detach().requires_grad_(True)
                loss = self.model.weighted_loss(th, x[k][keep], y[k][keep], w[k][keep])
                (out[k],) = torch.autograd.grad(loss, th)
        return out

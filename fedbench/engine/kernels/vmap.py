"""The cohort's gradients with ``torch.func``: ``vmap(grad(functional_call))`` over the stacked flat
parameters, every client's loss computed on one shared module skeleton (frozen tensors shared, not batched).

Works for any model whose layers have vmap batching rules (linear, convolution, embedding, elementwise);
``nn.LSTM``/``nn.GRU`` have none (use the loop or the batched-recurrent kernel)."""

from __future__ import annotations

import torch
from torch.func import grad, vmap

import fedbench.engine.kernels.generic as generic
from fedbench.models.spec import Model

CPU_VMAP_SAMPLES = 512  # on CPU, vmap runs over this many samples' clients at a time: larger activations
# (over ~32 MB) are fresh mmap allocations whose page faults cost more than the arithmetic


class VmapKernel(generic.GenericEvaluation):
    name = "vmap"

    def __init__(self, model: Model) -> None:
        self.model = model
        self._grad = grad(model.weighted_loss)

    @staticmethod
    def supports(model: Model) -> bool:
        return not any(isinstance(m, torch.nn.RNNBase) for m in model.module.modules())

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, y, w

    def grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        chunk = max(1, CPU_VMAP_SAMPLES // max(1, x.shape[1])) if theta.device.type == "cpu" else None
        return vmap(self._grad, chunk_size=chunk)(theta, x, y, w)

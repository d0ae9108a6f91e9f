"""The cohort's gradients with ``torch.func``: ``vmap(grad(functional_call))`` over the stacked flat
parameters, every client's loss computed on one shared module skeleton (frozen tensors shared, not batched).

Works for any model whose layers have vmap batching rules (linear, convolution, embedding, elementwise);
``nn.LSTM``/``nn.GRU`` have none (use the loop or the batched-recurrent kernel).

Gradients are taken with respect to the module's parameter tensors (views of the rows), not the flat rows, and
concatenated: the same bits as differentiating the flat rows (whose slices' backward fills and sums a zero
gradient of every whole row: each element reads g + 0.0, which :meth:`VmapKernel.grad` reproduces), without
that traffic (issue 20; fedbench.engine.kernels.loop). This assumes every parameter tensor enters the loss, as in
every model here (tests/engine/test_kernels.py compares the bits for each)."""

from __future__ import annotations

import torch
from torch.func import grad, vmap

import fedbench.engine.kernels.generic as generic
import fedbench.engine.kernels.loop as loop
from fedbench.models.spec import Model

CPU_VMAP_SAMPLES = 512  # on CPU, vmap runs over this many samples' clients at a time: larger activations
# (over ~32 MB) are fresh mmap allocations whose page faults cost more than the arithmetic


class VmapKernel(generic.GenericEvaluation):
    name = "vmap"

    def __init__(self, model: Model) -> None:
        self.model = model

        def weighted_loss(params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor, w: torch.Tensor):
            return (model.example_losses(model.forward_params(params, x), y) * w).sum()  # Model.weighted_loss

        self._grad = grad(weighted_loss)

    @staticmethod
    def supports(model: Model) -> bool:
        return not any(isinstance(m, torch.nn.RNNBase) for m in model.module.modules())

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, y, w

    def grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        chunk = max(1, CPU_VMAP_SAMPLES // max(1, x.shape[1])) if theta.device.type == "cpu" else None
        rows, layout = theta.shape[0], self.model.layout
        params = {s.name: theta[:, s.offset: s.offset + s.numel].view(rows, *s.shape) for s in layout}
        grads = vmap(self._grad, chunk_size=chunk)(params, x, y, w)
        if len(layout) > 1 and self.model.num_params >= loop.PER_TENSOR_PLACING:
            # a large model: each tensor's g + 0.0 written into its columns in one pass (concatenating, then
            # adding 0.0 in place, passes over the [rows, P] block twice: the same bits)
            out = theta.new_empty(rows, self.model.num_params)
            for s in layout:
                torch.add(grads[s.name].reshape(rows, s.numel), 0.0, out=out[:, s.offset: s.offset + s.numel])
            return out
        out = torch.cat([grads[s.name].reshape(rows, s.numel) for s in layout], dim=1)
        return out.add_(0.0) if len(layout) > 1 else out

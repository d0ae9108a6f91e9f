"""The per-client loop: each row's gradient by ordinary autograd through the module, one client at a time.

The reference every other kernel is tested against, and the fastest choice where batching does not pay (CNNs
and recurrent networks on CPU, measured by ``fedbench bench``). Padding (weight 0) is dropped before the
forward pass.

Each row's gradient is taken with respect to the module's parameter tensors (views of the row, one autograd
leaf per tensor), not with respect to the flat row theta[k]. Differentiating the flat row is the same maths,
but autograd's backward of each slice theta[k][a:b] materializes a zero-filled gradient of the whole row and
adds the slices' gradients up: for the LEAF FEMNIST CNN (6.6 M parameters, 8 tensors) that is 8 fills and 7
additions of 26 MB per client step, 0.6 of the step's time at batch 10 on one CPU core (torch.profiler; issue 20).
The numbers are the same bit for bit: in the flat-row sum each element is its tensor's gradient plus +0.0 once
or more, which changes only a gradient of -0.0 into +0.0; :func:`_place` does exactly that (adds +0.0) when
two or more tensors receive a gradient, and copies when one does (tests/engine/test_kernels.py checks both
against differentiating the flat row, for every model).

Where the LEAF FEMNIST CNN's client step goes on one core (issue 20; ``fedbench bench --parts steps --cohorts
10,35 --min-time 3``, 2-core machine shared with other jobs, load average 3.4; peak matmul 166 GFLOP/s, copy
13 GB/s; FLOP floor of a step at batch 10: 6.1 ms; one pass over a row of weights, 26 MB: 2.0 ms):

    ms per client step (share of floor)   cohort 10      cohort 35
    gradients alone (autograd per tensor) 17.5 (0.35)    32.7 (0.19)
    + placed into [K, P] (this kernel)    21.9 (0.28)    37.4 (0.16)
    + FedAvg's update (the engine's step) 31.4 (0.19)    52.5 (0.12)
    engine round, one step per client     41.3 (0.15)    69.5 (0.09)
    in-place update (headroom only)       21.2 (0.29)    39.9 (0.15)

At batch 10 the step is bound by passes over the 26 MB of weights, not by FLOPs: the dense layer's weights are
read twice (forward, and the input gradient) and its gradient written once (3 passes, about the FLOP floor by
themselves), placing costs 2 passes, ``sgd_step`` 5 (lr * g, then theta - that: two [K, P] temporaries), the
round's broadcast to K rows and weighted mean 2 more. The convolutions run near the peak (about 4 ms). Nothing
in this kernel can remove its placing pass without changing bits (the +0.0 above costs the same pass as a
copy; MKL can return -0.0 from a product); what remains is the algorithm's update fused with the gradient
(the headroom row) and, beyond cohort 10, that no cohort's weights stay in cache. Running each client's steps
in turn to keep a row in cache was measured and gives nothing here (1.07x the time at cohorts 10 and 35).
The CIFAR CNN (62 k parameters) spends 2.6-3.0 ms a client step in every part alike: its small convolutions
are bound by per-operation overhead (0.07 of its 0.19 ms floor).
"""

from __future__ import annotations

import torch

import fedbench.engine.kernels.generic as generic
from fedbench.engine.kernels.rnn import RecurrentKernel
from fedbench.models.spec import Model


class LoopKernel(generic.GenericEvaluation):
    name = "loop"

    def __init__(self, model: Model) -> None:
        self.model = model
        # several models evaluated in one pass (generic.BATCHED_EVAL_DEVICES): a recurrent model, which vmap cannot
        # batch, through the rnn kernel's forward with the models as rows where that kernel runs it
        self._recurrent = RecurrentKernel(model) if (generic.vmap_forward(model) is None
                                                     and RecurrentKernel.supports(model)) else None

    def forward_many(self, thetas: torch.Tensor, x: torch.Tensor):
        if self._recurrent is not None:
            return self._recurrent.forward_many(thetas, x)
        return super().forward_many(thetas, x)

    def batches_models(self) -> bool:
        return self._recurrent is not None or super().batches_models()

    @staticmethod
    def supports(model: Model) -> bool:
        return True

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, y, w

    def grad(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        model, out = self.model, torch.empty_like(theta)
        padded = bool((w <= 0).any())  # no padding (the usual step): no masked copies of the inputs
        with torch.enable_grad():
            for k in range(theta.shape[0]):
                xk, yk, wk = x[k], y[k], w[k]
                if padded:
                    keep = wk > 0
                    xk, yk, wk = xk[keep], yk[keep], wk[keep]
                row = theta[k].detach()
                params = {s.name: row[s.offset: s.offset + s.numel].view(s.shape).detach().requires_grad_(True)
                          for s in model.layout}
                loss = (model.example_losses(model.forward_params(params, xk), yk) * wk).sum()  # Model.weighted_loss
                grads = torch.autograd.grad(loss, list(params.values()), allow_unused=True)
                _place(out[k], model, grads)
        return out


PER_TENSOR_PLACING = 2**20  # parameters from which each tensor's gradient is placed in one pass of its own


def _place(out_row: torch.Tensor, model: Model, grads: tuple[torch.Tensor | None, ...]) -> None:
    """Write the tensors' gradients into one flat row as autograd's gradient of the flat row reads: 0 for a
    tensor that got none, and g + 0.0 (-0.0 becomes +0.0) when more than one tensor got one. A large model's
    row is written tensor by tensor in one pass each (g + 0.0 into its slot); a small one's in two calls
    (concatenate, then + 0.0 in place), whose dispatch costs less than one call per tensor (measured on the
    FEMNIST CNN, 6.6 M parameters: 4.6 against 6.9 ms; the CIFAR CNN, 62 k: 0.08 against 0.03 ms)."""
    summed = sum(g is not None for g in grads) > 1
    if model.num_params >= PER_TENSOR_PLACING:
        for slot, g in zip(model.layout, grads):
            dest = out_row[slot.offset: slot.offset + slot.numel]
            if g is None:
                dest.zero_()
            elif summed:
                torch.add(g.reshape(-1), 0.0, out=dest)
            else:
                dest.copy_(g.reshape(-1))
        return
    torch.cat([g.reshape(-1) if g is not None else out_row.new_zeros(s.numel) for s, g in zip(model.layout, grads)],
              out=out_row)
    if summed:
        out_row.add_(0.0)

"""Mean estimation: the model is a point w in R^d and each sample's loss is (1/2)||w - x||^2.

The toy problem of two papers' illustrations: FedLaAvg's Example 1 (one-dimensional, two clients; Yan et al.,
arXiv 2002.07399 v1, section 3.1) and Delta-FL's three-Gaussian example (Pillutla et al., arXiv 2002.11223,
section 3, Figure 3). A client's objective is F_k(w) = (1/2)||w - xbar_k||^2 + (1/2) mean ||x - xbar_k||^2,
so its full-batch gradient is w - xbar_k: one full-batch step of size eta maps w - xbar_k to
(1 - eta)(w - xbar_k).

As a spec: the module returns the residual w - x and the loss is ``squared``; labels are ignored (datasets
for this model carry one class, label 0) and there is no accuracy. The start point is deterministic,
``start`` in every coordinate; the engine's init generator is not used.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from fedbench.models.spec import Model, ParamSlot


class Point(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w - x


def constant_init(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator,
                  value: float = 0.0) -> torch.Tensor:
    """theta^0 = ``value`` in every coordinate (the generator is not used)."""
    return torch.full((sum(s.numel for s in layout),), float(value), dtype=torch.float32)


def mean_estimation(dim: int, start: float = 0.0) -> Model:
    return Model(name="mean_estimation", config=(dim, float(start)), module=Point(dim), loss="squared",
                 init_fn=functools.partial(constant_init, value=float(start)))

"""Quadratic toy objectives written in closed form.

Diagonal quadratics: client losses (1/2) sum_j h_j (theta_j - b_j)^2 with the curvature h and the centre b of
each sample folded into its inputs x = [h (d), b (d)]. The SCAFFOLD quadratic experiments (Karimireddy et al.,
ICML 2020, section 7.2) and the SCAFFOLD claim study use one sample per client.

As a spec: the module returns the residual sqrt(h) (theta - b), the loss is ``squared`` (so a sample's loss is
(1/2) sum_j h_j (theta_j - b_j)^2), no accuracy. Evaluation runs in float64: f - f* is a small difference of
large numbers. theta^0 = 0.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from fedbench.models.mean_estimation import constant_init
from fedbench.models.spec import Model, ParamSlot


class DiagonalQuadratic(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.theta = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, b = x[..., : self.dim], x[..., self.dim:]
        return h.sqrt() * (self.theta - b)


def _zeros(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    return torch.zeros(module.dim)


def diagonal_quadratics(dim: int) -> Model:
    return Model(name="diagonal_quadratics", config=(dim,), module=DiagonalQuadratic(dim), loss="squared",
                 eval_dtype=torch.float64, init_fn=_zeros)


class ScalarQuadratic(nn.Module):
    """x = [h, g]: the loss (1/2) h theta^2 + g theta itself (a ``value`` loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.empty(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x[:, 0] * self.theta[0] ** 2 + x[:, 1] * self.theta[0]


def scalar_quadratics(x0: float) -> Model:
    """One-dimensional quadratics (1/2) h theta^2 + g theta with the curvature h and linear coefficient g of each
    sample as its inputs x = [h, g]: the SCAFFOLD section 7.2 instance (f_1 = mu x^2 + G x, f_2 = -G x), started at
    theta^0 = x0. Evaluation in float64 (f_1 + f_2 cancels the +-G terms)."""

    return Model(name="scalar_quadratics", config=(float(x0),), module=ScalarQuadratic(), loss="value",
                 eval_dtype=torch.float64, init_fn=functools.partial(constant_init, value=float(x0)))

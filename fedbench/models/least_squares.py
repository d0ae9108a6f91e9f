"""Linear least squares: each sample's inputs x = [features (d), target], the module returns the residual
w . features + b - target and the loss is ``squared``, so a sample's loss is (1/2)(w . features + b - target)^2.

The SCAFFOLD talk slides' "Quick demo" (linear regression on UCI concrete; fedbench.studies.scaffold_concrete). The
target is folded into the inputs as in the diagonal quadratics (fedbench.models.quadratics), so the labels are unused
(one class, label 0). theta^0 = 0 (w and b); evaluation in float64: the 1%-of-optimum target is read from losses of
about 50 (MPa^2) whose float32 rounding is far below it, and float64 keeps the reading exact to the digits reported.
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from fedbench.models.mean_estimation import constant_init
from fedbench.models.spec import Model


class LinearResidual(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim
        self.w = nn.Parameter(torch.empty(dim))
        self.b = nn.Parameter(torch.empty(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, : self.dim] @ self.w + self.b[0] - x[:, self.dim]


def least_squares(dim: int) -> Model:
    """Linear regression on ``dim`` features with an intercept (dim + 1 parameters), started at zero."""
    return Model(name="least_squares", config=(dim,), module=LinearResidual(dim), loss="squared",
                 eval_dtype=torch.float64, init_fn=functools.partial(constant_init, value=0.0))

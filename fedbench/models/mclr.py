"""Multinomial logistic regression (softmax regression): the model of every FedProx convex experiment (MNIST
784 -> 10, FEMNIST 784 -> 26, the synthetic data 60 -> 10; FedProx flearn/models/*/mclr.py), of SCAFFOLD's
EMNIST experiments (logistic regression 784 -> 47, section 7.1) and, without bias, Delta-FL's EMNIST linear
model (784 x 62; simplicial-fl models/femnist/linear.py).

Parameters: theta = [W.flatten() (d x C, row-major), b (C)], the layout of the authors' TF code (x W + b).
The engine's fast kernel for it is fedbench.engine.kernels.mclr (hand-written batched gradients).

Deviations from the FedProx code: the authors declare an L2 regularizer of 0.001 that is never added to the
optimised loss; we leave it out as well. Their init is Glorot-uniform for W and zeros for b, as here, from our
own seeded generator. Inputs of any shape are flattened (images [C, H, W] become C*H*W features).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from fedbench.models.spec import Model, ParamSlot


class SoftmaxRegression(nn.Module):
    def __init__(self, in_features: int, num_classes: int, bias: bool = True) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, num_classes))  # x @ W, as the authors' TF code
        self.bias = nn.Parameter(torch.empty(num_classes)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(1)
        return torch.addmm(self.bias, x, self.weight) if self.bias is not None else x @ self.weight


def glorot_init(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    """Glorot-uniform W (limit sqrt(6 / (d + C))), zero b, drawn in float64, as float32."""
    d, c = module.weight.shape
    limit = math.sqrt(6.0 / (d + c))
    w = (torch.rand(d * c, generator=generator, dtype=torch.float64) * 2 - 1) * limit
    parts = [w] + ([torch.zeros(c, dtype=torch.float64)] if module.bias is not None else [])
    return torch.cat(parts).float()


def mclr(in_features: int, num_classes: int, bias: bool = True) -> Model:
    """Softmax regression from ``in_features`` inputs to ``num_classes`` classes (with a bias by default)."""
    return Model(name="mclr", config=(in_features, num_classes, bias),
                 module=SoftmaxRegression(in_features, num_classes, bias), loss="softmax_ce", init_fn=glorot_init)

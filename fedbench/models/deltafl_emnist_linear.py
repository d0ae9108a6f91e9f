"""Delta-FL's EMNIST linear model (Pillutla et al., appendix C.1.1; code krishnap25/simplicial-fl
models/femnist/erm_log_reg.py): softmax regression W in R^{784 x 62} without bias, W^0 = 0.

48,608 parameters, the authors' count. It is fedbench.models.mclr without bias (so the hand-written mclr kernel
runs it), with the authors' zero init instead of mclr's Glorot init. (Models are equal by name and config, so
it equals ``mclr(784, 62, bias=False)``: the init is not part of a model's identity.)

Deviations and notes:
1. Their loss adds (lambda/2)||W||^2 (lambda from a grid, 1e-9 for FedAvg in their scripts) and a constant 1e-6
   outside the log; the regulariser is the training configuration's, not the model's, and the constant
   changes no gradient: neither is here.
2. Their features are divided by stored per-feature constants: that is the dataset's preparation.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from fedbench.models.mclr import mclr
from fedbench.models.spec import Model, ParamSlot


def _zeros(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    return torch.zeros(sum(s.numel for s in layout))


def deltafl_emnist_linear(in_features: int = 784, num_classes: int = 62) -> Model:
    return dataclasses.replace(mclr(in_features, num_classes, bias=False), init_fn=_zeros)

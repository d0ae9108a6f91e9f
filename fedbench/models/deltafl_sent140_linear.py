"""Delta-FL's Sent140 linear model (Pillutla et al., appendix C.1.2; code krishnap25/simplicial-fl
models/sent140/erm_log_reg.py): logistic regression on a tweet's mean GloVe 6B 50d word vector.

    features [n, 50] -> w . x (50 weights, no bias) -> one logit; sigmoid cross-entropy
    (their loss y log(1 + e^-s) + (1 - y) log(1 + e^s) is exactly BCE with logits)

50 trainable parameters, the authors' count; w^0 = 0 as in their code.

The features are the dataset's: the authors average the embeddings of every word of the tweet (unknown words
map to the table's last row) and divide by stored per-feature constants (models/utils/model_utils.py,
main.py); that is data preparation, not part of the model.

Deviations and notes:
1. Their loss adds (lambda/2)||w||^2 (lambda = 1e-6 in the scripts); a regulariser is the training
   configuration's, not the model's, and is not here.
2. The authors compute in float64 NumPy; the engine trains in float32.
"""

from __future__ import annotations

import torch
from torch import nn

from fedbench.models.spec import Model, ParamSlot

NAME = "deltafl_sent140_linear"


class LinearLogit(nn.Module):
    def __init__(self, in_features: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(1) @ self.weight


def _zeros(module: nn.Module, layout: tuple[ParamSlot, ...], generator: torch.Generator) -> torch.Tensor:
    return torch.zeros(sum(s.numel for s in layout))


def deltafl_sent140_linear(in_features: int = 50) -> Model:
    with torch.device("meta"):
        net = LinearLogit(in_features)
    return Model(name=NAME, config=(in_features,), module=net, loss="sigmoid_ce", init_fn=_zeros)


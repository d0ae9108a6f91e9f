"""The per-example losses a model can own, and per-example correctness where accuracy is defined.

- ``softmax_ce``: outputs are logits [n, C], labels int64 [n]; cross-entropy; correct when the arg-max is
  the label (the FedProx, LEAF, SCAFFOLD, Delta-FL and FedLaAvg classifiers).
- ``sigmoid_ce``: outputs are one logit per example ([n] or [n, 1]), labels 0/1; binary cross-entropy on
  the sigmoid; correct when the logit's sign matches the label (FedProx's and Delta-FL's Sent140 models:
  one sigmoid output).
- ``squared``: outputs are residuals r [n, ...] computed by the module (prediction minus target, the target
  folded into the inputs); loss (1/2)||r||^2 (mean estimation, the diagonal quadratics). No accuracy.
- ``value``: the module's output is each example's loss itself ([n]): toy objectives written in closed form
  (the SCAFFOLD section 7.2 quadratics, (1/2) h x^2 + g x). No accuracy.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def per_example(kind: str, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if kind == "softmax_ce":
        return F.cross_entropy(outputs, y, reduction="none")
    if kind == "sigmoid_ce":
        logits = outputs.reshape(len(y))
        return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype), reduction="none")
    if kind == "squared":
        return 0.5 * outputs.flatten(1).pow(2).sum(1) if outputs.dim() > 1 else 0.5 * outputs.pow(2)
    if kind == "value":
        return outputs.reshape(len(outputs))
    raise ValueError(f"unknown loss {kind!r}; allowed: softmax_ce, sigmoid_ce, squared, value")


def correct(kind: str, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if kind == "softmax_ce":
        return outputs.argmax(-1) == y
    if kind == "sigmoid_ce":
        return (outputs.reshape(len(y)) > 0) == (y > 0)
    if kind in ("squared", "value"):
        return torch.full((len(outputs),), float("nan"), dtype=outputs.dtype, device=outputs.device)
    raise ValueError(f"unknown loss {kind!r}; allowed: softmax_ce, sigmoid_ce, squared, value")

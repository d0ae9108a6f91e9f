"""The hand-written kernel of the closed-form toy objectives: diagonal quadratics and scalar quadratics
(fedbench.models.quadratics) and mean estimation (fedbench.models.mean_estimation).

Their gradients are one line each, so a local step is three elementwise operations and a sum, where
``vmap(grad(...))`` pays about 0.8 ms of functorch dispatch per step on the CPU (the SCAFFOLD quadratic study's
300-round runs took 3.2 s each through vmap, 0.25 s through this kernel). Per sample:

- diagonal quadratics, x = [h, b]:  loss (1/2) sum_j h_j (theta_j - b_j)^2,  gradient h (theta - b);
- scalar quadratics, x = [h, g]:    loss (1/2) h theta^2 + g theta,          gradient h theta + g;
- mean estimation, x:               loss (1/2) ||theta - x||^2,              gradient theta - x.

Evaluation goes through the model's own forward (fedbench.engine.kernels.generic), as in every kernel.
"""

from __future__ import annotations

import torch

import fedbench.engine.kernels.generic as generic
from fedbench.models.spec import Model

MODELS = ("diagonal_quadratics", "scalar_quadratics", "mean_estimation")


class QuadraticKernel(generic.GenericEvaluation):
    name = "quadratic"

    def __init__(self, model: Model) -> None:
        if not self.supports(model):
            raise ValueError(f"the quadratic kernel runs only {', '.join(MODELS)}, not {model.name}")
        self.model = model

    @staticmethod
    def supports(model: Model) -> bool:
        return model.name in MODELS

    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batch(self, x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x, w  # labels carry nothing for these objectives

    def grad(self, theta: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """Each row's gradient sum_b w_b grad loss_b(theta_row): theta [R, P], x [R, B, ...], w [R, B]."""
        if self.model.name == "scalar_quadratics":
            h, g = x[..., 0], x[..., 1]  # [R, B]
            return (w * (h * theta[:, :1] + g)).sum(1, keepdim=True)
        if self.model.name == "mean_estimation":
            return (w.unsqueeze(-1) * (theta.unsqueeze(1) - x)).sum(1)
        d = theta.shape[1]
        h, b = x[..., :d], x[..., d:]
        return (w.unsqueeze(-1) * h * (theta.unsqueeze(1) - b)).sum(1)

"""Mean estimation: the model is a point w in R^d and each sample's loss is (1/2)||w - x||^2.

The toy problem of two papers' illustrations: FedLaAvg's Example 1 (one-dimensional, two clients; Yan et al.,
arXiv 2002.07399 v1, section 3.1) and Delta-FL's three-Gaussian example (Pillutla et al., arXiv 2002.11223,
section 3, Figure 3). A client's objective is F_k(w) = (1/2)||w - xbar_k||^2 + (1/2) mean ||x - xbar_k||^2,
so its full-batch gradient is w - xbar_k: one full-batch step of size eta maps w - xbar_k to (1 - eta)(w - xbar_k).

The engine's interface for a model, as MultinomialLogisticRegression has it. Labels are ignored (datasets
for this model carry one class, label 0); there is no accuracy, so ``per_sample`` reports NaN for it. The
start point is deterministic, ``start`` in every coordinate; the engine's init generator is not used.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class MeanEstimation:
    dim: int
    start: float = 0.0  # w_0 in every coordinate

    @property
    def num_params(self) -> int:
        return self.dim

    def init(self, generator: torch.Generator) -> torch.Tensor:
        return torch.full((self.dim,), self.start, dtype=torch.float32)

    def loss(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Mean of (1/2)||theta - x||^2 over the batch x [n, d] (the reference path differentiates this)."""
        return 0.5 * ((x - theta) ** 2).sum(1).mean()

    def prepare_inputs(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def batched_grad(self, theta: torch.Tensor, x: torch.Tensor, target: torch.Tensor,
                     weight: torch.Tensor) -> torch.Tensor:
        """sum_b weight_b (theta - x_b) for each client: theta [K, P], x [K, B, d], weight [K, B, 1] summing to 1
        over each client's valid samples (0 on padding). ``target`` (one-hot labels) is unused."""
        return theta * weight.sum(1) - (weight * x).sum(1)

    def per_sample(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample loss of one model [P] on x [n, d], and NaN for correctness (no classes to get right)."""
        loss = 0.5 * ((x - theta) ** 2).sum(1)
        return loss, torch.full_like(loss, float("nan"))

    def _segment_means(self, x: torch.Tensor, segment: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        total = torch.zeros(len(counts), x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, segment, x)
        return total / counts.clamp(min=1).unsqueeze(1).to(x.dtype)

    def segment_grads(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                      counts: torch.Tensor) -> torch.Tensor:
        """Full-data gradient theta_m - xbar_m of each segment (0 for an empty one). theta [M, P]."""
        grad = theta - self._segment_means(x, segment, counts)
        return grad * (counts > 0).unsqueeze(1).to(grad.dtype)

    def segment_losses(self, theta: torch.Tensor, x: torch.Tensor, y: torch.Tensor, segment: torch.Tensor,
                       counts: torch.Tensor) -> torch.Tensor:
        """Mean loss of each segment: theta [P] (shared) or [M, P] (one per segment). Returns [M]."""
        centre = theta if theta.dim() == 1 else theta[segment]
        per_sample = 0.5 * ((x - centre) ** 2).sum(1)
        total = torch.zeros(len(counts), dtype=x.dtype, device=x.device).index_add_(0, segment, per_sample)
        return total / counts.clamp(min=1).to(x.dtype)

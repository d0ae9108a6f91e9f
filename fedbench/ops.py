"""Shared maths that several algorithms use, written once."""

from __future__ import annotations

import torch


def weighted_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_k w_k v_k / sum_k w_k over the leading axis (weights [K], values [K, ...])."""
    w = weights.to(values.dtype)
    total = w.sum()
    if not torch.isfinite(total) or total <= 0:
        raise ValueError("weighted_mean needs positive total weight")
    return torch.tensordot(w / total, values, dims=1)


def prox_gradient(grad: torch.Tensor, theta: torch.Tensor, anchor: torch.Tensor, mu: float) -> torch.Tensor:
    """Gradient of F(theta) + (mu/2)||theta - anchor||^2 given grad = nabla F(theta) (FedProx eq. 2)."""
    if mu == 0:
        return grad
    return torch.add(grad, theta - anchor, alpha=mu)

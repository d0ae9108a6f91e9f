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


def prox_gradient(grad: torch.Tensor, theta: torch.Tensor, anchor: torch.Tensor,
                  mu: float | torch.Tensor) -> torch.Tensor:
    """Gradient of F(theta) + (mu/2)||theta - anchor||^2 given grad = nabla F(theta) (FedProx eq. 2).

    ``mu`` is a number, or a column [rows, 1] when the runs of a stack use different mu: both are computed as
    grad + mu * (theta - anchor), so a run's numbers are the same alone and stacked."""
    if not isinstance(mu, torch.Tensor) and mu == 0:
        return grad
    return grad + mu * (theta - anchor)


def sgd_step(theta: torch.Tensor, direction: torch.Tensor, lr: float) -> torch.Tensor:
    """theta - lr * direction, as two plain elementwise operations.

    Local steps are written this way rather than ``torch.add(theta, direction, alpha=-lr)``: ATen computes the
    latter with a fused multiply-add on its vectorized path and a separate multiply and add on the scalar tail
    of the buffer, so which elements round which way would depend on how many rows the cohort has. With plain
    operations every row's result is the same whatever rows surround it, so a run is bit-identical alone and
    stacked with other runs (fedbench.engine.simulation)."""
    return theta - lr * direction


def prox_sgd_step(theta: torch.Tensor, grad: torch.Tensor, anchor: torch.Tensor, mu: float | torch.Tensor,
                  lr: float) -> torch.Tensor:
    """``sgd_step(theta, prox_gradient(grad, theta, anchor, mu), lr)``, the proximal SGD step (FedProx eq. 2), as
    the same plain operations in place on one fresh buffer: d = theta - anchor; d *= mu; d += grad; d *= lr;
    theta - d. Each operation rounds as its out-of-place twin (IEEE addition and multiplication commute), so the
    result is bit-identical; it allocates one tensor instead of five, which is a quarter of the time of these
    operations on a stacked cohort's rows (about 5% of a FedProx run of the main job). Where in-place operations
    could differ (mixed dtypes, autograd), it is the composed form."""
    if not isinstance(mu, torch.Tensor) and mu == 0:
        return sgd_step(theta, grad, lr)
    dtypes = {theta.dtype, grad.dtype, anchor.dtype} | ({mu.dtype} if isinstance(mu, torch.Tensor) else set())
    tensors = (theta, grad, anchor) + ((mu,) if isinstance(mu, torch.Tensor) else ())
    if len(dtypes) > 1 or (torch.is_grad_enabled() and any(t.requires_grad for t in tensors)):
        return sgd_step(theta, prox_gradient(grad, theta, anchor, mu), lr)
    d = torch.sub(theta, anchor)
    if d.shape != theta.shape:  # an anchor with more rows than theta: the composed form broadcasts the same way
        return sgd_step(theta, prox_gradient(grad, theta, anchor, mu), lr)
    d.mul_(mu)
    d.add_(grad)
    d.mul_(lr)
    return torch.sub(theta, d, out=d)

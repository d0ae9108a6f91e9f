"""Shared maths that several algorithms use, written once, and how the engine and the algorithms move a host array
to the device (:func:`to_device`)."""

from __future__ import annotations

import numpy as np
import torch


def weighted_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_k w_k v_k / sum_k w_k over the leading axis (weights [K] >= 0 with a positive sum, values [K, ...]).

    The weights are not checked here: on a device, a check would read their sum back to the host and make it wait
    (fedbench.engine.host_sync). The engine checks a cohort's weights where it draws them, on the host
    (fedbench.engine.round.schedule_round), and the other weights the algorithms pass are sample counts n_k > 0."""
    w = weights.to(values.dtype)
    return torch.tensordot(w / w.sum(), values, dims=1)


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


def to_device(array: np.ndarray | torch.Tensor, device: torch.device | str,
              dtype: torch.dtype | None = None) -> torch.Tensor:
    """A host array (numpy, or a CPU tensor) as a tensor on ``device`` (converted to ``dtype`` on the host first, where
    given), without making the host wait: on CUDA it is staged in pinned memory and copied with non_blocking=True
    (PyTorch's caching host allocator keeps the pinned copy alive until the copy has run, so the array may change
    afterwards); on the CPU it is the array itself (``torch.from_numpy`` shares its memory, as ``.to("cpu")`` did)."""
    t = torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array
    if dtype is not None:
        t = t.to(dtype)
    if torch.device(device).type == "cpu":
        return t
    return t.pin_memory().to(device, non_blocking=True)

"""Local work of a cohort: the vectorized path and the per-client reference loop.

Both run an algorithm's ``client_step`` over the same minibatch schedule. The vectorized path stacks the
cohort along a leading axis, sorts clients by their number of local steps (most first) so the clients
still working at step t are always the first a_t rows, and runs each step on those rows only: unequal
data sizes and unequal local work (stragglers) cost no padded computation and need no Python loop over
clients. The reference path is a plain loop over clients, one model at a time, with gradients from
autograd on the model's single-client loss; tests compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

from fedbench.engine import tree

CHUNK_STEPS = 64  # minibatches gathered at once (bounds memory of the gathered inputs)


@dataclass(frozen=True)
class CohortData:
    """Device tensors of the training data and one round's schedule for the cohort.

    ``index`` [K, S, B] holds global sample indices (padding -1); ``steps`` [K] the local steps of each
    client, non-increasing (the engine sorts the cohort that way)."""

    x: torch.Tensor  # [n_total, ...] all training inputs
    y: torch.Tensor  # [n_total]
    num_classes: int
    index: torch.Tensor  # [K, S, B]
    steps: np.ndarray  # [K]


def active_counts(steps: np.ndarray, total: int) -> np.ndarray:
    """a_t = number of clients with more than t steps, for t < total (steps sorted non-increasing)."""
    return (steps[None, :] > np.arange(total)[:, None]).sum(1)


def run_vectorized(algorithm: Any, model: Any, bcast: Any, local: Any, data: CohortData) -> Any:
    """Run every client's local steps at once; returns the final local state [K, ...].

    ``work`` holds the rows of the clients still training (a prefix, as the cohort is sorted by steps);
    when clients finish, their rows are written back into ``local`` once and ``work`` shrinks."""
    total = int(data.steps.max()) if len(data.steps) else 0
    counts = active_counts(data.steps, total)
    work, a_work = local, len(data.steps)
    for t0 in range(0, total, CHUNK_STEPS):
        t1 = min(total, t0 + CHUNK_STEPS)
        a0 = int(counts[t0])
        idx = data.index[:a0, t0:t1]
        valid = idx >= 0
        safe = idx.clamp(min=0)
        xc = model.prepare_inputs(data.x[safe])
        weight = valid.to(xc.dtype)
        weight = (weight / weight.sum(-1, keepdim=True).clamp(min=1.0)).unsqueeze(-1)
        target = F.one_hot(data.y[safe], data.num_classes).to(xc.dtype).mul_(weight)
        for j in range(t1 - t0):
            a = int(counts[t0 + j])
            if a < a_work:  # clients a..a_work-1 are done: keep their final rows
                local = tree.write_rows(local, tree.rows(work, a, a_work), a, a_work)
                work, a_work = tree.head(work, a), a
            xb, tb, wb = xc[:a, j], target[:a, j], weight[:a, j]
            work = algorithm.client_step(work, lambda th, xb=xb, tb=tb, wb=wb: model.batched_grad(th, xb, tb, wb), bcast)
    if a_work == len(data.steps):
        return work
    return tree.write_rows(local, work, 0, a_work)


def run_reference(algorithm: Any, model: Any, bcast: Any, local: Any, data: CohortData) -> Any:
    """The same local work as :func:`run_vectorized`, one client at a time with autograd gradients."""
    rows = []
    for i in range(len(data.steps)):
        local_i = tree.take_rows(local, torch.tensor([i], device=data.x.device))
        for t in range(int(data.steps[i])):
            idx = data.index[i, t]
            idx = idx[idx >= 0]
            xb, yb = data.x[idx], data.y[idx]

            def grad_fn(theta: torch.Tensor, xb=xb, yb=yb) -> torch.Tensor:
                return _autograd_grad(model, theta, xb, yb)

            local_i = algorithm.client_step(local_i, grad_fn, bcast)
        rows.append(local_i)
    return tree.concat(rows) if rows else local


def _autograd_grad(model: Any, theta: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    th = theta[0].detach().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(model.loss(th, xb, yb), th)
    return g.unsqueeze(0)


LOCAL_PATHS: dict[str, Callable[..., Any]] = {"vectorized": run_vectorized, "reference": run_reference}

"""Local work of a cohort: the vectorized path and the per-client reference loop.

Both run an algorithm's ``client_step`` over the same minibatch schedule. The vectorized path stacks the
cohort along a leading axis, sorts clients by their number of local steps (most first) so the clients
still working at step t are always the first a_t rows, and runs each step on those rows only: unequal
data sizes and unequal local work (stragglers) cost no padded computation and need no Python loop over
clients. The reference path is a plain loop over clients, one model at a time, with gradients from
autograd on the model's single-client loss; tests compare the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedbench.engine import tree

CHUNK_STEPS = 64  # most minibatches gathered at once
CHUNK_BYTES = 4 * 2**20  # and about this many bytes of gathered inputs at most, so they stay in cache


@dataclass(frozen=True)
class CohortData:
    """Device tensors of the training data and one round's schedule for the cohort.

    ``index`` [K, S, B] holds global sample indices (padding -1); ``steps`` [K] the local steps of each
    client, non-increasing (the engine sorts the cohort that way).

    ``x_prepared`` is ``model.prepare_inputs(x)`` where the caller has it: the engine prepares the training
    set once per run, so that each round gathers its minibatches in one copy (``prepare_inputs`` acts on
    each sample on its own, so gathering commutes with it). Without it the vectorized path prepares ``x``."""

    x: torch.Tensor  # [n_total, ...] all training inputs
    y: torch.Tensor  # [n_total]
    num_classes: int
    index: torch.Tensor  # [K, S, B]
    steps: np.ndarray  # [K]
    x_prepared: torch.Tensor | None = None  # [n_total, ...] model.prepare_inputs(x), or None


def active_counts(steps: np.ndarray, total: int) -> np.ndarray:
    """a_t = number of clients with more than t steps, for t < total (steps sorted non-increasing)."""
    return (steps[None, :] > np.arange(total)[:, None]).sum(1)


def run_vectorized(algorithm: Any, model: Any, bcast: Any, local: Any, data: CohortData) -> Any:
    """Run every client's local steps at once; returns the final local state [K, ...].

    ``work`` holds the rows of the clients still training (a prefix, as the cohort is sorted by steps);
    when clients finish, their rows are written back into ``local`` once and ``work`` shrinks.

    Minibatches are gathered a chunk of steps at a time, and only those of clients still training: the
    chunk's inputs are one block [sum_t a_t, B, ...] whose step-t part is contiguous, and the chunk is
    sized by :data:`CHUNK_BYTES` so that it stays in cache until it is used. The positions of the rows
    come from the step counts, which live on the host, so nothing waits on the device."""
    total = int(data.steps.max()) if len(data.steps) else 0
    counts = active_counts(data.steps, total)
    x_all = data.x_prepared if data.x_prepared is not None else model.prepare_inputs(data.x)
    num_steps, batch = data.index.shape[1], data.index.shape[2]
    index_rows = data.index.reshape(-1, batch)  # row k * S + t: client k's minibatch at step t
    row_bytes = batch * x_all[:1].numel() * x_all.element_size()
    work, a_work = local, len(data.steps)
    t0 = 0
    while t0 < total:
        gathered = np.cumsum(counts[t0: t0 + CHUNK_STEPS]) * row_bytes
        t1 = t0 + max(1, int(np.searchsorted(gathered, CHUNK_BYTES, side="right")))
        active = counts[t0:t1]
        offsets = np.cumsum(active) - active
        client = np.arange(int(active.sum())) - np.repeat(offsets, active)
        positions = client * num_steps + np.repeat(np.arange(t0, t1), active)
        idx = index_rows.index_select(0, torch.from_numpy(positions).to(data.index.device))  # [R, B]
        valid = idx >= 0
        flat = idx.clamp(min=0).reshape(-1)
        xc = x_all.index_select(0, flat).view(*idx.shape, *x_all.shape[1:])  # row copies: far faster than x[idx]
        weight = valid.to(xc.dtype)
        weight = (weight / weight.sum(-1, keepdim=True).clamp(min=1.0)).unsqueeze(-1)  # [R, B, 1]
        labels = data.y.index_select(0, flat).view(*idx.shape, 1)
        target = weight.new_zeros(*idx.shape, data.num_classes).scatter_(-1, labels, weight)  # one-hot x weight
        sizes = active.tolist()
        for a, xb, tb, wb in zip(sizes, xc.split(sizes), target.split(sizes), weight.split(sizes)):
            if a < a_work:  # clients a..a_work-1 are done: keep their final rows
                local = tree.write_rows(local, tree.rows(work, a, a_work), a, a_work)
                work, a_work = tree.head(work, a), a
            work = algorithm.client_step(work, lambda th, xb=xb, tb=tb, wb=wb: model.batched_grad(th, xb, tb, wb), bcast)
        t0 = t1
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

"""Local work of a cohort: the vectorized path and the per-client reference loop.

Both run an algorithm's ``client_step`` over the same minibatch schedule. The vectorized path stacks the
cohort along a leading axis, sorts clients by their number of local steps (most first) so the clients
still working at step t are always the first a_t rows, and runs each step on those rows only: unequal
data sizes and unequal local work (stragglers) cost no padded computation and need no Python loop over
clients. The gradients come from the run's execution kernel (fedbench.engine.kernels). The reference path
is a plain loop over clients, one model at a time, with gradients from autograd on the model's mean loss;
tests compare the two.

A cohort may hold the rows of several runs at once (stacked runs, fedbench.engine.simulation): then every
tensor of the broadcast carries one row per cohort row (``row_bcast``), and is cut to the active rows with
the local state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedbench.engine import tree
from fedbench.ops import to_device

CHUNK_STEPS = 64  # most minibatches gathered at once
CHUNK_BYTES = 4 * 2**20  # and about this many bytes of gathered inputs at most, so they stay in cache


@dataclass(frozen=True)
class CohortData:
    """Device tensors of the training data and one round's schedule for the cohort.

    The schedule is ragged: ``batches`` [T, B] holds every client's minibatches (global sample indices,
    padding -1), client k's ``steps[k]`` of them from row ``starts[k]`` on; ``steps`` is non-increasing (the
    engine sorts the cohort that way). ``x_prepared`` is ``kernel.prepare(x)``, computed once per run:
    ``prepare`` acts on each sample on its own, so gathering commutes with it and each round gathers its
    minibatches in one copy."""

    x: torch.Tensor  # [n_total, ...] all training inputs, as stored (the reference path's inputs)
    y: torch.Tensor  # [n_total]
    x_prepared: torch.Tensor  # [n_total, ...] kernel.prepare(x)
    batches: torch.Tensor  # [T, B]
    starts: np.ndarray  # [K] first row of each client's minibatches in ``batches``
    steps: np.ndarray  # [K]


def active_counts(steps: np.ndarray, total: int) -> np.ndarray:
    """a_t = number of clients with more than t steps, for t < total (steps sorted non-increasing)."""
    return (steps[None, :] > np.arange(total)[:, None]).sum(1)


def run_vectorized(algorithm: Any, kernel: Any, bcast: Any, local: Any, data: CohortData,
                   row_bcast: bool = False) -> Any:
    """Run every client's local steps at once; returns the final local state [K, ...].

    ``work`` holds the rows of the clients still training (a prefix, as the cohort is sorted by steps);
    when clients finish, their rows are written back into ``local`` once and ``work`` shrinks.

    Minibatches are gathered a chunk of steps at a time, and only those of clients still training: the
    chunk's inputs are one block [sum_t a_t, B, ...] whose step-t part is contiguous, and the chunk is
    sized by :data:`CHUNK_BYTES` so that it stays in cache until it is used. The positions of the rows
    come from the step counts, which live on the host, so nothing waits on the device."""
    total = int(data.steps.max()) if len(data.steps) else 0
    counts = active_counts(data.steps, total)
    x_all = data.x_prepared
    batch = data.batches.shape[1]
    row_bytes = batch * x_all[:1].numel() * x_all.element_size()
    work, a_work, b_work = local, len(data.steps), bcast
    t0 = 0
    while t0 < total:
        gathered = np.cumsum(counts[t0: t0 + CHUNK_STEPS]) * row_bytes
        t1 = t0 + max(1, int(np.searchsorted(gathered, CHUNK_BYTES, side="right")))
        active = counts[t0:t1]
        offsets = np.cumsum(active) - active
        client = np.arange(int(active.sum())) - np.repeat(offsets, active)
        positions = data.starts[client] + np.repeat(np.arange(t0, t1), active)
        idx = data.batches.index_select(0, to_device(positions, data.batches.device))  # [R, B]
        valid = idx >= 0
        flat = idx.clamp(min=0).reshape(-1)
        xc = x_all.index_select(0, flat).view(*idx.shape, *x_all.shape[1:])  # row copies: far faster than x[idx]
        weight = valid.to(xc.dtype if xc.is_floating_point() else torch.float32)
        weight = weight / weight.sum(-1, keepdim=True).clamp(min=1.0)  # [R, B], each row summing to 1
        labels = data.y.index_select(0, flat).view(*idx.shape)
        sizes = active.tolist()
        parts = [t.split(sizes) for t in kernel.batch(xc, labels, weight)]
        for i, a in enumerate(sizes):
            if a < a_work:  # clients a..a_work-1 are done: keep their final rows
                local = tree.write_rows(local, tree.rows(work, a, a_work), a, a_work)
                work, a_work = tree.head(work, a), a
                if row_bcast:
                    b_work = tree.head(b_work, a)
            step_batch = tuple(p[i] for p in parts)
            work = algorithm.client_step(work, lambda th, sb=step_batch: kernel.grad(th, *sb), b_work)
        t0 = t1
    if a_work == len(data.steps):
        return work
    return tree.write_rows(local, work, 0, a_work)


def run_reference(algorithm: Any, model: Any, bcast: Any, local: Any, data: CohortData,
                  row_bcast: bool = False) -> Any:
    """The same local work as :func:`run_vectorized`, one client at a time with autograd gradients."""
    rows = []
    for i in range(len(data.steps)):
        row = torch.tensor([i], device=data.x.device)
        local_i = tree.take_rows(local, row)
        bcast_i = tree.take_rows(bcast, row) if row_bcast else bcast
        for t in range(int(data.steps[i])):
            idx = data.batches[int(data.starts[i]) + t]
            idx = idx[idx >= 0]
            xb, yb = data.x[idx], data.y[idx]

            def grad_fn(theta: torch.Tensor, xb=xb, yb=yb) -> torch.Tensor:
                return _autograd_grad(model, theta, xb, yb)

            local_i = algorithm.client_step(local_i, grad_fn, bcast_i)
        rows.append(local_i)
    return tree.concat(rows) if rows else local


def _autograd_grad(model: Any, theta: torch.Tensor, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    th = theta[0].detach().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(model.loss_fn(th, xb, yb), th)
    return g.unsqueeze(0)


LOCAL_PATHS: dict[str, Callable[..., Any]] = {"vectorized": run_vectorized, "reference": run_reference}

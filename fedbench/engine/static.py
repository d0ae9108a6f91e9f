"""Local work at one static shape: every step of a round runs on all K client rows of the stack, padded to the
block's largest client and masked, so that the step is one fixed sequence of device operations that needs no
host read and can be captured in a CUDA graph (fedbench.engine.capture; issue 31, items 3 and 4).

The ragged path (fedbench.engine.local.run_vectorized) runs step t on the a_t clients still training, which is
the least arithmetic but a different tensor shape at nearly every step, and it gathers minibatches chunk by chunk
from positions computed on the host. Here the whole round's schedule is one index tensor [T, K, B] (minibatch
indices, -1 padding) and one mask [T, K] (row k still training at step t), built on the host from the block's
schedule (fedbench.engine.schedule) and copied to the device once; step t gathers row t of it, runs the
algorithm's ``client_step`` on all K rows and keeps, for each row whose client has finished (or that pads the
cohort), its previous state (``torch.where``). A padded row's minibatch is all padding: weight 0, so its gradient
is zero, and the mask discards its step anyway.

Row buckets (issue 53 item 4, design D4 of ../shared/reference/gpu-design.md). The rows are sorted by steps
(fedbench.engine.round sorts the merged cohort; a run's own is already work-sorted), so the a_t rows still training
at step t are the first; step t then runs on the smallest of the declared row buckets (:func:`bucket_sizes`: 1, 2,
3, 4, 5, 7, 9, ... each at most :data:`BUCKET_GROWTH` x the one below) that holds them, and the rows past it keep
their state. A step's shape is then one of a few buckets instead of one per a_t, which a CUDA graph a bucket
captures (fedbench.engine.capture); the padded row-steps fall from sum_t (K - a_t) to sum_t (bucket(a_t) - a_t):
4.4-11.3x useful to 1.07-1.10x at the paper's heavy-tailed sizes (fedbench.bench.row_padding).

Numbers. Kernels compute each row on its own and ``torch.where`` selects exactly, so on the CPU a row's local
state after the round is bit for bit the ragged path's, on a bucket's rows as on all of them (tested for every
algorithm, stacked runs included, mclr and vmap kernels). The cost is arithmetic on finished rows: sum_t
(bucket(a_t) - a_t) padded row-steps a round, which the GPU pays in idle lanes instead of launches.

Deviations: an algorithm's local state may hold a non-tensor field (FedProxVR's step counter ``t``, one number
for all rows); it takes the value of the last step, as on the ragged path, where the engine never advances the
counter of finished rows either (the algorithm reads it only in client_step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from fedbench.engine import tree
from fedbench.ops import to_device


@dataclass(frozen=True)
class StaticShape:
    """The shape of every step of a block: ``rows`` client rows (all runs' cohorts, padded), ``steps`` local steps
    (the block's largest client), minibatches of ``batch`` samples."""

    rows: int
    steps: int
    batch: int

    def __post_init__(self) -> None:
        if min(self.rows, self.steps, self.batch) < 1:
            raise ValueError(f"a static shape needs rows, steps and batch >= 1, got {self}")


@dataclass(frozen=True)
class StaticCohort:
    """One round's schedule at a static shape, on the device."""

    batches: torch.Tensor  # [T, K, B] int64 sample indices, -1 padding (a finished or padding row: all -1)
    active: torch.Tensor  # [T, K] bool: row k trains at step t
    rows: int  # the real rows (the first ``rows`` of K)
    buckets: tuple[int, ...] | None = None  # per step, the rows it runs (a row bucket holding its active rows, a
    # prefix: rows sorted by steps; 0: none active); None: every step all K rows
    row_bcast: bool = False  # the broadcast holds a row a row (every tensor of it; runs of a stack merged)


def pad_schedule(steps: list[np.ndarray], batches: list[np.ndarray], shape: StaticShape,
                 device: torch.device, order: np.ndarray | None = None, buckets: bool = False,
                 row_bcast: bool = False, put=None) -> StaticCohort:
    """The runs' cohorts one after another as rows of one [T, K, B] schedule: run i's client j takes its steps[i][j]
    minibatches from ``batches[i]`` (client after client, as fedbench.engine.round.RoundSchedule holds them).
    ``order``: row r holds the concatenated cohorts' client order[r] (default: in order). ``buckets``: give each
    step its row bucket (:func:`step_buckets`; the rows, in ``order``, must then be sorted by steps, descending).
    ``row_bcast``: the round's broadcast holds a row a row (a bucket's step takes its first rows). ``put(name,
    array)``: how a host array reaches the device (default fedbench.ops.to_device; the round loop's takes a block's
    view: fedbench.engine.uploads)."""
    out, active, row_steps = schedule_arrays(steps, batches, shape, order)
    put = (lambda _name, array: to_device(array, device)) if put is None else put
    return StaticCohort(batches=put("batches", out), active=put("active", active), rows=sum(len(s) for s in steps),
                        buckets=step_buckets(row_steps, shape) if buckets else None, row_bcast=row_bcast)


def schedule_arrays(steps: list[np.ndarray], batches: list[np.ndarray], shape: StaticShape,
                    order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The host arrays of :func:`pad_schedule`: minibatch indices int64 [T, K, B] (-1 padding), the mask bool [T, K]
    of the rows training at each step, and each row's steps [K]."""
    all_steps = np.concatenate(steps) if steps else np.zeros(0, np.int64)
    k = len(all_steps)
    t_max = int(all_steps.max()) if k else 0
    if k > shape.rows or t_max > shape.steps:
        raise ValueError(f"a round of {k} client rows and {t_max} steps does not fit the static shape {shape}")
    out = np.full((shape.steps, shape.rows, shape.batch), -1, dtype=np.int64)
    flat = np.concatenate(batches) if batches else np.zeros((0, shape.batch), np.int64)
    if flat.shape[1] != shape.batch:
        raise ValueError(f"minibatches of {flat.shape[1]} samples for a static shape of batch {shape.batch}")
    position = np.arange(k) if order is None else np.argsort(order, kind="stable")  # the row of each client
    row = np.repeat(position, all_steps)  # the row of each minibatch
    step = np.arange(len(flat)) - np.repeat(np.cumsum(all_steps) - all_steps, all_steps)
    out[step, row] = flat
    row_steps = np.zeros(shape.rows, np.int64)
    row_steps[position] = all_steps
    active = np.arange(shape.steps)[:, None] < row_steps[None, :]
    return out, active, row_steps


def step_buckets(row_steps: np.ndarray, shape: StaticShape) -> tuple[int, ...]:
    """Per step t of ``shape``, the smallest row bucket (:func:`bucket_sizes` of its rows) holding the a_t rows still
    training, 0 where none is; ``row_steps`` [K] must be sorted descending, so that the a_t rows are the first."""
    if np.any(np.diff(row_steps) > 0):
        raise ValueError("row buckets need the rows sorted by steps, descending (the active rows a prefix)")
    sizes = np.array((0,) + bucket_sizes(shape.rows))
    a = (np.arange(shape.steps)[:, None] < row_steps[None, :]).sum(1)
    return tuple(int(b) for b in sizes[np.searchsorted(sizes, a)])


def pad_rows(state: Any, rows: int) -> Any:
    """``state`` [k, ...] grown to ``rows`` rows, the new ones copies of row 0 (finite values that are masked)."""

    def grow(t: torch.Tensor) -> torch.Tensor:
        extra = rows - t.shape[0]
        return t if extra == 0 else torch.cat([t, t[:1].expand(extra, *t.shape[1:])])

    return tree.tree_map(grow, state)


def static_step(algorithm: Any, kernel: Any, x_prepared: torch.Tensor, y: torch.Tensor, work: Any, bcast: Any,
                idx: torch.Tensor, active: torch.Tensor) -> Any:
    """One local step of all K rows on minibatches ``idx`` [K, B] (-1 padding); rows not ``active`` [K] keep
    ``work``. The operations are those of one step of fedbench.engine.local.run_vectorized (the same gather, the
    same weights summing to one per row, the kernel's batch and grad), at a shape that never changes."""
    valid = idx >= 0
    flat = idx.clamp(min=0).reshape(-1)
    xc = x_prepared.index_select(0, flat).view(*idx.shape, *x_prepared.shape[1:])
    weight = valid.to(xc.dtype if xc.is_floating_point() else torch.float32)
    weight = weight / weight.sum(-1, keepdim=True).clamp(min=1.0)
    labels = y.index_select(0, flat).view(*idx.shape)
    step_batch = kernel.batch(xc, labels, weight)
    new = algorithm.client_step(work, lambda th: kernel.grad(th, *step_batch), bcast)
    return keep_finished(active, new, work)


def keep_finished(active: torch.Tensor, new: Any, old: Any) -> Any:
    """``new`` where ``active`` [K], ``old`` elsewhere, leaf by leaf (a non-tensor field: ``new``'s)."""
    if isinstance(new, torch.Tensor):
        return torch.where(active.view(-1, *(1,) * (new.dim() - 1)), new, old)
    if dataclasses.is_dataclass(new):
        changes = {f.name: keep_finished(active, getattr(new, f.name), getattr(old, f.name))
                   for f in dataclasses.fields(new)
                   if isinstance(getattr(new, f.name), torch.Tensor) or dataclasses.is_dataclass(getattr(new, f.name))}
        return dataclasses.replace(new, **changes)
    return new


def run_static(algorithm: Any, kernel: Any, bcast: Any, local: Any, x_prepared: torch.Tensor, y: torch.Tensor,
               cohort: StaticCohort) -> Any:
    """Every row's local steps at the cohort's static shape, eagerly; returns the local state [K, ...] (rows past
    ``cohort.rows`` are padding). ``local`` and a per-row ``bcast`` (``cohort.row_bcast``) must already have K
    rows (:func:`pad_rows`). With ``cohort.buckets``, step t runs on its bucket's first
    rows only (the others keep their state: they are finished)."""
    work = local
    rows = cohort.batches.shape[1]
    for t in range(cohort.batches.shape[0]):
        b = rows if cohort.buckets is None else cohort.buckets[t]
        if b == rows:
            work = static_step(algorithm, kernel, x_prepared, y, work, bcast, cohort.batches[t], cohort.active[t])
        elif b:
            prefix = static_step(algorithm, kernel, x_prepared, y, tree.head(work, b),
                                 tree.head(bcast, b) if cohort.row_bcast else bcast, cohort.batches[t, :b],
                                 cohort.active[t, :b])
            work = tree.concat([prefix, tree.rows(work, b, rows)])
    return work


BUCKET_GROWTH = 1.25  # row buckets (D4): each bucket holds at most 1.25x the rows of the one below (at least one more)


def bucket_sizes(rows: int, growth: float = BUCKET_GROWTH) -> tuple[int, ...]:
    """The row buckets of a static shape of ``rows`` rows: 1, 2, 3, 4, 5, 7, 9, ... each ceil(growth x) the one
    below (at least one more), the last ``rows``; a step runs on the smallest that holds its active rows."""
    if rows < 1 or growth <= 1.0:
        raise ValueError(f"row buckets need rows >= 1 and growth > 1, got rows={rows}, growth={growth}")
    sizes = [1]
    while sizes[-1] < rows:
        sizes.append(min(rows, max(sizes[-1] + 1, int(np.ceil(sizes[-1] * growth)))))
    return tuple(sizes)


def bucketed_row_steps(steps: np.ndarray, rows: int, growth: float = BUCKET_GROWTH) -> int:
    """Row-steps a round computes when step t runs on the smallest bucket holding its a_t active rows (rows sorted
    by steps, so that they are a prefix): sum_t bucket(a_t). With steps sorted descending s_1 >= ... >= s_K, a_t = a
    for s_{a+1} <= t < s_a."""
    s = np.sort(np.asarray(steps, dtype=np.int64))[::-1]
    if len(s) == 0:
        return 0
    sizes = np.array(bucket_sizes(rows, growth))
    a = np.arange(1, len(s) + 1)
    span = s - np.append(s[1:], 0)  # the steps with exactly a active rows
    return int((sizes[np.searchsorted(sizes, a)] * span).sum())


def padded_row_steps(steps: np.ndarray, shape: StaticShape) -> int:
    """Row-steps a round at ``shape`` computes and discards: T K - sum_k steps_k."""
    return shape.steps * shape.rows - int(np.sum(steps))

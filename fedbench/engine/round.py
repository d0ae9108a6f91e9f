"""One round as a callable unit: :func:`schedule_round` decides who trains, how many steps and on which
minibatches; :func:`run_round` runs the scheduled local work and aggregates. ``simulate`` and the benchmark
both call these two functions (fedbench.engine.simulation, fedbench.bench).

A round may serve several runs at once (a *stack*, see fedbench.engine.simulation): each run schedules its
own round from its own random streams, exactly as it would alone, and :func:`run_round` merges the runs'
cohorts into one work-sorted cohort, so that every local step serves all runs. Around the local steps, on the CPU
every run calls broadcast, client_init, client_result and server_update itself, on its own state (bit for bit as
alone); on BATCHED_SIGNAL_DEVICES (CUDA) the runs' cohorts are uploaded together, their per-client tables are one
buffer whose cohort rows are gathered and written once (:func:`pool_tables`), and client_init, client_result and
server_update run once for each group of runs (fedbench.engine.vmap_runs), so that the operators a round launches
around its steps do not grow with the runs of the stack (fedbench.bench.proxies: ops_outside_steps_per_round).

With ``Stack.capture`` static or cuda_graph the merged cohort's rows are sorted by steps and run at one static shape,
each step on the row bucket that holds its active rows, finished rows masked (fedbench.engine.static), the same
numbers on the CPU.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from fedbench.engine import tree
from fedbench.engine.capture import FUSED_MODES, GRAPH_STEPS
from fedbench.engine.kernels.generic import client_segments
from fedbench.engine.local import LOCAL_PATHS, CohortData
from fedbench.engine.metrics import DeviceData
from fedbench.engine.sampling import plan_round
from fedbench.engine.schedule import RoundDraw, cohort_seed, draw_round, local_work
from fedbench.engine.static import StaticShape, pad_rows, pad_schedule, run_static, schedule_arrays
from fedbench.engine.uploads import BlockUploads
from fedbench.engine.vmap_runs import ClientsFullGrad, call_over_runs, concat_rows, same_structure, stack_rows
from fedbench.ops import to_device


@dataclass(frozen=True)
class Cohort:
    """The clients training this round, in the engine's (work-sorted) order, and what the round knows of them
    before any local work."""

    # fedbench.engine.vmap_runs batches a cohort's tensors over a group of runs and shares its other fields (found by
    # this flag, so that module need not import this one)
    vmap_as_cohort: ClassVar[bool] = True
    clients: torch.Tensor  # [K] dataset indices
    num_samples: torch.Tensor  # [K] training samples n_k
    epochs: torch.Tensor  # [K] local epochs this round
    steps: torch.Tensor  # [K] local steps this round
    client_rows: Any  # rows of the per-client table (or None)
    full_grad: Callable[[torch.Tensor], torch.Tensor]  # theta [K, P] -> gradient of each F_k on all its data
    weights: torch.Tensor | None = None  # [K] aggregation weights, sum 1 (the ones server_update gets)
    round: int = 0  # index of the round
    seed: int = 0  # the run's seed: an algorithm's own draws come from fedbench.seeding.rng(seed, round, ...)
    available: np.ndarray | None = None  # bool [N]: the clients that could be selected this round
    train_sizes: np.ndarray | None = None  # [N] training samples of every client
    # gradient of F_j on all its data at one model theta [P], for any clients j (int64 array [c]) -> [c, P]
    client_grads: Callable[[np.ndarray, torch.Tensor], torch.Tensor] | None = None
    # ``clients`` and ``steps`` as the host has them: read these, not the device tensors, to decide anything on the
    # host (reading a device tensor back makes the host wait for the device: fedbench.engine.host_sync)
    host_clients: np.ndarray | None = None
    host_steps: np.ndarray | None = None

    @property
    def num_clients(self) -> int | None:
        """N, all clients of the dataset."""
        return None if self.train_sizes is None else len(self.train_sizes)

    @property
    def total_samples(self) -> int | None:
        """n, training samples of all N clients."""
        return None if self.train_sizes is None else int(self.train_sizes.sum())


@dataclass
class RunState:
    """What the engine keeps of one run between rounds (the algorithm's state is explicit and typed; this is the
    engine's bookkeeping around it)."""

    cfg: Any  # SimulationConfig
    algorithm: Any
    data: DeviceData
    base: int  # offset of this run's training samples in the stack's concatenated inputs
    availability: Any
    state: Any  # the algorithm's server state
    table: Any  # per-client state (or None)
    table_device: torch.device
    history: list[dict[str, float]]
    callbacks: tuple[Any, ...] = ()
    checkpoint: Any = None
    diverged: bool = False
    done: bool = False
    next_round: int = 0  # the round this run starts next (rounds done so far)
    signal: list[float] = field(default_factory=list)  # the cheap divergence signal of the rounds without train/loss
    pending_s: float = 0.0  # seconds of the rounds since this run's last history row
    pending_eval_s: float = 0.0
    # the rounds since its divergence signal was last read back (fedbench.engine.simulation._Window; None: none)
    window: Any = None
    # where the runs are batched: the stack's per-client tables as one buffer a leaf [R, N, ...] and this run's slot in
    # it (its ``table`` a view of the slot: :func:`pool_tables`); None: its table is its own
    table_pool: tuple[tuple[torch.Tensor, ...], int] | None = None

    @property
    def sizes(self) -> np.ndarray:
        return self.data.train_sizes


@dataclass(frozen=True)
class Stack:
    """The parts a round needs that every run of a stack shares: the model and its kernel on the device, and the
    training inputs of every dataset in the stack, concatenated (one dataset: its own tensors, no copy)."""

    model: Any
    kernel: Any
    device: torch.device
    local_path: str
    x: torch.Tensor  # [n, ...] training inputs as stored
    y: torch.Tensor  # [n]
    x_prepared: torch.Tensor  # [n, ...] kernel.prepare(x), once per stack
    batch_size: int
    local_steps: int
    capture: str = "none"  # SimulationConfig.capture: none (ragged eager), static (padded eager), cuda_graph
    captured: Any = None  # fedbench.engine.capture.CapturedSteps where capture is cuda_graph
    # where the runs are batched (:func:`batched_runs`): the current block's arrays on the device, moved in one
    # transfer (fedbench.engine.uploads; :func:`stage_block`); None: each round moves its own
    uploads: BlockUploads | None = None


@dataclass(frozen=True)
class RoundSchedule:
    """One run's scheduled round: its cohort in work-sorted order, the minibatches of every step, and the local
    state and broadcast the algorithm prepared for it."""

    run: RunState
    round: int
    clients: np.ndarray  # [K] dataset indices, most local steps first
    steps: np.ndarray  # [K]
    batches: np.ndarray  # [sum(steps), B] indices into the stack's inputs (padding -1), client after client
    cohort: Cohort
    bcast: Any
    local: Any
    algorithm: Any = None  # the run's algorithm in this round (its learning rate decayed: algorithm_at)


def schedule_round(stack: Stack, run: RunState, r: int, draw: RoundDraw | None = None) -> RoundSchedule | None:
    """Who trains in round ``r`` of ``run`` and on which minibatches (None: nobody trains this round). ``draw``:
    the round as fedbench.engine.schedule drew it ahead (a block's schedule); by default drawn here, the same."""
    planned = _round_work(stack, run, r, draw)
    if planned is None:
        return None
    _, algorithm, work, _ = planned
    cohort = _cohort(stack, planned, r, _upload(stack, [planned], r)[0], _table_rows(run, work.clients, stack.device))
    bcast = algorithm.broadcast(run.state)
    local = algorithm.client_init(bcast, cohort)
    return RoundSchedule(run=run, round=r, clients=work.clients, steps=work.steps, batches=work.batches,
                         cohort=cohort, bcast=bcast, local=local, algorithm=algorithm)


def schedule_stack(stack: Stack, runs: list[RunState], r: int,
                   draws: list[RoundDraw | None] | None = None) -> list[RoundSchedule]:
    """:func:`schedule_round` for each of ``runs`` (``draws``: each run's draw, or None), less the runs where nobody
    trains. On BATCHED_SIGNAL_DEVICES the cohorts of all runs are uploaded together (one transfer for the integer
    arrays, one for the weights; each run's are views) and client_init runs once for each group of runs
    (fedbench.engine.vmap_runs); elsewhere run by run, bit for bit as alone."""
    draws = [None] * len(runs) if draws is None else draws
    if not batched_runs(stack):
        return [s for s in (schedule_round(stack, run, r, d) for run, d in zip(runs, draws)) if s is not None]
    planned = [p for p in (_round_work(stack, run, r, d) for run, d in zip(runs, draws)) if p is not None]
    cohorts = [_cohort(stack, p, r, up, rows) for p, up, rows in zip(planned, _upload(stack, planned, r),
                                                                     _pooled_rows(stack, planned, r))]
    bcasts = [alg.broadcast(run.state) for run, alg, _, _ in planned]
    locals_ = call_over_runs("client_init", [alg for _, alg, _, _ in planned], list(zip(bcasts, cohorts)))
    return [RoundSchedule(run=run, round=r, clients=work.clients, steps=work.steps, batches=work.batches,
                          cohort=cohort, bcast=bcast, local=local, algorithm=alg)
            for (run, alg, work, _), cohort, bcast, local in zip(planned, cohorts, bcasts, locals_)]


def new_uploads(device: torch.device) -> BlockUploads | None:
    """The stack's block uploads (fedbench.engine.uploads) where its runs are batched (BATCHED_SIGNAL_DEVICES), else
    None: on the CPU's default path every round moves (shares) its own arrays, as alone."""
    return BlockUploads(device) if torch.device(device).type in BATCHED_SIGNAL_DEVICES else None


def stage_block(stack: Stack, rounds: list[tuple[int, list[tuple[RunState, Any]], list[RunState]]],
                rows: int | None) -> None:
    """Where the stack takes a block's views (``stack.uploads``): every array the ``rounds`` will move to the device,
    built on the host now, as those rounds will build them, and moved in one transfer (fedbench.engine.uploads).
    Each round is (r, its runs with their drawn local work (fedbench.engine.schedule.RoundWork) in the stack's order,
    the runs whose divergence signal it will leave on the device); ``rows``: the block's static rows. A round whose
    arrays then differ from these (a run that left, a replay) moves its own: the numbers never depend on this."""
    if stack.uploads is None:
        return
    arrays: dict[tuple, np.ndarray] = {}
    for r, pairs, signalled in rounds:
        pairs = [(run, work) for run, work in pairs if len(work.clients)]
        if not pairs:
            continue
        planned = [(run, None, work, None) for run, work in pairs]
        cohort, weights = _cohort_host(planned)
        flat = [run[f] for f in range(4) for run in cohort]
        for dtype, _, buffer in _cohort_buffers(flat):
            arrays[(r, "cohort", dtype)] = buffer
        arrays[(r, "weights")] = np.concatenate(weights).astype(np.float32)
        runs = [run for run, _ in pairs]
        for idx in _by_pool(runs):
            arrays[(r, "pool", id(runs[idx[0]].table_pool[0]))] = _pool_index_host([runs[i] for i in idx],
                                                                               [pairs[i][1].clients for i in idx])
        works = [work for _, work in pairs]
        signal = [(run, work.clients) for run, work in pairs if any(run is s for s in signalled)]
        if signal and _batched_signal(stack, len(signal)):
            index, segment, counts = _signal_host(signal)
            arrays |= {(r, "signal_index"): index, (r, "signal_segment"): segment,
                       (r, "signal_counts"): counts.astype(np.float32)}
        else:
            for j, (run, clients) in enumerate(signal):
                for name, a in zip("isc", _segments_host(run.data.train_offsets, clients)):
                    arrays[(r, "segments", j, name)] = a
        if stack.capture != "none":
            shape, order, sorted_ = _static_layout(stack, works, rows)
            out, active, _ = schedule_arrays([w.steps for w in works], [w.batches for w in works], shape,
                                             None if sorted_ else order)
            arrays |= {(r, "batches"): out, (r, "active"): active}
            if not sorted_:
                arrays |= {(r, "order"): order, (r, "back"): np.argsort(order, kind="stable")}
            if len(works) > 1:
                arrays[(r, "run_of_row")] = _static_run_of_row([len(w.steps) for w in works], order, shape)
        elif len(works) == 1:
            arrays[(r, "batches")] = works[0].batches
        else:
            order, run_of_row, batches, back = _merged_host(works)
            arrays |= {(r, "order"): order, (r, "run_of_row"): run_of_row, (r, "batches"): batches, (r, "back"): back}
    stack.uploads.stage(arrays)


def batched_runs(stack: Stack) -> bool:
    """Whether the work around a stack's local steps is batched over its runs (BATCHED_SIGNAL_DEVICES)."""
    return stack.device.type in BATCHED_SIGNAL_DEVICES


def _round_work(stack: Stack, run: RunState, r: int, draw: RoundDraw | None) -> tuple | None:
    """The host's part of scheduling round ``r`` of ``run``: (run, the round's algorithm, its local work
    (fedbench.engine.schedule.RoundWork), the clients available), or None where nobody trains. The run's state
    hooks (choose_clients, filter_cohort) run here."""
    cfg, sizes, data = run.cfg, run.sizes, run.data
    algorithm = algorithm_at(run.algorithm, cfg.lr_decay, r)
    draw = draw_round(run, r) if draw is None else draw
    if draw.round != r:
        raise ValueError(f"schedule_round: round {r} was given the draw of round {draw.round}")
    available, plan, work = draw.available, draw.plan, draw.work
    choose = getattr(algorithm, "choose_clients", None)
    if choose is not None:
        k = min(cfg.clients_per_round, int(available.sum()))
        run.state, chosen = choose(run.state, r, available, k)
        chosen = _check_chosen(chosen, available, k)
        plan = plan_round(cohort_seed(cfg), r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                          cfg.local_epochs, cfg.straggler_epochs, available=available, chosen=chosen,
                          batch_size=cfg.batch_size)
    if work is None:
        weights = plan.weights
        keep = np.ones(len(plan.clients), bool) if algorithm.keeps_partial_work else ~plan.straggler
        filter_cohort = getattr(algorithm, "filter_cohort", None)
        if filter_cohort is not None and len(plan.clients):
            losses = cohort_losses(stack.kernel, data, plan.clients, run.state.theta)
            run.state, weights = filter_cohort(run.state, r, losses, sizes[plan.clients])
            weights = np.asarray(weights, dtype=np.float64)
            if weights.shape != plan.clients.shape or np.any(weights < 0) or not np.all(np.isfinite(weights)):
                raise ValueError(f"filter_cohort must return {len(plan.clients)} finite weights >= 0, got {weights}")
            keep &= weights > 0
        work = local_work(run, r, plan.clients[keep], plan.epochs[keep], weights[keep],
                          None if plan.steps is None else plan.steps[keep])
    if len(work.clients) == 0:
        return None
    total = float(work.weights.sum())
    if not (np.isfinite(total) and total > 0):  # checked here, on the host: server_update gets them on the device
        raise ValueError(f"round {r}: the cohort's aggregation weights sum to {total}; they must have a positive sum")
    return run, algorithm, work, available


def _upload(stack: Stack, planned: list[tuple], r: int) -> list[tuple[torch.Tensor, ...]]:
    """Each planned run's cohort arrays on the device (clients, their n_k, epochs, steps, and the weights normalised
    to sum 1 as float32): for one run its own (where the stack takes no block's views), else every run's arrays of one
    dtype in one transfer, each run's a view of it (the float32 weights: one more transfer), or views of the block's
    (:func:`_put`)."""
    arrays, weights = _cohort_host(planned)
    device = stack.device
    if len(planned) == 1 and stack.uploads is None:
        return [(*(to_device(a, device) for a in arrays[0]), to_device(weights[0], device, torch.float32))]
    runs = len(planned)
    flat = [run[f] for f in range(4) for run in arrays]  # field by field: a field's arrays of the runs one after another
    views: list[Any] = [None] * len(flat)
    for dtype, which, buffer in _cohort_buffers(flat):  # one transfer a dtype (in practice one: int64)
        for i, part in zip(which, _put(stack, (r, "cohort", dtype), buffer).split([len(flat[i]) for i in which])):
            views[i] = part
    weight_views = _put(stack, (r, "weights"), np.concatenate(weights), torch.float32).split([len(w) for w in weights])
    return [(*views[j::runs], weight_views[j]) for j in range(runs)]


def _cohort_host(planned: list[tuple]) -> tuple[list[tuple[np.ndarray, ...]], list[np.ndarray]]:
    """The planned runs' cohort arrays on the host: (clients, n_k, epochs, steps) a run, and the weights summing to 1."""
    arrays = [(work.clients, run.sizes[work.clients], work.epochs, work.steps) for run, _, work, _ in planned]
    weights = [work.weights / float(work.weights.sum()) for _, _, work, _ in planned]
    return arrays, weights


def _cohort_buffers(flat: list[np.ndarray]) -> list[tuple[str, list[int], np.ndarray]]:
    """(dtype, the arrays of that dtype, their concatenation) for the cohort's arrays ``flat``."""
    out = []
    for dtype in sorted({a.dtype.str for a in flat}):
        which = [i for i, a in enumerate(flat) if a.dtype.str == dtype]
        out.append((dtype, which, np.concatenate([flat[i] for i in which])))
    return out


def _put(stack: Stack, key: tuple, array: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``to_device(array, stack.device, dtype)``, or the block's view of ``key`` where the block staged an array
    equal to it (fedbench.engine.uploads: the same values, no transfer of its own)."""
    if stack.uploads is None:
        return to_device(array, stack.device, dtype)
    if dtype is not None:  # converted on the host, as to_device converts (IEEE round to nearest either way)
        array = array.astype(torch.empty(0, dtype=dtype).numpy().dtype)
    view = stack.uploads.take(key, array)
    return to_device(array, stack.device) if view is None else view


def _cohort(stack: Stack, planned: tuple, r: int, arrays: tuple[torch.Tensor, ...], rows: Any) -> Cohort:
    """A planned run's cohort (its arrays already on the device: :func:`_upload`; its per-client table rows)."""
    run, _, work, available = planned
    clients, num_samples, epochs, steps, weights = arrays
    return Cohort(
        clients=clients, num_samples=num_samples, epochs=epochs, steps=steps,
        client_rows=rows, full_grad=_full_grad_fn(stack.kernel, run.data, work.clients),
        weights=weights, round=r, seed=run.cfg.seed, available=available, train_sizes=run.sizes,
        client_grads=_client_grads_fn(stack.kernel, run.data), host_clients=work.clients, host_steps=work.steps,
    )


def pool_tables(stack: Stack, runs: list[RunState]) -> None:
    """Where the runs are batched (:func:`batched_runs`), the per-client tables of runs of one structure (kept on the
    stack's device) moved into one buffer a leaf [R, N, ...], each run's table a view of its slot, so that a round
    gathers every run's cohort rows at once and writes them back at once (:func:`_pooled_rows`,
    :func:`_write_pooled`). Elsewhere each run keeps its own table."""
    if not batched_runs(stack):
        return
    groups: list[list[RunState]] = []
    for run in runs:
        if run.table is None or run.table_device != stack.device:
            continue
        for g in groups:
            if same_structure(g[0].table, run.table):
                g.append(run)
                break
        else:
            groups.append([run])
    for g in (g for g in groups if len(g) > 1):
        leaves = tuple(torch.stack(ls) for ls in zip(*(tree.tree_leaves(run.table) for run in g)))
        for j, run in enumerate(g):
            run.table = tree.unflatten(run.table, [leaf[j] for leaf in leaves])
            run.table_pool = (leaves, j)


def _pool_index(stack: Stack | None, runs: list[RunState], clients: list[np.ndarray], device: torch.device,
                r: int) -> torch.Tensor:
    """[2, sum K] (slot, client) of the cohort rows of ``runs`` in their pool, one upload (or the block's view)."""
    index = _pool_index_host(runs, clients)
    if stack is None:
        return to_device(index, device)
    return _put(stack, (r, "pool", id(runs[0].table_pool[0])), index)


def _pool_index_host(runs: list[RunState], clients: list[np.ndarray]) -> np.ndarray:
    slots = np.concatenate([np.full(len(c), run.table_pool[1], np.int64) for run, c in zip(runs, clients)])
    return np.stack([slots, np.concatenate(clients).astype(np.int64)])


def _by_pool(runs: list[RunState]) -> list[list[int]]:
    """Indices of the runs whose tables share a pool, pool by pool."""
    pools: dict[int, list[int]] = {}
    for i, run in enumerate(runs):
        if run.table_pool is not None:
            pools.setdefault(id(run.table_pool[0]), []).append(i)
    return list(pools.values())


def _pooled_rows(stack: Stack, planned: list[tuple], r: int) -> list[Any]:
    """Each planned run's per-client table rows (:func:`_table_rows`): for the runs of a pool one gather a leaf,
    each run's rows a view of it."""
    runs = [p[0] for p in planned]
    rows: list[Any] = [None] * len(planned)
    pooled = _by_pool(runs)
    for idx in pooled:
        leaves = runs[idx[0]].table_pool[0]
        clients = [planned[i][2].clients for i in idx]
        index = _pool_index(stack, [runs[i] for i in idx], clients, leaves[0].device, r)
        gathered = [leaf[index[0], index[1]] for leaf in leaves]
        lo = 0
        for i, c in zip(idx, clients):
            rows[i] = tree.unflatten(runs[i].table, [g[lo: lo + len(c)] for g in gathered])
            lo += len(c)
    done = {i for idx in pooled for i in idx}
    return [rows[i] if i in done else _table_rows(run, planned[i][2].clients, stack.device)
            for i, run in enumerate(runs)]


def algorithm_at(algorithm: Any, lr_decay: float, r: int) -> Any:
    """``algorithm`` as it runs in round ``r``: with lr * lr_decay ** r (SimulationConfig.lr_decay; the object
    itself when the rate is constant)."""
    if lr_decay == 1.0:
        return algorithm
    if not dataclasses.is_dataclass(algorithm) or "lr" not in {f.name for f in dataclasses.fields(algorithm)}:
        raise ValueError(f"lr_decay {lr_decay}: algorithm {type(algorithm).__name__} has no lr field to decay")
    return dataclasses.replace(algorithm, lr=algorithm.lr * lr_decay ** r)


def run_round(stack: Stack, schedules: list[RoundSchedule], rows: int | None = None) -> None:
    """Run the local work of every scheduled run at once, then each run's aggregation (in place on the runs).
    With ``stack.capture`` static or cuda_graph, the local work runs at a static shape (fedbench.engine.static):
    ``rows`` client rows (default: this round's own; the round loop passes its block's, so that every round of a
    block has the same rows) and this round's largest client's steps (for cuda_graph rounded up to a multiple
    of fedbench.engine.capture.GRAPH_STEPS)."""
    if not schedules:
        return
    local_fn = LOCAL_PATHS[stack.local_path]
    algorithm = schedules[0].algorithm  # client_step reads only fields every run of the stack shares
    if stack.capture != "none":
        locals_ = _run_static(stack, schedules, algorithm, rows)
    elif len(schedules) == 1:
        s = schedules[0]
        data = CohortData(x=stack.x, y=stack.y, x_prepared=stack.x_prepared,
                          batches=_put(stack, (s.round, "batches"), s.batches), starts=_starts(s.steps), steps=s.steps)
        kernel_or_model = stack.kernel if stack.local_path == "vectorized" else stack.model
        locals_ = [local_fn(algorithm, kernel_or_model, s.bcast, s.local, data)]
    else:
        locals_ = _run_merged(stack, schedules, local_fn, algorithm)
    if batched_runs(stack) and len(schedules) > 1:
        _aggregate_over_runs(stack, schedules, locals_)
        return
    for s, local in zip(schedules, locals_):
        run, alg = s.run, s.algorithm
        client_result = getattr(alg, "client_result", None)
        result, new_rows = client_result(local, s.bcast, s.cohort) if client_result is not None else (local, None)
        run.state = alg.server_update(run.state, result, s.cohort.weights, s.cohort)
        _write_rows(stack, s, new_rows)


def _aggregate_over_runs(stack: Stack, schedules: list[RoundSchedule], locals_: list[Any]) -> None:
    """Each run's client_result and server_update, once for each group of runs (fedbench.engine.vmap_runs)."""
    with_result = [j for j, s in enumerate(schedules) if getattr(s.algorithm, "client_result", None) is not None]
    outputs: list[Any] = [(local, None) for local in locals_]
    done = call_over_runs("client_result", [schedules[j].algorithm for j in with_result],
                          [(locals_[j], schedules[j].bcast, schedules[j].cohort) for j in with_result])
    for j, out in zip(with_result, done):
        outputs[j] = out
    states = call_over_runs("server_update", [s.algorithm for s in schedules],
                            [(s.run.state, result, s.cohort.weights, s.cohort)
                             for s, (result, _) in zip(schedules, outputs)])
    for s, state in zip(schedules, states):
        s.run.state = state
    pooled = _by_pool([s.run for s in schedules])
    for idx in pooled:
        _write_pooled(stack, [schedules[i] for i in idx], [outputs[i][1] for i in idx])
    done = {i for idx in pooled for i in idx}
    for i, (s, (_, new_rows)) in enumerate(zip(schedules, outputs)):
        if i not in done:
            _write_rows(stack, s, new_rows)


def _write_pooled(stack: Stack, schedules: list[RoundSchedule], new_rows: list[Any]) -> None:
    """:func:`_write_rows` for the runs of one pool: the rows written over gathered once (kept for the runs with a
    window) and the new rows written with one index_put a leaf."""
    if any(r is None for r in new_rows):  # an algorithm with a table that wrote none this round: run by run
        for s, rows in zip(schedules, new_rows):
            if rows is not None:
                _write_rows(None, s, rows)
        return
    runs = [s.run for s in schedules]
    leaves = runs[0].table_pool[0]
    sizes = [len(s.clients) for s in schedules]
    index = _pool_index(stack, runs, [s.clients for s in schedules], leaves[0].device, schedules[0].round)
    windows = [j for j, run in enumerate(runs) if run.window is not None]
    if windows:  # the rows written over, kept until each run's signal is read back
        old = [leaf[index[0], index[1]] for leaf in leaves]
        starts = np.cumsum([0, *sizes])
        for j in windows:
            rows = tree.unflatten(runs[j].table, [o[starts[j]: starts[j + 1]] for o in old])
            runs[j].window.undo.append((schedules[j].cohort.clients, rows))
    for leaf, parts in zip(leaves, zip(*(tree.tree_leaves(r) for r in new_rows))):
        leaf.index_put_((index[0], index[1]), concat_rows(parts))


def _write_rows(stack: Stack | None, s: RoundSchedule, new_rows: Any) -> None:
    """The cohort's new rows of the run's per-client table (client_result's), written in place (``stack`` None: a
    pooled table, on the stack's device)."""
    run = s.run
    if run.table is None or new_rows is None:
        return
    if stack is None or run.table_device == stack.device:
        index = s.cohort.clients
    else:  # a table kept in host memory: the new rows are read back (fedbench.engine.simulation._table_device)
        index = to_device(s.clients, run.table_device)
        new_rows = tree.tree_map(lambda t: t.to(run.table_device), new_rows)
    if run.window is not None:  # the rows written over, kept until the run's signal is read back
        run.window.undo.append((index, tree.take_rows(run.table, index)))
    run.table = tree.scatter_rows(run.table, index, new_rows)


def _run_merged(stack: Stack, schedules: list[RoundSchedule], local_fn, algorithm) -> list[Any]:
    """The cohorts of several runs as one: rows merged in work-sorted order (stable, so each run's rows keep
    their own order), the broadcast given one row per cohort row, local work run once, rows handed back."""
    r = schedules[0].round
    order, run_of_row, batches, back = _merged_host(schedules)
    steps = np.concatenate([s.steps for s in schedules])
    starts = _starts(steps)  # the runs' batches concatenated: row k's minibatches from starts[k] on
    local = tree.take_rows(tree.concat([s.local for s in schedules]), _put(stack, (r, "order"), order))
    bcast = row_broadcast([s.bcast for s in schedules], _put(stack, (r, "run_of_row"), run_of_row))
    data = CohortData(x=stack.x, y=stack.y, x_prepared=stack.x_prepared, batches=_put(stack, (r, "batches"), batches),
                      starts=starts[order], steps=steps[order])
    kernel_or_model = stack.kernel if stack.local_path == "vectorized" else stack.model
    merged = local_fn(algorithm, kernel_or_model, bcast, local, data, row_bcast=True)
    back = tree.take_rows(merged, _put(stack, (r, "back"), back))
    return _hand_back(stack, back, [len(s.steps) for s in schedules])


def _merged_host(schedules: list) -> tuple[np.ndarray, ...]:
    """The host arrays of :func:`_run_merged`: the rows' work-sorted order, each row's run, the runs' minibatches one
    after another, and the order back."""
    steps = np.concatenate([s.steps for s in schedules])
    order = np.argsort(-steps, kind="stable")
    run_of_row = np.repeat(np.arange(len(schedules)), [len(s.steps) for s in schedules])[order]
    return (order, run_of_row, np.concatenate([s.batches for s in schedules]),
            np.argsort(order, kind="stable"))


def _hand_back(stack: Stack, merged: Any, sizes: list[int]) -> list[Any]:
    """Each run's rows of the merged local state. On the CPU as fresh tensors: a view at an offset into the merged
    buffer would be differently aligned than the run's own buffer, and BLAS reductions over it (the server's
    weighted mean) may then round differently. Where the runs are batched (:func:`batched_runs`) as views: the
    runs of a group then lie one after another, and their aggregation reads them without a copy."""
    fresh = not batched_runs(stack)
    out, lo = [], 0
    for k in sizes:
        rows = tree.rows(merged, lo, lo + k)
        out.append(tree.tree_map(torch.clone, rows) if fresh else rows)
        lo += k
    return out


def _run_static(stack: Stack, schedules: list[RoundSchedule], algorithm, rows: int | None) -> list[Any]:
    """The runs' cohorts as the rows of one static-shape loop (fedbench.engine.static), sorted by steps (stable;
    a run alone is already: its cohort is work-sorted) so that each step runs on the row bucket holding its active
    rows (a prefix), eagerly or replayed from a CUDA graph a bucket; each run's rows handed back
    (:func:`_hand_back`)."""
    r = schedules[0].round
    sizes = [len(s.steps) for s in schedules]
    shape, order, sorted_ = _static_layout(stack, schedules, rows)
    device = stack.device
    cohort = pad_schedule([s.steps for s in schedules], [s.batches for s in schedules], shape, device,
                          order=None if sorted_ else order, buckets=stack.capture in ("static", "cuda_graph"),
                          row_bcast=len(schedules) > 1, put=lambda name, array: _put(stack, (r, name), array))
    local = tree.concat([s.local for s in schedules])
    if not sorted_:
        local = tree.take_rows(local, _put(stack, (r, "order"), order))
    local = pad_rows(local, shape.rows)
    if len(schedules) == 1:
        bcast = schedules[0].bcast
    else:
        bcast = row_broadcast([s.bcast for s in schedules], _put(stack, (r, "run_of_row"),
                                                                 _static_run_of_row(sizes, order, shape)))
    if stack.capture in FUSED_MODES:  # Triton launches: mclr one a chain step (or a round), CNNs 3 a layer, LSTMs
        from fedbench.engine.fused import family, run_step  # a cell a timestep and layer (CUDA; fedbench.engine.fused)

        merged = run_step(family(stack.kernel), algorithm, stack.kernel, bcast, local, stack.x_prepared, stack.y,
                          cohort, persistent=stack.capture == "fused_round")  # the kernel reads the scalars as numbers
    elif stack.capture == "cuda_graph":
        merged = stack.captured.run(step_form(algorithm, local), stack.kernel, bcast, local, stack.x_prepared,
                                    stack.y, cohort)
    else:
        merged = run_static(step_form(algorithm, local), stack.kernel, bcast, local, stack.x_prepared, stack.y,
                            cohort)
    if not sorted_:  # each client's row back in schedule order (a gather: a fresh tensor)
        merged = tree.take_rows(merged, _put(stack, (r, "back"), np.argsort(order, kind="stable")))
    elif batched_runs(stack) and stack.capture != "static":  # a graph's own output buffer (overwritten by its next
        # replay) or a fused kernel's: one copy for the stack, of which each run's rows are views
        merged = tree.tree_map(torch.clone, merged)
    return _hand_back(stack, merged, sizes)


def _static_layout(stack: Stack, schedules: list, rows: int | None) -> tuple[StaticShape, np.ndarray, bool]:
    """The static shape of a round of ``schedules`` (``rows``: the block's rows; steps: the round's largest client's,
    for cuda_graph a multiple of GRAPH_STEPS), the rows' order sorted by steps (stable), and whether it is the
    identity."""
    all_steps = np.concatenate([s.steps for s in schedules])
    order = np.argsort(-all_steps, kind="stable")
    sorted_ = bool(np.all(order == np.arange(len(order))))
    steps = int(all_steps.max())
    if stack.capture == "cuda_graph":
        steps = -(-steps // GRAPH_STEPS) * GRAPH_STEPS
    return StaticShape(rows=len(all_steps) if rows is None else rows, steps=steps, batch=stack.batch_size), order, sorted_


def _static_run_of_row(sizes: list[int], order: np.ndarray, shape: StaticShape) -> np.ndarray:
    """Each static row's run (the padding rows: run 0)."""
    run_of_row = np.repeat(np.arange(len(sizes)), sizes)[order]
    return np.concatenate([run_of_row, np.zeros(shape.rows - len(run_of_row), np.int64)])


def step_form(algorithm: Any, local: Any) -> Any:
    """``algorithm`` as the static loop runs its client_step: each number field its class declares in
    ``step_scalars`` (the round's lr, decayed or not) a 0-dim tensor on the local state's device, of its dtype.
    A captured graph then keeps the tensor as an input buffer and each round copies its value in
    (fedbench.engine.capture), so a learning rate decayed every round no longer captures a graph every round.
    Bit for bit the same step: ATen casts a Python number to the tensor's dtype before it multiplies, as
    ``torch.full`` does here. The copy is made without the class's __post_init__ (its checks read numbers)."""
    names = [n for n in getattr(type(algorithm), "step_scalars", ())
             if isinstance(getattr(algorithm, n), (int, float)) and not isinstance(getattr(algorithm, n), bool)]
    if not names:
        return algorithm
    leaf = tree.tree_leaves(local)[0]
    form = copy.copy(algorithm)
    for n in names:
        object.__setattr__(form, n, torch.full((), float(getattr(algorithm, n)), dtype=leaf.dtype, device=leaf.device))
    return form


def _starts(steps: np.ndarray) -> np.ndarray:
    return np.cumsum(steps) - steps


def row_broadcast(bcasts: list[Any], run_of_row: torch.Tensor) -> Any:
    """One broadcast for a merged cohort: each tensor becomes one row per cohort row (its run's value; a scalar
    tensor becomes a column [rows, 1]), a number that differs between runs becomes a column tensor [rows, 1]
    (e.g. FedProx's mu when runs with different mu share a stack), anything else must be equal in every run."""
    first = bcasts[0]
    if isinstance(first, torch.Tensor):
        stacked = stack_rows(bcasts)[run_of_row]  # the runs' tensors gathered (no copy first where one buffer)
        return stacked.unsqueeze(1) if first.dim() == 0 else stacked
    if isinstance(first, (int, float)) and not isinstance(first, bool):
        if all(b == first for b in bcasts):
            return first
        return to_device(torch.tensor([float(b) for b in bcasts]), run_of_row.device)[run_of_row].unsqueeze(1)
    if hasattr(first, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.replace(first, **{f.name: row_broadcast([getattr(b, f.name) for b in bcasts], run_of_row)
                                             for f in dataclasses.fields(first)})
    if first is None or all(b == first for b in bcasts):
        return first
    raise ValueError(f"runs of a stack broadcast different values of a {type(first).__name__}; they cannot share "
                     "a stack")


def _table_rows(run: RunState, clients: np.ndarray, device: torch.device) -> Any:
    if run.table is None:
        return None
    rows = tree.take_rows(run.table, to_device(clients, run.table_device))
    return rows if run.table_device == device else tree.tree_map(lambda t: to_device(t, device), rows)


def _check_chosen(chosen, available: np.ndarray, k: int) -> np.ndarray:
    chosen = np.asarray(chosen, dtype=np.int64)
    if chosen.ndim != 1 or len(chosen) != k or len(np.unique(chosen)) != k or not np.all(available[chosen]):
        raise ValueError(f"choose_clients must return {k} distinct available clients, got {chosen.tolist()}")
    return chosen


def _full_grad_fn(kernel, data: DeviceData, clients: np.ndarray) -> Callable[[torch.Tensor], torch.Tensor]:
    """Gradient of each cohort client's loss on all its training data, at per-client parameters [K, P]: the
    kernel's client_grads on the stored training arrays (the mclr kernel reads each client's contiguous rows in
    place; the others gather the cohort's rows on each call). Where the runs are batched, the runs of a vmap group
    on one dataset compute theirs in one call (fedbench.engine.vmap_runs.ClientsFullGrad)."""
    return ClientsFullGrad(kernel, data, clients)


def _client_grads_fn(kernel, data: DeviceData) -> Callable[[np.ndarray, torch.Tensor], torch.Tensor]:
    """Gradient of F_j on all its training data at one model theta [P], for any clients j."""

    def client_grads(clients: np.ndarray, theta: torch.Tensor) -> torch.Tensor:
        clients = np.asarray(clients, dtype=np.int64)
        return _full_grad_fn(kernel, data, clients)(theta.expand(len(clients), -1))

    return client_grads


@torch.no_grad()
def cohort_losses(kernel, data: DeviceData, clients: np.ndarray, theta: torch.Tensor) -> np.ndarray:
    """F_k(theta) for each client k of ``clients``: its mean loss on all its training data (float64 [K]), read back
    to the host."""
    return cohort_loss_tensor(kernel, data, clients, theta).double().cpu().numpy()


# Devices where the work of a stack's runs around their local steps is batched over the runs: the cohort losses of the
# divergence signal, each run at its own model, in one pass (a kernel's ``run_losses``), the cohorts uploaded together,
# and the algorithm's client_init, client_result and server_update once for each group of runs
# (fedbench.engine.vmap_runs). Not the CPU: there a batched product's last bits depend on its shape (MKL picks its
# kernel by shape), so a run's numbers could differ in the last bits stacked and alone; on CUDA the numbers are held to
# the GPU check's tolerance, and an operator a run is a launch a run.
BATCHED_SIGNAL_DEVICES = ("cuda",)


@torch.no_grad()
def cohort_loss_tensors(stack: Stack, schedules: list[RoundSchedule]) -> list[torch.Tensor]:
    """Each scheduled run's F_k(w_r) (float32 [K] on the device, not read back), at its own model w_r: the divergence
    signal's losses. On BATCHED_SIGNAL_DEVICES, where the kernel has ``run_losses`` and the stack keeps prepared
    inputs, one pass for all runs: each run's cohort samples are a row of an [R, n_max] batch (padded with sample 0,
    whose losses go to a segment that is dropped), the losses summed per client by one index_add. Elsewhere
    :func:`cohort_loss_tensor` a run, bit for bit as the run alone."""
    run_losses = getattr(stack.kernel, "run_losses", None)
    if not _batched_signal(stack, len(schedules)):
        if stack.uploads is None:
            return [cohort_loss_tensor(stack.kernel, s.run.data, s.clients, s.run.state.theta) for s in schedules]
        out = []  # cohort_loss_tensor's operations, its segments taken from the block
        for j, s in enumerate(schedules):
            idx, seg, counts = (_put(stack, (s.round, "segments", j, name), a)
                                for name, a in zip("isc", _segments_host(s.run.data.train_offsets, s.clients)))
            out.append(stack.kernel.segment_losses(s.run.state.theta, s.run.data.x_train[idx], s.run.data.y_train[idx],
                                                   seg, counts))
        return out
    r = schedules[0].round
    index, segment, counts = _signal_host([(s.run, s.clients) for s in schedules])
    index_t = _put(stack, (r, "signal_index"), index)
    thetas = stack_rows([s.run.state.theta for s in schedules])
    per_sample = run_losses(thetas, stack.x_prepared[index_t], stack.y[index_t])  # [R, width]
    total = len(counts)
    sums = torch.zeros(total + 1, dtype=per_sample.dtype, device=per_sample.device)
    sums.index_add_(0, _put(stack, (r, "signal_segment"), segment), per_sample.flatten())
    losses = sums[:total] / _put(stack, (r, "signal_counts"), counts, per_sample.dtype)
    return list(losses.split([len(s.clients) for s in schedules]))


def _batched_signal(stack: Stack, runs: int) -> bool:
    """Whether the divergence signal of ``runs`` scheduled runs is one batched pass (:func:`cohort_loss_tensors`)."""
    return (runs >= 2 and getattr(stack.kernel, "run_losses", None) is not None
            and stack.device.type in BATCHED_SIGNAL_DEVICES and stack.local_path == "vectorized")


def _segments_host(offsets: np.ndarray, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """fedbench.engine.kernels.generic.client_segments's host arrays: the clients' sample indices, their segments and
    the counts n_k."""
    counts = offsets[clients + 1] - offsets[clients]
    idx = (np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in clients]) if len(clients)
           else np.zeros(0, np.int64))
    return idx, np.repeat(np.arange(len(clients)), counts), counts


def _signal_host(runs: list[tuple[RunState, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The host arrays of :func:`cohort_loss_tensors` for (run, cohort clients) pairs: each run's cohort samples a row
    of an [R, n_max] index (padded with sample 0), each sample's client segment (padding: the dropped segment, the
    last), and every client's sample count."""
    parts, counts = [], []
    for run, clients in runs:
        offsets = run.data.train_offsets
        sizes = offsets[clients + 1] - offsets[clients]
        parts.append(np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in clients]) + run.base)
        counts.append(sizes)
    width, total = max(len(p) for p in parts), sum(len(c) for c in counts)
    index = np.zeros((len(parts), width), np.int64)
    segment = np.full((len(parts), width), total, np.int64)  # padding: the dropped segment
    lo = 0
    for j, (p, c) in enumerate(zip(parts, counts)):
        index[j, : len(p)] = p
        segment[j, : len(p)] = lo + np.repeat(np.arange(len(c)), c)
        lo += len(c)
    return index, segment.ravel(), np.concatenate(counts)


@torch.no_grad()
def cohort_loss_tensor(kernel, data: DeviceData, clients: np.ndarray, theta: torch.Tensor) -> torch.Tensor:
    """:func:`cohort_losses` left on the device (float32 [K])."""
    idx_t, seg_t, counts = client_segments(data.train_offsets, clients, data.x_train.device)
    return kernel.segment_losses(theta, data.x_train[idx_t], data.y_train[idx_t], seg_t, counts)

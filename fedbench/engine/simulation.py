"""The round loop: evaluate, select, run local work, aggregate; with callbacks, checkpoints and resume.

The engine knows no algorithm by name. An algorithm is a frozen object with these methods, each taking
and returning explicit state (tensors carry a leading cohort axis; client functions use only row-wise
operations, so the same function runs one client in the reference loop or the whole cohort at once):

    keeps_partial_work: bool                      # stragglers' partial work aggregated (True) or dropped
    init(theta0, num_clients) -> server_state      # server_state.theta is the global model [P]
    broadcast(server_state) -> bcast                # what every selected client receives
    client_init(bcast, cohort) -> local            # cohort: Cohort below (clients, weights, round, seed, ...)
    client_step(local, grad_fn, bcast) -> local    # one minibatch step; grad_fn(theta [a, P]) -> [a, P]
    server_update(server_state, result, weights, cohort) -> server_state   # weights [K] = cohort.weights

and, where an algorithm needs them (the engine uses a default where one is not defined):

    init_clients(num_clients, theta0) -> client_table   # per-client state kept across rounds; default: none
    begin_round(server_state, evaluation) -> server_state   # default: unchanged
    client_result(local, bcast, cohort) -> (result, new_client_rows | None)   # default: (local, None)
    choose_clients(server_state, round_, available, k) -> (server_state, clients)
        The algorithm picks its own cohort instead of the uniform draw: ``available`` is the bool [N] mask of
        the round, ``k`` = min(clients_per_round, #available); it returns k distinct available client
        indices. Aggregation weights are then those of the sampling scheme (n_k, or equal), and stragglers
        are drawn among the chosen clients as usual.
    filter_cohort(server_state, round_, losses, num_samples) -> (server_state, weights)
        Called after selection and before local work with ``losses`` (float64 [K]), each selected client's
        loss F_k on all its training data at server_state.theta, and ``num_samples`` [K]. It returns
        aggregation weights [K] (>= 0; those with 0 do no local work); they replace the scheme's weights.
        Stragglers are dropped afterwards (unless keeps_partial_work); a round where nobody is left is
        skipped.

Which clients can be selected at all comes from ``SimulationConfig.availability`` (fedbench.availability):
the uniform draw and ``choose_clients`` see only the clients available in the round.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from fedbench.availability import AvailabilityConfig, build_availability
from fedbench.data.format import FederatedDataset
from fedbench.engine import tree
from fedbench.engine.local import LOCAL_PATHS, CohortData
from fedbench.engine.metrics import DeviceData, Evaluation, evaluate, has_diverged, is_diverging
from fedbench.engine.sampling import minibatch_order, plan_round
from fedbench.seeding import torch_generator


@dataclass(frozen=True)
class SimulationConfig:
    rounds: int = 100
    clients_per_round: int = 10
    local_epochs: int = 20
    batch_size: int = 10
    straggler_fraction: float = 0.0
    sampling: str = "uniform"
    straggler_epochs: str = "authors_code"
    seed: int = 0
    device: str = "auto"
    local_path: str = "vectorized"
    eval_every: int = 1
    checkpoint_every: int = 25
    local_steps: int = 0  # 0: local_epochs epochs of local work; C > 0: exactly C minibatch steps per client
    availability: AvailabilityConfig = field(default_factory=AvailabilityConfig)  # who can be selected, per round


@dataclass(frozen=True)
class Cohort:
    """The clients training this round, in the engine's (work-sorted) order, and what the round knows of them
    before any local work."""

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

    @property
    def num_clients(self) -> int | None:
        """N, all clients of the dataset."""
        return None if self.train_sizes is None else len(self.train_sizes)

    @property
    def total_samples(self) -> int | None:
        """n, training samples of all N clients."""
        return None if self.train_sizes is None else int(self.train_sizes.sum())


@dataclass(frozen=True)
class RunResult:
    history: list[dict[str, float]]
    final: Evaluation
    theta: torch.Tensor
    diverged: bool
    param_digest: str
    device: str


class Callback(Protocol):
    """``on_round_end`` gets each round's metrics row and may stop the run by returning True. A callback may
    also define ``on_model(round_, theta)``: it then gets the global model after round r's update (w_{r+1}, on
    the compute device; copy what you keep)."""

    def on_round_end(self, round_: int, row: dict[str, float]) -> bool | None: ...


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device={name!r} but CUDA is not available here; use 'auto' or 'cpu'")
    return torch.device(name)


def param_digest(theta: torch.Tensor) -> str:
    return hashlib.sha256(theta.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()[:16]


def simulate(
    cfg: SimulationConfig,
    dataset: FederatedDataset,
    model: Any,
    algorithm: Any,
    callbacks: tuple[Any, ...] = (),
    checkpoint: str | os.PathLike | None = None,
) -> RunResult:
    device = resolve_device(cfg.device)
    if cfg.clients_per_round > dataset.num_clients:
        raise ValueError(f"clients_per_round={cfg.clients_per_round} exceeds the {dataset.num_clients} clients")
    if cfg.local_steps < 0:
        raise ValueError(f"local_steps={cfg.local_steps} must be >= 0 (0: local work given by local_epochs)")
    if cfg.local_steps and cfg.straggler_fraction > 0:
        raise ValueError("stragglers are defined in epochs (FedProx section 5.2); with local_steps > 0 use "
                         "straggler_fraction=0")
    availability = build_availability(cfg.availability, dataset)
    data = DeviceData.build(dataset, device)
    sizes = dataset.train.sizes
    theta0 = model.init(torch_generator(cfg.seed, -1, "init")).to(device)
    state = algorithm.init(theta0, dataset.num_clients)
    init_clients = getattr(algorithm, "init_clients", None)
    table = init_clients(dataset.num_clients, theta0) if init_clients is not None else None
    history: list[dict[str, float]] = []
    start = 0
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt and ckpt.exists():
        saved = torch.load(ckpt, map_location=device, weights_only=False)
        start, state, table, history = saved["round"], saved["state"], saved["table"], saved["history"]

    if cfg.local_path not in LOCAL_PATHS:
        raise ValueError(f"local_path={cfg.local_path!r}; allowed: {list(LOCAL_PATHS)}")
    local_fn = LOCAL_PATHS[cfg.local_path]
    # the training inputs as the vectorized path feeds them to the model, prepared once for the whole run
    x_prepared = model.prepare_inputs(data.x_train) if cfg.local_path == "vectorized" else None
    losses = [row["train/loss"] for row in history]
    diverged = False
    for r in range(start, cfg.rounds):
        t0 = time.perf_counter()
        ev = evaluate(model, state.theta, data, with_dissimilarity=(r % cfg.eval_every == 0))
        losses.append(ev.train_loss)
        row = {"round": r, **ev.scalars(), "diverging": float(is_diverging(losses))}
        if has_diverged(losses):  # a result, not an error: the run stops here, recorded diverged
            diverged = True
            history.append(row | {"wall_time_s": 0.0})
            _notify(callbacks, r, history[-1])
            break
        eval_s = time.perf_counter() - t0
        if hasattr(algorithm, "begin_round"):
            state = algorithm.begin_round(state, ev)
        state, table = _train_round(cfg, r, sizes, data, x_prepared, model, algorithm, state, table, local_fn,
                                    device, availability.mask(cfg.seed, r))
        if device.type == "cuda":
            torch.cuda.synchronize()
        row |= {"wall_time_s": time.perf_counter() - t0, "eval_time_s": eval_s}
        history.append(row)
        _notify_model(callbacks, r, state.theta)
        stop = _notify(callbacks, r, row)
        if ckpt and ((r + 1) % cfg.checkpoint_every == 0) and r + 1 < cfg.rounds:
            _save_checkpoint(ckpt, r + 1, state, table, history)
        if stop:
            break

    final = evaluate(model, state.theta, data)
    if not diverged:
        history.append({"round": len(history), **final.scalars(), "diverging": float(is_diverging(losses + [final.train_loss])),
                        "wall_time_s": 0.0, "eval_time_s": 0.0})
    if ckpt and ckpt.exists():
        ckpt.unlink()
    return RunResult(history=history, final=final, theta=state.theta.detach().cpu(),
                     diverged=diverged or has_diverged(losses + [final.train_loss]),
                     param_digest=param_digest(state.theta), device=str(device))


def _notify(callbacks: tuple[Any, ...], r: int, row: dict[str, float]) -> bool:
    stop = False
    for cb in callbacks:
        fn = getattr(cb, "on_round_end", None)
        if fn is not None and fn(r, row):
            stop = True
    return stop


def _notify_model(callbacks: tuple[Any, ...], r: int, theta: torch.Tensor) -> None:
    for cb in callbacks:
        fn = getattr(cb, "on_model", None)
        if fn is not None:
            fn(r, theta.detach())


def _save_checkpoint(path: Path, round_: int, state: Any, table: Any, history: list) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save({"round": round_, "state": state, "table": table, "history": history}, tmp)
    os.replace(tmp, path)


def _train_round(cfg, r, sizes, data: DeviceData, x_prepared: torch.Tensor | None, model, algorithm, state,
                 table, local_fn, device, available: np.ndarray):
    choose = getattr(algorithm, "choose_clients", None)
    chosen = None
    if choose is not None:
        k = min(cfg.clients_per_round, int(available.sum()))
        state, chosen = choose(state, r, available, k)
        chosen = _check_chosen(chosen, available, k)
    plan = plan_round(cfg.seed, r, sizes, cfg.clients_per_round, cfg.sampling, cfg.straggler_fraction,
                      cfg.local_epochs, cfg.straggler_epochs, available=available, chosen=chosen)
    weights = plan.weights
    keep = np.ones(len(plan.clients), bool) if algorithm.keeps_partial_work else ~plan.straggler
    filter_cohort = getattr(algorithm, "filter_cohort", None)
    if filter_cohort is not None and len(plan.clients):
        losses = cohort_losses(model, data, plan.clients, state.theta)
        state, weights = filter_cohort(state, r, losses, sizes[plan.clients])
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != plan.clients.shape or np.any(weights < 0) or not np.all(np.isfinite(weights)):
            raise ValueError(f"filter_cohort must return {len(plan.clients)} finite weights >= 0, got {weights}")
        keep &= weights > 0
    clients, epochs, weights = plan.clients[keep], plan.epochs[keep], weights[keep]
    if len(clients) == 0:
        return state, table
    # Work-sorted order: most local steps first (stable), so active clients form a prefix.
    per_epoch = -(-sizes[clients] // cfg.batch_size)
    if cfg.local_steps:  # exactly C steps, cycling through fresh permutations (FedLaAvg's local iterations)
        steps = np.where(per_epoch > 0, cfg.local_steps, 0)
        epochs = -(-steps // np.maximum(per_epoch, 1))
    else:
        steps = epochs * per_epoch
    order = np.argsort(-steps, kind="stable")
    clients, epochs, weights, steps = clients[order], epochs[order], weights[order], steps[order]

    schedule = np.full((len(clients), int(steps.max()), cfg.batch_size), -1, dtype=np.int64)
    for i, (c, e, s) in enumerate(zip(clients, epochs, steps)):
        local_idx = minibatch_order(cfg.seed, r, int(c), int(sizes[c]), int(e), cfg.batch_size)[:s]
        schedule[i, : len(local_idx)] = np.where(local_idx >= 0, local_idx + data.train_offsets[c], -1)
    index = torch.from_numpy(schedule).to(device)
    cohort_data = CohortData(x=data.x_train, y=data.y_train, num_classes=data.num_classes, index=index,
                             steps=steps, x_prepared=x_prepared)

    client_idx = torch.from_numpy(clients).to(device)
    rows = tree.take_rows(table, client_idx) if table is not None else None
    w = torch.as_tensor(weights / weights.sum(), dtype=torch.float32, device=device)
    cohort = Cohort(
        clients=client_idx, num_samples=torch.from_numpy(sizes[clients]).to(device),
        epochs=torch.from_numpy(epochs).to(device), steps=torch.from_numpy(steps).to(device),
        client_rows=rows, full_grad=_full_grad_fn(model, data, clients, device), weights=w, round=r,
        seed=cfg.seed, available=available, train_sizes=sizes, client_grads=_client_grads_fn(model, data, device),
    )
    bcast = algorithm.broadcast(state)
    local = algorithm.client_init(bcast, cohort)
    local = local_fn(algorithm, model, bcast, local, cohort_data)
    client_result = getattr(algorithm, "client_result", None)
    result, new_rows = client_result(local, bcast, cohort) if client_result is not None else (local, None)
    state = algorithm.server_update(state, result, w, cohort)
    if table is not None and new_rows is not None:
        table = tree.scatter_rows(table, client_idx, new_rows)
    return state, table


def _check_chosen(chosen, available: np.ndarray, k: int) -> np.ndarray:
    chosen = np.asarray(chosen, dtype=np.int64)
    if chosen.ndim != 1 or len(chosen) != k or len(np.unique(chosen)) != k or not np.all(available[chosen]):
        raise ValueError(f"choose_clients must return {k} distinct available clients, got {chosen.tolist()}")
    return chosen


def _cohort_segments(data: DeviceData, clients: np.ndarray, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Global indices of the cohort's training samples, their position in the cohort, and the counts n_k."""
    offs = data.train_offsets
    counts = offs[clients + 1] - offs[clients]
    idx = np.concatenate([np.arange(offs[c], offs[c + 1]) for c in clients])
    seg = np.repeat(np.arange(len(clients)), counts)
    return (torch.from_numpy(idx).to(device), torch.from_numpy(seg).to(device),
            torch.from_numpy(counts).to(device))


def _full_grad_fn(model, data: DeviceData, clients: np.ndarray, device) -> Callable[[torch.Tensor], torch.Tensor]:
    """Gradient of each cohort client's loss on all its training data, at per-client parameters [K, P]. The
    cohort's sample indices are built on the first call: most algorithms never make one."""
    segments = None

    def full_grad(theta: torch.Tensor) -> torch.Tensor:
        nonlocal segments
        if segments is None:
            segments = _cohort_segments(data, clients, device)
        idx_t, seg_t, counts = segments
        return model.segment_grads(theta, data.x_train[idx_t], data.y_train[idx_t], seg_t, counts)

    return full_grad


def _client_grads_fn(model, data: DeviceData, device) -> Callable[[np.ndarray, torch.Tensor], torch.Tensor]:
    """Gradient of F_j on all its training data at one model theta [P], for any clients j."""

    def client_grads(clients: np.ndarray, theta: torch.Tensor) -> torch.Tensor:
        clients = np.asarray(clients, dtype=np.int64)
        return _full_grad_fn(model, data, clients, device)(theta.expand(len(clients), -1))

    return client_grads


@torch.no_grad()
def cohort_losses(model, data: DeviceData, clients: np.ndarray, theta: torch.Tensor) -> np.ndarray:
    """F_k(theta) for each client k of ``clients``: its mean loss on all its training data (float64 [K])."""
    idx_t, seg_t, counts = _cohort_segments(data, clients, data.x_train.device)
    losses = model.segment_losses(theta, data.x_train[idx_t], data.y_train[idx_t], seg_t, counts)
    return losses.double().cpu().numpy()

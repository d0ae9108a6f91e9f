"""The round loop: evaluate, select, run local work, aggregate; with callbacks, checkpoints and resume; one run
(:func:`simulate`) or several independent runs stacked into one tensor program (:func:`simulate_stack`).

The engine knows no algorithm by name. An algorithm is a frozen object with these methods, each taking
and returning explicit state (tensors carry a leading cohort axis; client functions use only row-wise
operations, so the same function runs one client in the reference loop or the whole cohort at once):

    keeps_partial_work: bool                      # stragglers' partial work aggregated (True) or dropped
    init(theta0, num_clients) -> server_state      # server_state.theta is the global model [P]
    broadcast(server_state) -> bcast                # what every selected client receives
    client_init(bcast, cohort) -> local            # cohort: fedbench.engine.round.Cohort (clients, weights, ...)
    client_step(local, grad_fn, bcast) -> local    # one minibatch step; grad_fn(theta [a, P]) -> [a, P]
    server_update(server_state, result, weights, cohort) -> server_state   # weights [K] = cohort.weights

and, where an algorithm needs them (the engine uses a default where one is not defined):

    init_clients(num_clients, theta0) -> client_table   # per-client state kept across rounds; default: none
    begin_round(server_state, evaluation) -> server_state   # default: unchanged
        with a class attribute ``needs_evaluation`` naming the metrics it reads (e.g. ("train/loss",)): the engine
        evaluates them every round, whatever the protocol (fedbench.engine.evaluation); refused at build time
        without one
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
    stack_varying: tuple[str, ...]   # class attribute: fields that may differ between the runs of one stack
        (client_step must not read them: it runs once for the whole stack, on the first run's object).
    stacks_as() -> algorithm
        The same algorithm written as another algorithm's object, whose runs it may then share a stack with
        (:func:`stacking_form`; e.g. FedAvg as FedProx with mu = 0 dropping its stragglers).
    step_scalars: tuple[str, ...]   # class attribute: number fields client_step reads only through tensor
        arithmetic (lr), which the static loop hands it as 0-dim device tensors, so that a captured graph is
        replayed with each round's value (a decayed lr) instead of captured again (fedbench.engine.round.step_form).

What is evaluated, and when, is declared (``SimulationConfig.evaluations``, fedbench.engine.evaluation): by default
train and test on every client every round and on the final model; a study may declare a cadence, listed rounds,
a seeded sample of clients or samples, and the dataset's global test set. History rows are the evaluated rounds,
each with its ``round``; divergence is caught in the round it happens (from the cohort's own losses where the training
loss is not evaluated that round; that signal is read back once a window of rounds, see below).

A learning-rate schedule (``SimulationConfig.lr_decay``) is the engine's: in round r it hands the algorithm a
copy whose ``lr`` field is lr * lr_decay ** r, so an algorithm with an ``lr`` field needs nothing of its own.

Which clients can be selected at all comes from ``SimulationConfig.availability`` (fedbench.availability):
the uniform draw and ``choose_clients`` see only the clients available in the round; clients without
training data are never selected.

Stacked runs. Runs that share a model and every setting but the seed, the straggler fraction and the
availability (and whose datasets have the same input shape) can run as one stack: each run keeps its own
random streams and its own algorithm state, and schedules its own round exactly as it would alone; the
local steps of all runs' cohorts run as one merged cohort (fedbench.engine.round.run_round), so per-step
overhead is paid once per stack. Kernels compute each row on its own, so a run's training is bit-identical
stacked and alone (tested); its evaluation may differ in the last bits where several models are evaluated in
one batched product. A run that diverges leaves the stack and the others go on. On CUDA the work around the local
steps is batched over the runs too (the cohorts' upload, the per-client tables' rows, client_init, client_result and
server_update once for a group of runs: fedbench.engine.round.BATCHED_SIGNAL_DEVICES, fedbench.engine.vmap_runs),
within float32 rounding of the per-run calls; a run's state and table may then be views of one buffer (a checkpoint
saves its own copy).

Static shapes (``SimulationConfig.capture``: static or cuda_graph; issue 31). The loop then draws each run's rounds
a block of SCHEDULE_BLOCK at a time (fedbench.engine.schedule: the same draws as round by round), gives every round
of the block the same client rows (each run's largest cohort of the block), and runs the local steps padded and
masked (fedbench.engine.static), eagerly or replayed from a CUDA graph (fedbench.engine.capture). Where the runs are
batched (CUDA) blocks are drawn with any capture setting, and every array the block's rounds move to the device is
built ahead and moved in one transfer a block (fedbench.engine.uploads; :func:`_stage`), each round taking its views.

Waiting for the device (issue 31, item 3; counted by fedbench.engine.host_sync, per algorithm by
fedbench.bench.host_syncs). Every host array a round moves to the device goes through fedbench.ops.to_device
(pinned, non_blocking), and the algorithms decide on the cohort's host copies (Cohort.host_clients, host_steps),
so that a round between evaluations makes the host wait for none of it. The divergence signal of a run whose
protocol skips train/loss (the cohort's losses F_k(w_r)) stays on the device in the run's window (:class:`_Window`,
issue 49 D2) and every open window of the stack is read back in one read, once SCHEDULE_BLOCK rounds (20), or
earlier where the run is evaluated, checkpointed, or at its last round: a block of 20 rounds waits once. Declared
change of when the rule is applied, not of any number: a run whose signal tripped the rule in round t of a window is
found at the window's read; it is then put back as it was at the window's first round (its state, per-client table
rows, history and signal) and its rounds are run again one by one reading the signal every round, so the confirming
evaluation is on w_t, it stops in round t or goes on, and its numbers, rows, checkpoints and the models its
callbacks see are those of a read every round, bit for bit (tests/engine/test_signal_window.py); on_model is called
at the read, for the rounds of the window, in order. The replay costs the window's rounds again, for that run only.
The signal's losses are one batched pass over the stack's runs on CUDA (fedbench.engine.round.cohort_loss_tensors;
within fp32 rounding), a pass a run on the CPU (bit for bit as alone). What else still waits: each evaluation
(once for the runs evaluated together: fedbench.engine.metrics.evaluate_many reads every model's metrics in one
read), a state hook that reads the model (filter_cohort's losses, once a run), a per-client table kept in host
memory, and the synchronisation that times each round on CUDA. The schedule is drawn on the host (numpy streams).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from fedbench.availability import AvailabilityConfig, build_availability
from fedbench.data.format import FederatedDataset
from fedbench.engine import tree
from fedbench.engine.capture import CAPTURE_MODES, CapturedSteps, check_capture, check_fused
from fedbench.engine.precision import check_precision, computing
from fedbench.engine.kernels import choose_kernel
from fedbench.engine.local import LOCAL_PATHS
from fedbench.engine.evaluation import (DEFAULT_EVALUATIONS, DISSIMILARITY, EvalSpec, check_evaluations, check_needs)
from fedbench.engine.metrics import DIVERGENCE_FACTOR, DeviceData, Evaluation, evaluate_many, has_diverged, is_diverging
from fedbench.engine.round import (Cohort, RunState, Stack, cohort_loss_tensors, new_uploads, pool_tables, run_round,
                                   schedule_stack, stage_block)
from fedbench.engine.schedule import RoundDraw, schedule_block
from fedbench.seeding import rng, torch_generator

__all__ = ["Cohort", "EvalSpec", "RunResult", "RunSpec", "SimulationConfig", "build_stack", "check_spec", "simulate",
           "simulate_stack"]

TABLE_DEVICE_FRACTION = 0.25  # per-client tables larger than this share of free GPU memory stay in host memory


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
    # None: clients and stragglers are drawn from the run's seed. An int c: every run draws them from seed c's
    # streams, whatever its own seed (init and minibatches still follow it), as FedProx's authors' code does
    # (np.random.seed(round) before both draws: every seed sees the same clients and stragglers)
    cohort_seed: int | None = None
    device: str = "auto"
    local_path: str = "vectorized"
    # what is evaluated, and when (fedbench.engine.evaluation): by default train and test, every round, every
    # client, and the final model (FedProx's authors' protocol, the main job's)
    evaluations: tuple[EvalSpec, ...] = DEFAULT_EVALUATIONS
    # the gradient dissimilarity (FedProx Figure 2) in rounds 0, k, 2k, ... and on the final model (0: never);
    # params.yaml's train.eval_every maps onto it
    dissimilarity_every: int = 1
    # each client's gradient on a seeded sample of at most this many of its training samples (None: all of them;
    # FedProx's authors: at most 4 minibatches of 50 for their LSTMs)
    dissimilarity_samples: int | None = None
    checkpoint_every: int = 25
    local_steps: int = 0  # 0: local_epochs epochs of local work; C > 0: exactly C minibatch steps per client
    availability: AvailabilityConfig = field(default_factory=AvailabilityConfig)  # who can be selected, per round
    kernel: str = "auto"  # execution kernel (fedbench.engine.kernels): auto picks by model and device
    # a run whose loss exceeds this times max(|f_0|, 1) has diverged and stops (fedbench.engine.metrics.has_diverged);
    # a study whose losses legitimately grow far above the first round's (a plateau far from a tiny f_0) raises it
    divergence_factor: float = DIVERGENCE_FACTOR
    # the learning rate of round r is the algorithm's lr * lr_decay ** r (fedbench.engine.round.algorithm_at);
    # 1.0: constant. FedLaAvg's CIFAR-10 code decays by 0.9999 per round
    lr_decay: float = 1.0
    # how a round's local steps run (fedbench.engine.static, fedbench.engine.capture): "none" the ragged eager loop
    # (the default: fewest operations, the CPU's fastest); "static" every step on all client rows of the stack,
    # padded to the block's largest client and masked (the same numbers, no host read in the loop); "cuda_graph"
    # the static loop replayed from a CUDA graph (CUDA only; opt-in until measured on a GPU); "fused_step" and
    # "fused_round" the static loop's numbers within fp32 rounding from fedbench.engine.fused's Triton kernels, one
    # launch a chain step or one a round (CUDA, the mclr model; opt-in until measured on a GPU)
    capture: str = "none"
    # the arithmetic (fedbench.engine.precision): "fp32" IEEE float32 (the default; TF32 off on CUDA), or a
    # declared reduced mode, "tf32" (CUDA's tensor cores for matmuls and convolutions) or "bf16" (autocast)
    precision: str = "fp32"

    def __post_init__(self) -> None:
        if self.capture not in CAPTURE_MODES:
            raise ValueError(f"capture: {self.capture!r} is not allowed; allowed: {', '.join(CAPTURE_MODES)}")
        check_precision(self.precision, self.capture)
        if self.cohort_seed is not None and (not isinstance(self.cohort_seed, int) or self.cohort_seed < 0):
            raise ValueError(f"cohort_seed: {self.cohort_seed!r} must be None (the run's seed) or an integer >= 0")
        if not 0.0 < self.lr_decay <= 1.0:
            raise ValueError(f"lr_decay: {self.lr_decay} must be in (0, 1]")
        if not isinstance(self.evaluations, tuple) or not all(isinstance(e, EvalSpec) for e in self.evaluations):
            raise ValueError(f"evaluations: {self.evaluations!r} must be a tuple of EvalSpec")
        splits = [e.split for e in self.evaluations]
        if len(set(splits)) != len(splits):
            raise ValueError(f"evaluations: a split is declared twice in {splits}; declare one evaluation per split")
        if not isinstance(self.dissimilarity_every, int) or self.dissimilarity_every < 0:
            raise ValueError(f"dissimilarity_every: {self.dissimilarity_every!r} must be an integer >= 0 (0: never)")
        if self.dissimilarity_samples is not None and (not isinstance(self.dissimilarity_samples, int)
                                                       or self.dissimilarity_samples < 1):
            raise ValueError(f"dissimilarity_samples: {self.dissimilarity_samples!r} must be an integer >= 1 or None")


# The settings that may differ between the runs of one stack (everything else must be equal).
PER_RUN_SETTINGS = ("seed", "straggler_fraction", "availability", "dissimilarity_every")  # each run's own plan


@dataclass(frozen=True)
class RunResult:
    history: list[dict[str, float]]
    final: Evaluation
    theta: torch.Tensor
    diverged: bool
    param_digest: str
    device: str
    kernel: str = ""
    stack_size: int = 1  # runs that shared this run's local steps


@dataclass(frozen=True)
class RunSpec:
    """One run of a stack: its settings, data, algorithm object, callbacks and checkpoint file."""

    cfg: SimulationConfig
    dataset: FederatedDataset
    algorithm: Any
    callbacks: tuple[Any, ...] = ()
    checkpoint: str | os.PathLike | None = None


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
    """Run one simulation (a stack of one)."""
    return simulate_stack(model, [RunSpec(cfg, dataset, algorithm, tuple(callbacks), checkpoint)])[0]


def stacking_form(algorithm: Any) -> Any:
    """The object a run's algorithm trains as: its ``stacks_as()`` where it declares one, else itself.

    ``stacks_as() -> algorithm`` is an optional hook: the same algorithm written as another algorithm's object, so
    that its runs can share a stack with that algorithm's (the review's D1: FedAvg is FedProx with mu = 0 whose
    stragglers are dropped; with ``keeps_partial_work`` and ``mu`` among FedProx's ``stack_varying``, both are per-row
    then). The engine uses the form everywhere, alone too, so a run's numbers do not depend on what it is stacked
    with; the algorithm that declares it must compute the same numbers as the form (its own test says so)."""
    stacks_as = vars(type(algorithm)).get("stacks_as")  # declared by the class itself: a subclass that overrides a
    # hook (a user's FedAvg with its own choose_clients) and a wrapper that forwards attributes to the algorithm it
    # wraps (a test's recorder) train as themselves, so that their own methods run
    return algorithm if stacks_as is None else stacks_as(algorithm)


def stack_key(spec: RunSpec) -> tuple:
    """Runs with equal keys (and an equal model) can share a stack."""
    shared = dataclasses.replace(spec.cfg, **{k: getattr(SimulationConfig(), k) for k in PER_RUN_SETTINGS})
    alg = stacking_form(spec.algorithm)
    varying = set(getattr(type(alg), "stack_varying", ()))
    if dataclasses.is_dataclass(alg):
        fixed = tuple((f.name, getattr(alg, f.name)) for f in dataclasses.fields(alg) if f.name not in varying)
    else:  # an algorithm that is not a dataclass stacks only with itself
        fixed = (("object", id(alg)),)
    ds = spec.dataset
    return shared, type(alg), fixed, ds.feature_shape, str(ds.train.x.dtype), ds.num_classes


def check_stackable(runs: Sequence[RunSpec]) -> None:
    keys = [stack_key(r) for r in runs]
    for i, key in enumerate(keys[1:], 1):
        if key != keys[0]:
            diff = _first_difference(keys[0], key)
            raise ValueError(f"run {i} cannot share a stack with run 0: {diff} differs (runs of a stack may differ "
                             f"only in {', '.join(PER_RUN_SETTINGS)}, their dataset, and the algorithm fields it "
                             "declares in stack_varying)")


def _first_difference(a: tuple, b: tuple) -> str:
    names = ("settings", "algorithm class", "algorithm fields", "input shape", "input dtype", "number of classes")
    for name, x, y in zip(names, a, b):
        if x != y:
            if name == "settings":
                return next(f"setting {f.name}" for f in dataclasses.fields(x) if getattr(x, f.name) != getattr(y, f.name))
            if name == "algorithm fields":
                return next(f"algorithm field {k}" for (k, v), (_, w) in zip(x, y) if v != w)
            return name
    return "nothing"  # pragma: no cover


def build_stack(model: Any, runs: Sequence[RunSpec]) -> tuple[Stack, list[RunState]]:
    """The shared parts of a stack on its device, and each run's state at its start (or its checkpoint)."""
    if not runs:
        raise ValueError("a stack needs at least one run")
    runs = [spec if stacking_form(spec.algorithm) is spec.algorithm
            else dataclasses.replace(spec, algorithm=stacking_form(spec.algorithm)) for spec in runs]
    check_stackable(runs)
    cfg0 = runs[0].cfg
    if cfg0.local_steps < 0:
        raise ValueError(f"local_steps={cfg0.local_steps} must be >= 0 (0: local work given by local_epochs)")
    if cfg0.local_path not in LOCAL_PATHS:
        raise ValueError(f"local_path={cfg0.local_path!r}; allowed: {list(LOCAL_PATHS)}")
    device = resolve_device(cfg0.device)
    check_capture(cfg0.capture, device, cfg0.local_path)
    model = model.to(device)
    kernel = choose_kernel(model, device, cfg0.kernel, cohort=len(runs) * cfg0.clients_per_round)  # rows a step
    check_fused(cfg0.capture, kernel, [spec.algorithm for spec in runs])
    datas: dict[int, DeviceData] = {}
    for spec in runs:
        ds = spec.dataset
        if spec.cfg.clients_per_round > ds.num_clients:
            raise ValueError(f"clients_per_round={spec.cfg.clients_per_round} exceeds the {ds.num_clients} clients")
        if spec.cfg.local_steps and spec.cfg.straggler_fraction > 0:
            raise ValueError("stragglers are defined in epochs (FedProx section 5.2); with local_steps > 0 use "
                             "straggler_fraction=0")
        check_spec(spec)
        if id(ds) not in datas:
            datas[id(ds)] = DeviceData.build(ds, device)
    bases, lo = {}, 0
    for key, data in datas.items():
        bases[key] = lo
        lo += len(data.y_train)
    if len(datas) == 1:
        only = next(iter(datas.values()))
        x, y = only.x_train, only.y_train
    else:
        x = torch.cat([d.x_train for d in datas.values()])
        y = torch.cat([d.y_train for d in datas.values()])
    stack = Stack(model=model, kernel=kernel, device=device, local_path=cfg0.local_path, x=x, y=y,
                  x_prepared=kernel.prepare(x) if cfg0.local_path == "vectorized" else x,
                  batch_size=cfg0.batch_size, local_steps=cfg0.local_steps, capture=cfg0.capture,
                  captured=CapturedSteps() if cfg0.capture == "cuda_graph" else None, uploads=new_uploads(device))
    states = [_start_run(stack, spec, datas[id(spec.dataset)], bases[id(spec.dataset)]) for spec in runs]
    pool_tables(stack, states)  # where the runs are batched: their per-client tables one buffer
    return stack, states


def check_spec(spec: RunSpec) -> None:
    """Refuse, in one line, a run whose evaluation protocol its dataset cannot serve or whose algorithm reads an
    evaluation it does not declare (fedbench.engine.evaluation); ``simulate`` calls it, and a study may call it
    before any run starts."""
    ds = spec.dataset
    check_evaluations(spec.cfg.evaluations, train_samples=len(ds.train.y), test_samples=len(ds.test.y),
                      global_test_samples=None if ds.global_test is None else len(ds.global_test.y),
                      train_clients=int((ds.train.sizes > 0).sum()), test_clients=int((ds.test.sizes > 0).sum()),
                      dataset=ds.name)
    for metric in check_needs(spec.algorithm):
        if metric.startswith("global_test/") and ds.global_test is None:
            raise ValueError(f"algorithm {type(spec.algorithm).__name__} needs {metric} but {ds.name} has no "
                             "global_test split")


def _start_run(stack: Stack, spec: RunSpec, data: DeviceData, base: int) -> RunState:
    cfg, algorithm, ds = spec.cfg, spec.algorithm, spec.dataset
    theta0 = stack.model.init(torch_generator(cfg.seed, -1, "init")).to(stack.device)
    state = algorithm.init(theta0, ds.num_clients)
    init_clients = getattr(algorithm, "init_clients", None)
    table, table_device = None, stack.device
    if init_clients is not None:
        table_device = _table_device(init_clients, ds.num_clients, theta0)
        table = init_clients(ds.num_clients, theta0.to(table_device))
    run = RunState(cfg=cfg, algorithm=algorithm, data=data, base=base,
                   availability=build_availability(cfg.availability, ds), state=state, table=table,
                   table_device=table_device, history=[], callbacks=tuple(spec.callbacks),
                   checkpoint=Path(spec.checkpoint) if spec.checkpoint else None)
    if run.checkpoint and run.checkpoint.exists():
        saved = torch.load(run.checkpoint, map_location=stack.device, weights_only=False)
        run.state, run.history = saved["state"], saved["history"]
        run.next_round, run.signal = saved["round"], list(saved.get("signal", []))
        run.table = None if saved["table"] is None else _to_device(saved["table"], table_device)
    return run


def _table_device(init_clients, num_clients: int, theta0: torch.Tensor) -> torch.device:
    """Where the per-client table lives: on the compute device, unless it would take more than
    TABLE_DEVICE_FRACTION of the free GPU memory; then in host memory, rows moved each round."""
    if theta0.device.type != "cuda":
        return theta0.device
    from fedbench.engine import tree

    one = init_clients(1, theta0)
    need = sum(t.numel() * t.element_size() for t in tree.tree_leaves(one)) * num_clients
    free, _ = torch.cuda.mem_get_info(theta0.device)
    return theta0.device if need <= TABLE_DEVICE_FRACTION * free else torch.device("cpu")


def _to_device(table: Any, device: torch.device) -> Any:
    from fedbench.engine import tree

    return tree.tree_map(lambda t: t.to(device), table)


def simulate_stack(model: Any, runs: Sequence[RunSpec]) -> list[RunResult]:
    """Run several independent simulations as one stack (see the module docstring); returns one result per run,
    in order. Each run checkpoints to and resumes from its own file and notifies its own callbacks."""
    stack, states = build_stack(model, runs)
    cfg = runs[0].cfg
    with computing(cfg.precision, stack.device):  # fp32 unless the runs declare a reduced mode
        return _run_stack(stack, states, cfg)


def _run_stack(stack: Stack, states: list[RunState], cfg: SimulationConfig) -> list[RunResult]:
    start = min(s.next_round for s in states)
    block: dict[int, dict[int, RoundDraw]] = {}  # with capture: each run's draws of the current block, by round
    rows = None
    for r in range(start, cfg.rounds):
        live = [s for s in states if not s.done and s.next_round == r]
        if not live:
            continue
        if ((stack.capture != "none" or stack.uploads is not None)
                and any(r not in block.get(id(run), {}) for run in live)):
            block, rows = _draw_block(live, r)
            _stage(stack, live, block, rows)
        _round(stack, live, r, block, rows, defer=True)
    left = [s for s in states if s.window is not None]  # none: the last round reads every window
    if left:
        _read_windows(stack, left, max(s.next_round for s in left) - 1, end_of_round=False)
    return [_finish(stack, run, len(states)) for run in states]


def _round(stack: Stack, live: list[RunState], r: int, block: dict, rows: int | None, defer: bool) -> None:
    """Round ``r`` of the ``live`` runs: evaluate what is due, schedule, check the divergence signal, run the local
    work and the aggregation, then notify and checkpoint. ``defer``: the signal of a run not evaluated this round is
    left on the device in the run's window (:class:`_Window`) and read back with the window's other rounds; else it
    is read back in this round (the replay of a window whose signal tripped the rule)."""
    t0 = time.perf_counter()
    plans = [_plan(run, r) for run in live]
    windows = [run for run, plan in zip(live, plans) if run.window is not None and not plan.empty]
    if windows:  # an evaluation reads the run's history: its window is read first (replayed up to r - 1 if it tripped)
        _read_windows(stack, windows, r - 1, end_of_round=False)
        kept = [(run, plan) for run, plan in zip(live, plans) if not run.done]
        live, plans = [run for run, _ in kept], [plan for _, plan in kept]
        if not live:
            return
    opening = {id(run): _Window.open(run, r) for run in live if defer and run.window is None}
    evaluations = _evaluate(stack, live, plans)
    training = []
    for run, plan, ev in zip(live, plans, evaluations):
        if ev is not None:
            _record(run, r, plan, ev)
            if "train" in plan.splits and _diverged(run, ev.train_loss):  # a result, not an error: the run
                _stop_diverged(run, r)  # stops here (and leaves the stack)
                continue
        if hasattr(run.algorithm, "begin_round"):
            run.state = run.algorithm.begin_round(run.state, ev)
        training.append(run)
    eval_s = (time.perf_counter() - t0) / len(live)
    schedules = schedule_stack(stack, training, r, [block[id(run)][r] if block else None for run in training])
    deferred = {id(run) for run, plan in zip(live, plans) if defer and plan.empty}  # evaluated rounds read at once
    schedules = _check_signal(stack, schedules, plans, live, r, deferred, opening)
    training = [run for run in training if not run.done]
    run_round(stack, schedules, rows)
    if stack.device.type == "cuda":
        torch.cuda.synchronize()
    share = (time.perf_counter() - t0) / max(1, len(live))  # each run's share of the stack's round
    due = []
    for run in training:
        run.next_round = r + 1
        run.pending_s += share
        run.pending_eval_s += eval_s
        if run.window is None:
            _notify_model(run.callbacks, r, run.state.theta)
            _end_round(run, r)
            continue
        run.window.models.append((r, run.state.theta))
        if (r + 1 - run.window.first >= SCHEDULE_BLOCK or r + 1 >= run.cfg.rounds or _checkpoint_due(run, r)
                or (run.history and run.history[-1]["round"] == r)):
            due.append(run)
    if due:
        _read_windows(stack, due, r, end_of_round=True)


def _checkpoint_due(run: RunState, r: int) -> bool:
    return bool(run.checkpoint) and (r + 1) % run.cfg.checkpoint_every == 0 and r + 1 < run.cfg.rounds


def _end_round(run: RunState, r: int) -> None:
    """After round r's update: the run's history row of round r to its callbacks, its checkpoint when due, and its
    stop where a callback asks for it."""
    stop = False
    if run.history and run.history[-1]["round"] == r:
        run.history[-1] |= {"wall_time_s": run.pending_s, "eval_time_s": run.pending_eval_s}
        run.pending_s = run.pending_eval_s = 0.0
        stop = _notify(run.callbacks, r, run.history[-1])
    if _checkpoint_due(run, r):
        _save_checkpoint(run.checkpoint, r + 1, run.state, run.table, run.history, run.signal)
    if stop:
        run.done = True


@dataclass
class _Window:
    """A run's rounds since its divergence signal was last read back (issue 49, D2: one read a block, not a round).
    Each round leaves the cohort's losses F_k(w_r) on the device; the window keeps what the run was at its first
    round (the algorithm's state, which the engine never changes in place, and the lengths of its history and
    signal), the per-client table rows each round wrote over, and the global models its callbacks' on_model has
    not been given yet. A window is read back after SCHEDULE_BLOCK rounds, before an evaluation, a checkpoint or a
    history row reaches a callback, and at the last round (:func:`_read_windows`)."""

    first: int
    state: Any
    history: int
    signal: int
    pending_s: float
    pending_eval_s: float
    losses: list = field(default_factory=list)  # (round, F_k(w_r) float32 [K] on the device, n_k float64 [K])
    undo: list = field(default_factory=list)  # (table index, the rows before the round wrote them)
    models: list = field(default_factory=list)  # (round, w_{r+1}) for the callbacks' on_model

    @staticmethod
    def open(run: RunState, r: int) -> _Window:
        return _Window(r, run.state, len(run.history), len(run.signal), run.pending_s, run.pending_eval_s)


def _read_windows(stack: Stack, runs: list[RunState], last: int, end_of_round: bool) -> None:
    """Read back the signal of every round in the windows of ``runs`` (rounds up to ``last``), in one read for all
    runs, and apply the rule to each round in order, as the round itself did before (:func:`_signal_trips`). A run
    whose signal never tripped keeps its rounds: its signal values are appended, its callbacks get the deferred
    models (and, ``end_of_round``, round ``last``'s row and checkpoint). A run whose signal tripped in round t is
    put back as it was at its window's first round and its rounds up to ``last`` are run again one by one, reading
    the signal every round: the confirming evaluation then happens in round t on w_t, and the run stops there or
    goes on, exactly as when every round was read (its training is deterministic from its state: the schedule is
    drawn from (seed, round) streams). The replayed rounds of that run alone give the same numbers as stacked."""
    losses = [loss for run in runs for _, loss, _ in run.window.losses]
    read = np.array(torch.cat(losses).double().tolist() if losses else [], dtype=np.float64)  # the one read
    lo = 0
    for run in runs:
        window, run.window = run.window, None
        tripped = False
        for _, loss, n in window.losses:
            tripped = tripped or _signal_trips(run, read[lo: lo + len(n)], n)
            lo += len(n)
        if not tripped:
            for r, theta in window.models:
                _notify_model(run.callbacks, r, theta)
            if end_of_round:
                _end_round(run, last)
            continue
        for index, old in reversed(window.undo):
            run.table = tree.scatter_rows(run.table, index, old)
        run.state = window.state
        del run.history[window.history:], run.signal[window.signal:]
        run.pending_s, run.pending_eval_s, run.next_round = window.pending_s, window.pending_eval_s, window.first
        for r in range(window.first, last + 1):
            if run.done:
                break
            _round(stack, [run], r, {}, None, defer=False)


def _signal_trips(run: RunState, losses: np.ndarray, n: np.ndarray) -> bool:
    """Append a round's signal (the n_k-weighted mean of the cohort's losses) to the run's; whether it trips the rule
    (fedbench.engine.metrics.has_diverged; f_0 the first training loss evaluated, else the signal's first value)."""
    run.signal.append(float(np.dot(losses, n) / n.sum()))
    reference = _full_losses(run)[:1] or run.signal[:1]  # f_0: the first training loss evaluated, if any
    return has_diverged(reference + run.signal[-1:], run.cfg.divergence_factor)


SCHEDULE_BLOCK = 20  # rounds drawn ahead at once where the local steps run at a static shape (capture != none)


def _draw_block(live: list[RunState], r0: int) -> tuple[dict[int, dict[int, RoundDraw]], int]:
    """The live runs' draws of rounds [r0, r0 + SCHEDULE_BLOCK) (fedbench.engine.schedule) and the block's static
    rows: every run's largest cohort of the block, one after another. The steps are each round's own (its largest
    client's): a static step count per block would lengthen the FedProx synthetic study's lockstep chain by 10%
    (fedbench.bench.lockstep), while one graph of a few steps serves any count (fedbench.engine.capture)."""
    draws = {id(run): {d.round: d for d in schedule_block(run, r0, SCHEDULE_BLOCK)} for run in live}
    rows = sum(max(d.max_clients for d in draws[id(run)].values()) for run in live)
    return draws, max(1, rows)


def _stage(stack: Stack, live: list[RunState], block: dict[int, dict[int, RoundDraw]], rows: int) -> None:
    """Where the stack takes a block's views (fedbench.engine.uploads), the arrays of the block's rounds moved in one
    transfer (fedbench.engine.round.stage_block), as the rounds will build them if every live run goes on: each run's
    drawn local work, and the divergence signal of the runs that evaluate nothing that round. A round where a state
    hook picks a run's cohort (its work not drawn ahead) is left to move its own."""
    rounds = []
    for r in sorted({r for draws in block.values() for r in draws}):
        draws = [block[id(run)].get(r) for run in live]
        if any(d is None or d.work is None for d in draws):
            continue
        rounds.append((r, [(run, d.work) for run, d in zip(live, draws)],
                       [run for run in live if _plan(run, r).empty]))
    stage_block(stack, rounds, rows)


@dataclass(frozen=True)
class _Plan:
    """What one run evaluates at one round: the splits, the dissimilarity, the samples read (split -> sorted
    sample indices; absent: all) and the metrics its history row keeps."""

    splits: tuple[str, ...] = ()
    dissimilarity: bool = False
    samples: tuple[tuple[str, np.ndarray], ...] = ()
    dissimilarity_idx: np.ndarray | None = None
    keep: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not self.splits and not self.dissimilarity


SPLIT_CODE = {"train": 0, "test": 1, "global_test": 2, "dissimilarity": 3}  # the extra of each sample's stream


def _plan(run: RunState, r: int, final: bool = False) -> _Plan:
    """Round r's evaluations of ``run``: the protocol's due ones (``final``: those of the final model), what its
    algorithm needs (every round, on the full split), the dissimilarity when due."""
    cfg = run.cfg
    due = [e for e in cfg.evaluations if (e.final if final else e.due(r))]
    needs = () if final else tuple(getattr(run.algorithm, "needs_evaluation", ()))
    needed_splits = {m.split("/")[0] for m in needs}
    splits = tuple(s for s in ("train", "test", "global_test")
                   if s in needed_splits or any(e.split == s for e in due))
    every = cfg.dissimilarity_every
    dissim = every > 0 and (final or r % every == 0)
    keep = {m for e in due for m in e.kept_metrics} | set(needs)
    if dissim or ("train" in splits and every > 0):  # the main job's column, NaN in rounds without it
        keep.add(DISSIMILARITY)
    samples = tuple((e.split, _sample(run, e, r)) for e in due if e.sampled and e.split not in needed_splits)
    idx = _dissimilarity_sample(run, r) if dissim and cfg.dissimilarity_samples is not None else None
    return _Plan(splits, dissim, samples, idx, frozenset(keep))


def _sample(run: RunState, spec: EvalSpec, r: int) -> np.ndarray:
    """The sorted sample indices of ``spec.split`` that round r evaluates: a seeded draw of clients (all their
    samples) or of samples, from (seed, round, "evaluation", split)."""
    data = run.data
    if spec.split == "global_test":
        offsets = np.array([0, len(data.y_global)])
    else:
        offsets = data.train_offsets if spec.split == "train" else data.test_offsets
    g = rng(run.cfg.seed, r, "evaluation", SPLIT_CODE[spec.split])
    if spec.samples_sample is not None:
        return np.sort(g.choice(int(offsets[-1]), spec.samples_sample, replace=False))
    sizes = np.diff(offsets)
    clients = np.sort(g.choice(np.flatnonzero(sizes > 0), spec.clients_sample, replace=False))
    return np.concatenate([np.arange(offsets[c], offsets[c + 1]) for c in clients])


def _dissimilarity_sample(run: RunState, r: int) -> np.ndarray:
    """Sorted training-sample indices: of each client, a seeded sample of at most dissimilarity_samples."""
    cap, offs = run.cfg.dissimilarity_samples, run.data.train_offsets
    g = rng(run.cfg.seed, r, "evaluation", SPLIT_CODE["dissimilarity"])
    parts = []
    for c, n in enumerate(np.diff(offs)):
        parts.append(offs[c] + (np.sort(g.choice(n, cap, replace=False)) if n > cap else np.arange(n)))
    return np.concatenate(parts).astype(np.int64)


# Devices where runs on their own seeded samples share one evaluation pass on the union of their samples. Not the
# CPU: there a model's float32 logits on a sample depend in the last bits on how many samples the product holds
# (MKL picks its kernel by shape), so a run would evaluate differently stacked and alone; on CUDA the numbers are
# held to the GPU check's tolerance anyway, and a pass per run is a launch-bound pass per run.
UNION_PASS_DEVICES = ("cuda",)


def _evaluate(stack: Stack, runs: list[RunState], plans: list[_Plan]) -> list[Evaluation | None]:
    """Each run's global model on its own data, as its plan says (None: nothing to evaluate). Runs on the same data
    that evaluate the same splits, on all of them or on the same samples, are evaluated in one batched pass; on
    UNION_PASS_DEVICES so are runs that each evaluate their own seeded sample (fedbench.engine.metrics.evaluate_many:
    every model on the union of the samples, each reading its own), and runs whose dissimilarity is taken on their
    own sample of training data (one segmented backward for every (run, client) pair); elsewhere such a run is
    evaluated alone."""
    out: dict[int, Evaluation | None] = {}
    groups: dict[tuple, list[int]] = {}
    union = stack.device.type in UNION_PASS_DEVICES
    for i, (run, plan) in enumerate(zip(runs, plans)):
        if plan.empty:
            out[i] = None
            continue
        own_dissimilarity = plan.dissimilarity_idx is not None
        if (own_dissimilarity or plan.samples) and not union:
            key = ("own", i)
        else:
            key = (id(run.data), plan.splits, plan.dissimilarity, own_dissimilarity)
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        plan = plans[members[0]]
        thetas = torch.stack([runs[i].state.theta for i in members])
        samples = [dict(plans[i].samples) for i in members]
        own = plan.dissimilarity_idx is not None and len(members) > 1  # one segmented backward, each its own sample
        evs = evaluate_many(stack.kernel, thetas, runs[members[0]].data, plan.dissimilarity, splits=plan.splits,
                            samples=samples if any(samples) else None,
                            dissimilarity_idx=[plans[i].dissimilarity_idx for i in members] if own
                            else plan.dissimilarity_idx)
        for i, ev in zip(members, evs):
            out[i] = ev
    return [out[i] for i in range(len(runs))]


def _full_losses(run: RunState) -> list[float]:
    """The training losses of the run's history rows (with the default protocol: every round's)."""
    return [row["train/loss"] for row in run.history if "train/loss" in row]


def _diverged(run: RunState, loss: float) -> bool:
    """The divergence rule on ``loss``, the training loss just recorded, against the first one evaluated."""
    return has_diverged(_full_losses(run), run.cfg.divergence_factor)


def _record(run: RunState, r: int, plan: _Plan, ev: Evaluation) -> None:
    """Round r's history row (merged into the row of round r if there is one already)."""
    row = {k: v for k, v in ev.scalars().items() if k in plan.keep}
    if run.history and run.history[-1]["round"] == r:
        run.history[-1] |= row
    else:
        run.history.append({"round": r, **row})
    if "train/loss" in row:
        run.history[-1]["diverging"] = float(is_diverging(_full_losses(run)))


def _stop_diverged(run: RunState, r: int) -> None:
    run.diverged = run.done = True
    run.history[-1] |= {"wall_time_s": 0.0}
    _notify(run.callbacks, r, run.history[-1])


def _check_signal(stack: Stack, schedules: list, plans: list[_Plan], live: list[RunState], r: int,
                  deferred: set[int] = frozenset(), opening: dict | None = None) -> list:
    """The cheap divergence signal of the runs whose training loss was not evaluated in round r: the n_k-weighted
    mean F_k(w_r) of the clients training this round. When it trips the rule (:func:`_signal_trips`), the full
    training loss is evaluated at once and confirms it or not (see fedbench.engine.evaluation). The runs in
    ``deferred`` keep their cohort's losses on the device, in their window (``opening``: the window a run without
    one opens this round), read back later (:func:`_read_windows`); the others' are read back to the host together,
    once a round (fedbench.engine.host_sync). Returns the schedules of the runs that go on."""
    evaluated = {id(run) for run, plan in zip(live, plans) if "train" in plan.splits}
    signalled = [s for s in schedules if id(s.run) not in evaluated]
    if not signalled:
        return schedules
    later = [s for s in signalled if id(s.run) in deferred]
    for s, loss in zip(later, cohort_loss_tensors(stack, later)):
        run = s.run
        if run.window is None:
            run.window = opening[id(run)]
        run.window.losses.append((r, loss, run.sizes[s.clients].astype(np.float64)))
    now = [s for s in signalled if id(s.run) not in deferred]
    if not now:
        return schedules
    read = torch.cat(cohort_loss_tensors(stack, now)).double().cpu().numpy()
    losses = dict(zip(map(id, now), np.split(read, np.cumsum([len(s.clients) for s in now])[:-1])))
    kept = []
    for s in schedules:
        run = s.run
        if id(s) not in losses:
            kept.append(s)
            continue
        if not _signal_trips(run, losses[id(s)], run.sizes[s.clients].astype(np.float64)):
            kept.append(s)
            continue
        reference = _full_losses(run)[:1] or run.signal[:1]
        confirm = _Plan(splits=("train",), keep=frozenset({"train/loss", "train/accuracy"}))
        ev = _evaluate(stack, [run], [confirm])[0]
        _record(run, r, confirm, ev)
        if has_diverged(reference + [ev.train_loss], run.cfg.divergence_factor):
            _stop_diverged(run, r)
        else:
            kept.append(s)
    return kept


def _finish(stack: Stack, run: RunState, stack_size: int) -> RunResult:
    plan = _plan(run, run.next_round, final=True)
    final = _evaluate(stack, [run], [plan])[0]
    if final is None:
        final = Evaluation(*(float("nan"),) * 5, device_train_loss=np.full(run.data.num_clients, np.nan),
                           device_test_accuracy=np.full(run.data.num_clients, np.nan), splits=(),
                           with_dissimilarity=False)
    if not run.diverged and not plan.empty:
        _record(run, run.next_round, plan, final)
        run.history[-1] |= {"wall_time_s": run.pending_s, "eval_time_s": run.pending_eval_s}
    elif not run.diverged and run.history:  # no final evaluation: the last row keeps the time of the last rounds
        run.history[-1]["wall_time_s"] = run.history[-1].get("wall_time_s", 0.0) + run.pending_s
    if run.checkpoint and run.checkpoint.exists():
        run.checkpoint.unlink()
    first = _full_losses(run)[:1] or [final.train_loss]
    return RunResult(history=run.history, final=final, theta=run.state.theta.detach().cpu(),
                     diverged=run.diverged or ("train" in final.splits
                                               and has_diverged(first + [final.train_loss], run.cfg.divergence_factor)),
                     param_digest=param_digest(run.state.theta), device=str(stack.device), kernel=stack.kernel.name,
                     stack_size=stack_size)


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


def _compact(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a tensor of its own where it is a view into a larger buffer (torch.save writes a view's whole
    buffer: a run's checkpoint would hold its group's states)."""
    return t.clone() if t.untyped_storage().nbytes() > t.numel() * t.element_size() else t


def _save_checkpoint(path: Path, round_: int, state: Any, table: Any, history: list, signal: list) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    # where the runs are batched a run's state is a view of its group's, its table a view of the stack's pool
    state, table = tree.tree_map(_compact, state), tree.tree_map(_compact, table)
    torch.save({"round": round_, "state": state, "table": table, "history": history, "signal": signal}, tmp)
    os.replace(tmp, path)

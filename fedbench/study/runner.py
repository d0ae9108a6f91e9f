"""The one runner: every simulation of fedbench, the train stage's runs and the claim studies' alike, runs here.

A caller declares its runs as :class:`Simulation` s (a name, a SimulationConfig, a dataset builder, a model, an
algorithm) and hands them to :func:`run_simulations` in one call, with a :class:`Store` that knows where finished runs
are kept: the runner asks the store for each simulation's fingerprint, reads back the finished ones, stacks the others
(fedbench.engine.stacking: runs of one model and algorithm class with the same settings but seed, stragglers and
availability run as one tensor program, each run's numbers the same as alone), runs the stacks in worker processes or
as Ray tasks (fedbench.executors), and gives each finished stack to the store as soon as it finishes, so an interrupted
call keeps what finished. A run the store gives a checkpoint file checkpoints there every ``checkpoint_every`` rounds
and picks up from it when run again (saying so, in one line). The one store keeps a simulation as an outcome file named
by its fingerprint (fedbench.study.reuse.OutcomeStore, in the study's folder; the main job's shared, with a lock per
run, by its study's runs and ``fedbench run``'s alike: fedbench.study.experiments).

Importing this module imports no torch (the engine is imported when runs are computed).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fedbench.executors import ExecutorSettings, open_executor

if TYPE_CHECKING:
    import numpy as np

    from fedbench.data.format import FederatedDataset
    from fedbench.engine.simulation import SimulationConfig

WORKERS = 2  # worker processes of run_simulations (the pipeline's machines have 2 cores)
# where run_simulations runs its stacks when not told: the executor run_claim_study was given (the driver
# passes only workers), else local worker processes
EXECUTOR: ContextVar[ExecutorSettings] = ContextVar("fedbench_studies_executor", default=ExecutorSettings())


CHECKPOINTS_A_RUN = 10  # a claim study's run checkpoints about this many times (the rounds between, at least:)
CHECKPOINT_MIN_ROUNDS = 50


def sim_config(**fields: Any) -> SimulationConfig:
    """A SimulationConfig with the studies' defaults, ``fields`` on top: on the CPU (the studies are small),
    the gradient dissimilarity evaluated in round 0 and on the final model only (dissimilarity_every), and a
    checkpoint (where the store gives a file) every rounds / CHECKPOINTS_A_RUN rounds, at least
    CHECKPOINT_MIN_ROUNDS apart (checkpoint_every): a long run interrupted loses at most a tenth of its rounds,
    a short one writes no more than a few."""
    from fedbench.engine.simulation import SimulationConfig  # here: importing the runner needs no torch

    rounds = fields.get("rounds", SimulationConfig.rounds)
    every = max(CHECKPOINT_MIN_ROUNDS, rounds // CHECKPOINTS_A_RUN)
    return SimulationConfig(**{"device": "cpu", "dissimilarity_every": 10**9, "checkpoint_every": every, **fields})


@dataclass(frozen=True)
class Simulation:
    """One run. ``dataset`` is a zero-argument builder of the run's FederatedDataset that caches what it builds (a
    top-level ``functools.cache`` function, or a ``functools.partial`` of one), so that runs sharing data share one
    copy and worker processes inherit it. ``knobs`` are the study's own settings of the run, recorded with its params.
    ``trace`` keeps the global model after every round (small models only)."""

    name: str
    config: SimulationConfig
    dataset: Callable[[], FederatedDataset]
    model: Any
    algorithm: Any
    knobs: dict[str, Any] = field(default_factory=dict)
    trace: bool = False


@dataclass(frozen=True)
class Outcome:
    """What a Simulation gave: the engine's per-evaluation ``history`` rows, the ``final`` evaluation's scalars,
    whether it diverged, the final parameters' digest, the device, the traced models [rounds, P] (float64) when
    asked for, the seconds it took, the final model's test accuracy on each client [N] (NaN for a client
    without test data: Delta-FL's per-device error) and its training loss on each client [N] (NaN for a client
    without training data, or where the final evaluation skipped the train split: Delta-FL's Figure 5), the local
    kernel the engine chose and how many runs shared its stack."""

    name: str
    history: list[dict[str, float]]
    final: dict[str, float]
    diverged: bool
    param_digest: str
    device: str
    models: np.ndarray | None
    seconds: float
    device_accuracy: np.ndarray | None = None
    device_train_loss: np.ndarray | None = None
    kernel: str = ""
    stack_size: int = 1

    def series(self, key: str) -> list[float]:
        """``key`` by round: element r is its value at round r (the model w_r; the final model at ``rounds``), NaN
        at a round where it was not evaluated; up to the last round that evaluated it. With the default protocol
        (every round) this is every row's value in order."""
        values = self.at_rounds(key)
        if not values:
            return []
        out = [math.nan] * (max(values) + 1)
        for r, v in values.items():
            out[r] = v
        return out

    def at_rounds(self, key: str) -> dict[int, float]:
        """``key`` at the rounds that evaluated it, {round: value} in round order (the history rows holding it)."""
        return {int(row["round"]): float(row[key]) for row in self.history if key in row}


class Store(Protocol):
    """Where finished simulations are kept. ``key`` is a simulation's fingerprint, ``lock`` guards one simulation against a second process (taken in key order for every
    simulation of a call, held until the call returns), ``load`` reads a finished one back (None: compute it),
    ``checkpoint`` is the file a computing run checkpoints to (None: none) and ``save`` keeps a computed one
    (called in this process as its stack finishes); ``finished`` is told how many were read back."""

    def key(self, sim: Simulation) -> str: ...

    def lock(self, sim: Simulation, key: str) -> AbstractContextManager: ...

    def load(self, sim: Simulation, key: str) -> Outcome | None: ...

    def checkpoint(self, sim: Simulation, key: str) -> Path | None: ...

    def save(self, sim: Simulation, key: str, outcome: Outcome) -> None: ...

    def finished(self, reused: int, total: int) -> None: ...


# the store run_claim_study opened for the study it runs (None: a study driven directly, fedbench.study.contract.drive; nothing is reused)
STORE: ContextVar[Store | None] = ContextVar("fedbench_studies_store", default=None)


class ModelTrace:
    """Callback keeping the global model after every round (small models only: it copies to the CPU)."""

    def __init__(self) -> None:
        self.models: list = []

    def on_model(self, round_: int, theta) -> None:
        self.models.append(theta.detach().double().cpu().numpy().copy())


class _Progress:
    """A tqdm bar over the rounds of a stack's runs, with the latest training loss and test accuracy."""

    def __init__(self, desc: str, total: int, position: int) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, position=position, leave=False, file=sys.stderr,
                        dynamic_ncols=True, mininterval=1.0)

    def on_round_end(self, round_: int, row: dict[str, float]) -> None:
        self.bar.set_postfix(loss=f"{row['train/loss']:.3f}", acc=f"{row['test/accuracy']:.3f}", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


@dataclass(frozen=True)
class _Stack:
    """One unit of work: simulations that share a stack, each run's checkpoint file, and where its bar is drawn
    (None: no bar)."""

    sims: list[Simulation]
    checkpoints: list[Path | None]
    bar_at: int | None = None


def _simulate_stack(model: Any, specs: list) -> list:
    """fedbench.engine.simulation.simulate_stack (imported here so that importing the runner needs no torch)."""
    from fedbench.engine.simulation import simulate_stack

    return simulate_stack(model, specs)


def _say_resume(name: str, checkpoint: Path, rounds: int) -> None:
    """One line on stderr where run ``name`` picks up from its checkpoint (the engine resumes from it when it exists:
    fedbench.engine.simulation), so that a resumed run says so. The round is read from the checkpoint's own record
    (memory-mapped: its tensors are not read); one that cannot be read says nothing here, the engine's load of it
    then failing with its own error."""
    import torch

    if not checkpoint.exists():
        return
    try:
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False, mmap=True)
        round_ = int(saved["round"])
    except Exception:  # noqa: BLE001 - any unreadable checkpoint: the engine reports it when it loads it
        return
    print(f"fedbench: resuming {name} from round {round_} of {rounds} (checkpoint {checkpoint})", file=sys.stderr,
          flush=True)


def _run_stack(job: _Stack) -> list[Outcome]:
    """Simulations that share a stack, run as one (a top-level function, so worker processes can run it); each
    outcome's ``seconds`` is its share of the stack's time."""
    import numpy as np

    from fedbench.engine.simulation import RunSpec
    from fedbench.parallel import one_torch_thread

    one_torch_thread()  # one thread per stack fixes the order of float sums, in a worker or in the caller alike
    sims = job.sims
    bar = None
    if job.bar_at is not None:
        desc = sims[0].name if len(sims) == 1 else f"{len(sims)} runs stacked"
        bar = _Progress(desc, sum(s.config.rounds for s in sims), job.bar_at)
    traces = [ModelTrace() if sim.trace else None for sim in sims]
    specs = []
    for sim, trace, checkpoint in zip(sims, traces, job.checkpoints):
        if checkpoint is not None:
            checkpoint.parent.mkdir(parents=True, exist_ok=True)
            _say_resume(sim.name, checkpoint, sim.config.rounds)
        specs.append(RunSpec(sim.config, sim.dataset(), sim.algorithm,
                             callbacks=tuple(c for c in (trace, bar) if c is not None), checkpoint=checkpoint))
    t0 = time.perf_counter()
    try:
        results = _simulate_stack(sims[0].model, specs)
    finally:
        if bar is not None:
            bar.close()
    seconds = (time.perf_counter() - t0) / len(sims)
    return [Outcome(name=sim.name, history=r.history, final=r.final.scalars(), diverged=bool(r.diverged),
                    param_digest=r.param_digest, device=r.device, models=np.array(t.models) if t else None,
                    seconds=seconds, device_accuracy=np.asarray(r.final.device_test_accuracy, dtype=np.float64),
                    device_train_loss=np.asarray(r.final.device_train_loss, dtype=np.float64),
                    kernel=r.kernel, stack_size=r.stack_size)
            for sim, r, t in zip(sims, results, traces)]


def run_simulations(simulations: Sequence[Simulation], workers: int = WORKERS,
                    executor: ExecutorSettings | None = None, store: Store | None = None, progress: bool = True,
                    each: Callable[[list[Outcome]], None] | None = None) -> list[Outcome]:
    """Run every simulation and return their outcomes in order. Simulations of one model that may share a stack
    (fedbench.engine.simulation.stack_key: the same settings but seed, stragglers and availability, one algorithm
    class) run as stacked runs, their numbers the same as alone; the stacks are cut to keep ``workers`` forked
    processes equally busy (fedbench.engine.stacking), every dataset built once here first so the workers share
    it; or, with the ``ray`` executor (``executor``, default the one run_claim_study was given:
    fedbench.executors), as Ray tasks cut for the cluster. Names must be unique (they name the records and the
    MLflow runs).

    ``store`` (default: the one run_claim_study opened, :data:`STORE`; none: every simulation is computed and nothing
    kept) reads back a simulation whose fingerprint it holds, gives the others their checkpoint files, and keeps each
    computed stack as soon as it finishes, so changing one arm reruns that arm only and an interrupted call resumes.
    ``progress`` draws a bar per stack where the workers can (a terminal, worker processes) and the executor's own
    otherwise. ``each`` is called here with the outcomes read back (at once) and with each stack's as it finishes."""
    names = [s.name for s in simulations]
    if len(set(names)) != len(names):
        raise ValueError(f"simulation names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    sims = list(simulations)
    store = store if store is not None else STORE.get()
    if store is None:
        return _compute(sims, list(range(len(sims))), {}, None, workers, executor, progress, each)
    keys = [store.key(sim) for sim in sims]
    _allow_open_files(len(sims) + 256)  # a lock is an open file, held for the whole call
    with ExitStack() as locks:
        for i in sorted(range(len(sims)), key=lambda i: keys[i]):  # one order: two callers never wait on each other
            locks.enter_context(store.lock(sims[i], keys[i]))
        found = {sim.name: o for sim, key in zip(sims, keys) if (o := store.load(sim, key)) is not None}
        store.finished(len(found), len(sims))
        if found and each is not None:
            each([found[n] for n in names if n in found])
        todo = [i for i, sim in enumerate(sims) if sim.name not in found]
        return _compute(sims, todo, found, (store, keys), workers, executor, progress, each)


def _allow_open_files(n: int) -> None:
    """Raise this process's soft limit on open files to ``n`` where it is lower (up to the hard limit): a call's
    locks are one open file each (a user's default soft limit can be 1,024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n if hard == resource.RLIM_INFINITY else min(n, hard), hard))


def _compute(sims: list[Simulation], todo: list[int], found: dict[str, Outcome],
             kept: tuple[Store, list[str]] | None, workers: int, executor: ExecutorSettings | None, progress: bool,
             each: Callable[[list[Outcome]], None] | None) -> list[Outcome]:
    """run_simulations' computing part: the simulations ``todo`` (indices) stacked and run, each finished stack kept
    (``kept``: the store and every simulation's key) and handed to ``each``; every outcome in order."""
    from fedbench.engine.simulation import RunSpec, check_spec

    specs = {i: RunSpec(sims[i].config, sims[i].dataset(), sims[i].algorithm) for i in todo}  # built before the fork
    for i, spec in specs.items():  # a protocol the data cannot serve: refused before any run starts
        try:
            check_spec(spec)
        except (ValueError, TypeError) as err:
            raise ValueError(f"simulation {sims[i].name}: {err}") from None
    by_name = dict(found)
    index = {sim.name: i for i, sim in enumerate(sims)}

    def finished(stack: list[Outcome]) -> None:  # as each stack finishes: an interrupted call keeps it
        if kept is not None:
            for o in stack:
                kept[0].save(sims[index[o.name]], kept[1][index[o.name]], o)
        if each is not None:
            each(stack)

    if todo:
        device = next((sims[i].config.device for i in todo if sims[i].config.device != "cpu"), "cpu")
        with open_executor(executor or EXECUTOR.get(), workers) as ex:
            slots = ex.slots(device)
            pieces = plan_pieces(sims, todo, slots, specs)
            bars = worker_bars(progress, ex)
            jobs = [_Stack([sims[i] for i in piece],
                           [kept[0].checkpoint(sims[i], kept[1][i]) if kept else None for i in piece],
                           n % max(1, slots) if bars else None)
                    for n, piece in enumerate(pieces)]
            outcomes = ex.map(_run_stack, jobs, device, each=finished, progress=progress,
                              names=[", ".join(sims[i].name for i in piece) for piece in pieces])
        by_name |= {o.name: o for stack in outcomes for o in stack}
    return [by_name[sim.name] for sim in sims]


def plan_pieces(sims: list[Simulation], todo: list[int], slots: int, specs: dict[int, Any] | None = None) -> list[list[int]]:
    """The simulations ``todo`` (indices into ``sims``) grouped into the stacks that run them, costliest first:
    simulations of one model that may share a stack (fedbench.engine.simulation.stack_key), cut to keep ``slots``
    workers equally busy (fedbench.engine.stacking; on CUDA, to the free memory). ``specs``: their RunSpecs, when
    built already."""
    from fedbench.engine.simulation import RunSpec, stack_key
    from fedbench.engine.stacking import plan_stacks

    specs = specs or {i: RunSpec(sims[i].config, sims[i].dataset(), sims[i].algorithm) for i in todo}
    model_of = {id(specs[i]): sims[i].model for i in todo}
    pieces = plan_stacks([specs[i] for i in todo], slots, key=lambda spec: (model_of[id(spec)], stack_key(spec)),
                         model_of=lambda spec: model_of[id(spec)])
    return [[todo[j] for j in piece] for piece in pieces]


def worker_bars(progress: bool, executor: Any) -> bool:
    """Whether the workers draw their progress bars: bars at one position per worker move the cursor with escape
    codes, which a log that is not a terminal (DVC's, a file) keeps as raw ``[A``; there, only each run's closing
    line is written (and, on Ray, the driver draws one bar over the units)."""
    return progress and executor.worker_progress and sys.stderr.isatty()

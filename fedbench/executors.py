"""Where a stage's units of work run (``train.executor``): ``local``, the forked process pool of
fedbench.parallel on this machine, or ``ray``, one Ray task per unit on a Ray cluster. A unit is a stack of runs
(fedbench.engine.stacking): Simulations, the train stage's and a claim study's alike. Both
executors take the same units and return the same results, in order, calling ``each`` on the driver as each
unit finishes; this is the only module that imports Ray, and only when the ``ray`` executor is used.

The ``ray`` executor
  - Cluster: the one at ``RAY_ADDRESS`` (``ray start --head`` on a machine; the driver connects to it), else a
    local Ray started for the stage with ``train.workers`` CPUs and shut down at its end. A Ray already
    initialized in this process (a test's cluster) is used as it is and left running.
  - Resources: each unit asks for one CPU and, when it trains on a GPU, ``train.gpu_fraction`` of one (so
    1 / gpu_fraction units share a GPU). A unit trains on a GPU when ``train.device`` is ``cuda``/``cuda:N``, or
    ``auto`` and the cluster has GPUs; stacks are then planned for min(CPUs, GPUs / gpu_fraction) units at once,
    on the CPU for the cluster's CPUs.
  - Faults: a unit whose worker process or node dies is run again, up to MAX_RETRIES times; it takes its runs'
    locks again and resumes each run from its last checkpoint (results/ must be where every node reads and writes
    it: fedbench.runner). A unit that raises fails for good at once (the error is the run's own, a retry would
    raise it again); the others go on, and the stage then fails naming every failed unit and its error.
  - Stops: Ctrl-C or SIGTERM on the driver cancels the units still out (their worker processes are killed; a run
    keeps its last checkpoint) and shuts a local Ray down; the stop goes on as itself (Ray raises it as a
    SystemError of its own), so the command ends as with ``local``: one line, exit 130 or 143. A SIGTERM while a
    local Ray starts (ray.init's own handler exits with 15) ends the same way, the processes started so far killed.
  - Same numbers as ``local``: every unit runs with one torch thread in the driver's working directory, with the
    environment variables that decide floating-point paths (ENV_KEYS, e.g. MKL_CBWR which fedbench sets at
    import) copied from the driver, on the same fedbench code (a node whose fedbench differs from the driver's
    refuses the unit, naming both code hashes). Nothing is logged to MLflow by a task: the track stage logs
    once, from the runs' outcome files.
  - Progress: one bar on the driver over all units, with how many are queued, running, retried and failed.

A cluster of several machines needs what a single machine gives for free: the project folder (params.yaml,
data/, results/) at the same path on every node, on a filesystem they all mount (NFS, a cluster filesystem), and
the same fedbench and torch installed on each; for bit-identical numbers across nodes, the same CPU code path
(ATEN_CPU_CAPABILITY and MKL_ENABLE_INSTRUCTIONS set on the driver are copied to the tasks; see
fedbench.regression on cross-CPU drift).
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedbench.errors import FedbenchError
from fedbench.guard import interruption
from fedbench.parallel import Terminated, map_jobs, one_torch_thread

EXECUTORS = ("local", "ray")
MAX_RETRIES = 3  # runs of a unit whose worker process or node died, after the first
# environment variables that choose floating-point code paths: copied from the driver into every Ray task
ENV_KEYS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")


class UnitsFailed(FedbenchError):
    """Units of work that failed for good (on Ray: raised, or their worker lost more than MAX_RETRIES times)."""

    label = "failed"


@dataclass(frozen=True)
class ExecutorSettings:
    """How a stage runs its units: ``kind`` (train.executor) and the GPU share of a unit (train.gpu_fraction)."""

    kind: str = "local"
    gpu_fraction: float = 0.25

    @classmethod
    def of(cls, train: Any) -> ExecutorSettings:
        return cls(train.executor, train.gpu_fraction)


@contextmanager
def open_executor(settings: ExecutorSettings, workers: int) -> Iterator[LocalExecutor | RayExecutor]:
    """The executor ``settings`` name, for one stage: ``workers`` processes here, or a Ray cluster (at
    RAY_ADDRESS, else a local Ray with ``workers`` CPUs, started when first needed and shut down at the end)."""
    if settings.kind == "local":
        yield LocalExecutor(workers)
        return
    if settings.kind != "ray":
        raise ValueError(f"executor {settings.kind!r}; allowed: {', '.join(EXECUTORS)}")
    ex = RayExecutor(workers, settings.gpu_fraction)
    try:
        yield ex
    finally:
        ex.close()


class LocalExecutor:
    """Today's process pool (fedbench.parallel.map_jobs): ``workers`` forked processes, one on a GPU."""

    kind = "local"
    worker_progress = True  # the workers draw their own progress bars (one per process)

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)

    def slots(self, device: str) -> int:
        """How many units run at once: ``workers``, or 1 on a GPU (a process that used CUDA cannot fork)."""
        return 1 if _local_cuda(device) else self.workers

    def map(self, fn: Callable[[Any], Any], jobs: Sequence[Any], device: str = "cpu",
            each: Callable[[Any], None] | None = None, names: Sequence[str] | None = None,
            progress: bool = True) -> list[Any]:
        return map_jobs(fn, jobs, max(1, min(self.slots(device), len(jobs))), each=each)


def _local_cuda(device: str) -> bool:
    if device == "cpu":
        return False
    from fedbench.engine.simulation import resolve_device

    return resolve_device(device).type == "cuda"


class RayExecutor:
    """Each unit as a Ray task (see the module docstring)."""

    kind = "ray"
    worker_progress = False  # one bar on the driver; a worker's bars would reach it as log lines

    def __init__(self, workers: int, gpu_fraction: float) -> None:
        self.workers = max(1, workers)
        self.gpu_fraction = gpu_fraction
        self._started = False  # whether this executor started the Ray it uses (then it shuts it down)
        self._ray = None

    def connect(self):
        """The ray module, connected: to the Ray already initialized here, to RAY_ADDRESS, or to a new local Ray."""
        if self._ray is not None:
            return self._ray
        import logging

        import ray

        if not ray.is_initialized():
            handler = signal.getsignal(signal.SIGTERM)  # ray.init installs its own; fedbench.cli's stays
            t0 = time.perf_counter()
            address = os.environ.get("RAY_ADDRESS")
            before = _descendants()
            try:
                if address:
                    ray.init(address=address, logging_level=logging.WARNING)
                else:
                    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                    ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                             logging_level=logging.WARNING)
            except BaseException as exc:  # stopped (or failed) while Ray started
                if handler is not None and _main_thread():  # fedbench's handler first: a second SIGTERM during the
                    signal.signal(signal.SIGTERM, handler)  # clean-up raises Terminated, not Ray's exit 15
                try:
                    ray.shutdown()
                finally:  # a start cut short: what it started may be no node that ray.shutdown knows
                    _kill_started_since(before)
                if isinstance(exc, SystemExit) and exc.code == signal.SIGTERM:  # ray.init's own handler's exit
                    raise Terminated() from None  # SIGTERM, as fedbench's handler raises it
                raise
            finally:
                if handler is not None and _main_thread():
                    signal.signal(signal.SIGTERM, handler)
            self._started = True
            res = ray.cluster_resources()
            print(f"fedbench: ray: {'connected to ' + address if address else 'started a local Ray'} in "
                  f"{time.perf_counter() - t0:.1f} s ({res.get('CPU', 0):g} CPUs, {res.get('GPU', 0):g} GPUs)",
                  file=sys.stderr)
        self._ray = ray
        return ray

    def close(self) -> None:
        if self._started and self._ray is not None:
            self._ray.shutdown()
        self._ray, self._started = None, False

    def _resources(self) -> tuple[float, float]:
        """The cluster's CPUs and GPUs; for a local Ray not started yet, what it will have (without starting it:
        a stage whose runs are all finished starts none)."""
        ray = sys.modules.get("ray")
        if self._ray is None and not os.environ.get("RAY_ADDRESS") and not (ray and ray.is_initialized()):
            import torch

            return float(self.workers), float(torch.cuda.device_count())
        res = self.connect().cluster_resources()
        return res.get("CPU", 1.0), res.get("GPU", 0.0)

    def uses_gpu(self, device: str) -> bool:
        """Whether a unit on ``device`` trains on a GPU: cuda/cuda:N, or auto on a cluster that has GPUs."""
        return device.startswith("cuda") or (device == "auto" and self._resources()[1] > 0)

    def slots(self, device: str) -> int:
        """How many units the cluster runs at once: its CPUs, and on GPUs at most GPUs / gpu_fraction."""
        cpus, gpus = self._resources()
        n = int(cpus)
        if self.uses_gpu(device):
            n = min(n, int(gpus / self.gpu_fraction + 1e-9))
        return max(1, n)

    def map(self, fn: Callable[[Any], Any], jobs: Sequence[Any], device: str = "cpu",
            each: Callable[[Any], None] | None = None, names: Sequence[str] | None = None,
            progress: bool = True) -> list[Any]:
        """``[fn(job) for job in jobs]``, each job a Ray task; ``each(result)`` here as each finishes. ``fn``
        must be importable on the workers (a top-level function of an installed module). ``names`` name the
        units in the progress bar's failures and in the error the stage fails with."""
        jobs = list(jobs)
        names = list(names) if names is not None else [f"unit {i}" for i in range(len(jobs))]
        if not jobs:
            return []
        ray = self.connect()
        gpus = self.gpu_fraction if self.uses_gpu(device) else 0
        setup = _Setup(cwd=os.getcwd(), code=_code_hash(), env={k: os.environ[k] for k in ENV_KEYS if k in os.environ})
        task = ray.remote(_run_unit).options(num_cpus=1, num_gpus=gpus, max_retries=MAX_RETRIES,
                                              retry_exceptions=False, runtime_env={"env_vars": setup.env})
        board = ray.remote(_Board).options(num_cpus=0).remote()
        refs = [task.remote(fn, job, i, setup, board) for i, job in enumerate(jobs)]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(jobs)
        failed: list[tuple[int, BaseException]] = []
        bar = _UnitBar(len(jobs), gpus, progress)
        pending, t0 = list(refs), time.perf_counter()
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)
                for ref in ready:
                    i = index[ref]
                    try:
                        results[i] = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # raised in the task, or its worker lost too often
                        failed.append((i, _cause(exc)))
                        bar.write(f"fedbench: ray: {names[i]} failed for good:\n{exc}")
                    else:
                        if each is not None:
                            each(results[i])
                bar.update(len(ready), ray.get(board.starts.remote()), len(failed))
        except BaseException as exc:  # interrupted (Ctrl-C, SIGTERM) or ``each`` raised: stop the units still out
            for ref in pending:
                ray.cancel(ref, force=True)
            stop = interruption(exc)
            if stop is not None and stop is not exc:  # Ray raised the stop as a SystemError of its own: the stop
                raise stop from None                  # goes on as itself, as from the local executor
            raise
        finally:
            bar.close()
        starts = ray.get(board.starts.remote())
        ray.kill(board)
        retried = sum(1 for n in starts.values() if n > 1)
        print(f"fedbench: ray: {len(jobs) - len(failed)} of {len(jobs)} units done in {time.perf_counter() - t0:.1f} s"
              f"{f', {retried} retried' if retried else ''}", file=sys.stderr)
        if failed:
            raise UnitsFailed(f"{len(failed)} of {len(jobs)} units failed for good on Ray: " + "; ".join(
                f"[{names[i]}] {_one_line(exc)}" for i, exc in failed)) from failed[0][1]
        return results


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _descendants() -> set[int]:
    """The processes below this one (Linux's /proc; elsewhere none)."""
    parent_of = {}
    for entry in Path("/proc").iterdir() if Path("/proc/self").is_dir() else ():
        if entry.name.isdigit():
            try:
                parent_of[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
    below, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parent_of.items() if parent in frontier} - below
        below |= frontier
    return below


def _kill_started_since(before: set[int]) -> None:
    """Kill the processes below this one that ``before`` does not hold: those of a local Ray whose start was cut
    short. Measured without this (Ray 2.60): SIGTERM in the seconds ray.init takes left its dashboard and runtime-env
    agents running after the driver had exited, ignoring SIGTERM. Each is stopped first, until none is left that
    could start another, then all are killed. Children that processes already there start meanwhile are killed too
    (none of fedbench's commands has such a process while ray.init runs)."""
    stopped: set[int] = set()
    while started := _descendants() - before - stopped:
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= started
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _cause(exc: BaseException) -> BaseException:
    """The exception a task raised, out of Ray's wrapper (a lost worker or node is Ray's own error)."""
    return getattr(exc, "cause", None) or exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


@functools.cache
def _code_hash() -> str:
    """The fedbench package's code (every .py file): a node must run the driver's."""
    from fedbench.provenance import code_hash

    return code_hash(("",))


@dataclass(frozen=True)
class _Setup:
    cwd: str  # the driver's working directory (params.yaml, data/, results/ are relative to it)
    code: str  # the driver's _code_hash
    env: dict[str, str]  # the driver's ENV_KEYS


def _run_unit(fn: Callable[[Any], Any], job: Any, index: int, setup: _Setup, board: Any) -> Any:
    """A Ray task: set this worker up as a forked local worker would be, then run the unit."""
    board.started.remote(index)
    host = socket.gethostname()
    for key, value in setup.env.items():
        if os.environ.get(key) != value:
            raise RuntimeError(f"node {host}: {key}={os.environ.get(key)!r} in the worker, {value!r} on the driver")
    try:
        os.chdir(setup.cwd)
    except OSError:
        raise FedbenchError(f"node {host}: the driver's working directory {setup.cwd} is not here; a Ray cluster of "
                            "several machines needs the project (params.yaml, data/, results/) at the same path on every "
                            "node, on a filesystem they all mount") from None
    if _code_hash() != setup.code:
        import fedbench

        raise FedbenchError(f"node {host}: fedbench at {os.path.dirname(fedbench.__file__)} has code {_code_hash()}, "
                            f"the driver's is {setup.code}; install the driver's fedbench on every node")
    one_torch_thread()
    return fn(job)


class _Board:
    """A Ray actor counting how many times each unit started (a unit retried after a lost worker starts again)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def started(self, index: int) -> None:
        self.counts[index] = self.counts.get(index, 0) + 1

    def starts(self) -> dict[int, int]:
        return dict(self.counts)


class _UnitBar:
    """The driver's one progress bar over units, with their states."""

    def __init__(self, total: int, gpus: float, show: bool) -> None:
        from tqdm.auto import tqdm

        self.total, self.done = total, 0
        self.bar = tqdm(total=total, desc=f"ray: units (1 CPU{f', {gpus:g} GPU' if gpus else ''} each)",
                        unit="unit", file=sys.stderr, dynamic_ncols=True, mininterval=1.0, disable=not show)

    def update(self, finished: int, starts: dict[int, int], failed: int) -> None:
        self.done += finished
        started = len(starts)
        self.bar.set_postfix(queued=self.total - started, running=max(0, started - self.done),
                             retried=sum(1 for n in starts.values() if n > 1), failed=failed, refresh=False)
        self.bar.update(finished)

    def write(self, message: str) -> None:
        self.bar.write(message, file=sys.stderr)

    def close(self) -> None:
        self.bar.close()

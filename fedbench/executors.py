"""Where a stage's units of work run (``train.executor``): ``local``, the forked process pool of
fedbench.parallel on this machine, or ``ray``, one Ray task per unit on a Ray cluster. A unit is a stack of runs
(fedbench.engine.stacking): Simulations, the train stage's and a claim study's alike. Both
executors take the same units and return the same results, in order, calling ``each`` on the driver as each
unit finishes; this is the only module that imports Ray, and only when the ``ray`` executor is used.

The ``ray`` executor
  - Cluster: the one at ``RAY_ADDRESS`` (``ray start --head`` on a machine; the driver connects to it), else a
    local Ray started for the stage with ``train.workers`` CPUs and shut down at its end. A Ray already
    initialized in this process (a test's cluster) is used as it is and left running.
  - No shared disk: a unit reads nothing from the project folder and writes nothing there. Its datasets reach it
    through Ray's object store (put once by the driver, copied once to each node that runs a unit reading them), its
    code is the fedbench installed on the node (a node whose fedbench differs from the driver's refuses the unit,
    naming both code hashes), and it runs in a private temporary folder of its node, removed when it ends. It returns
    its runs' outcomes to the driver, which alone writes the store, the records and MLflow.
  - Checkpoints: a unit's runs checkpoint into its private folder, and each new checkpoint is copied within
    PERSIST_EVERY_S seconds to ``train.checkpoint_storage``: by default the driver's own checkpoint files (the store's,
    beside its outcomes, which the local executor resumes from too), written by an actor on the driver's node; or a
    folder or fsspec URI (``s3://bucket/path``, ``gs://...``, a folder every node mounts) that the units write
    directly. A unit started again reads its runs' checkpoints back from there; the driver removes them once it has
    kept the unit's outcomes.
  - Resources: each unit asks for one CPU and, when it trains on a GPU, ``train.gpu_fraction`` of one (so
    1 / gpu_fraction units share a GPU). A unit trains on a GPU when ``train.device`` is ``cuda``/``cuda:N``, or
    ``auto`` and the cluster has GPUs; stacks are then planned for min(CPUs, GPUs / gpu_fraction) units at once,
    on the CPU for the cluster's CPUs. Before any unit starts on GPUs, each stack's step memory (the memory planner's
    figures, fedbench.engine.stacking.StepMemory) is held against one GPU of the cluster: a stack that does not fit
    one GPU fails the stage in one line; one that does not fit its share is told so on stderr (Ray does not enforce
    memory shares).
  - Faults: a unit whose worker process or node dies is run again, up to MAX_RETRIES times, on any node; it resumes
    each run from its last checkpoint in the storage. A unit that finished was handed to the driver when it finished
    (its outcomes are on the driver's node), so a node lost afterwards loses nothing. A unit that raises fails for
    good at once (the error is the run's own, a retry would raise it again); the others go on, and the stage then
    fails naming every failed unit and its error.
  - Stops: Ctrl-C or SIGTERM on the driver cancels the units still out (their worker processes are killed, on every
    node; a run keeps its last checkpoint) and shuts a local Ray down; the stop goes on as itself (Ray raises it as a
    SystemError of its own), so the command ends as with ``local``: one line, exit 130 or 143. A SIGTERM while a
    local Ray starts (ray.init's own handler exits with 15) ends the same way, the processes started so far killed.
  - Same numbers as ``local``: every unit runs with one torch thread, with the environment variables that decide
    floating-point paths (ENV_KEYS, e.g. MKL_CBWR which fedbench sets at import) copied from the driver, on the same
    fedbench code. Nothing is logged to MLflow by a task: the track stage logs once, from the runs' outcome files.
  - Progress: one bar on the driver over all units, with how many are queued, running, retried and failed.

A cluster of several machines needs the same fedbench and torch installed on each node and, for bit-identical
numbers across nodes, the same CPU code path (ATEN_CPU_CAPABILITY and MKL_ENABLE_INSTRUCTIONS set on the driver are
copied to the tasks; see fedbench.regression on cross-CPU drift). Tested as a cluster of three nodes on one machine
(tests/test_ray_cluster.py), a worker node removed mid-run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from fedbench.errors import FedbenchError
from fedbench.guard import interruption
from fedbench.parallel import Terminated, map_jobs, one_torch_thread

EXECUTORS = ("local", "ray")
MAX_RETRIES = 3  # runs of a unit whose worker process or node died, after the first
# environment variables that choose floating-point code paths: copied from the driver into every Ray task
ENV_KEYS = ("MKL_CBWR", "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS")
PERSIST_EVERY_S = 0.5  # a unit copies its runs' new checkpoints to the storage this often (seconds)


class UnitsFailed(FedbenchError):
    """Units of work that failed for good (on Ray: raised, or their worker lost more than MAX_RETRIES times)."""

    label = "failed"


class DoesNotFit(FedbenchError):
    """A stack whose step needs more memory than one GPU of the cluster has: refused before any unit starts."""

    label = "does not fit"


@dataclass(frozen=True)
class ExecutorSettings:
    """How a stage runs its units: ``kind`` (train.executor), the GPU share of a unit (train.gpu_fraction) and where
    Ray units keep their checkpoints (train.checkpoint_storage: "" for the driver's own folders)."""

    kind: str = "local"
    gpu_fraction: float = 0.25
    storage: str = ""

    @classmethod
    def of(cls, train: Any) -> ExecutorSettings:
        return cls(train.executor, train.gpu_fraction, train.checkpoint_storage)


def check_storage(setting: str) -> str | None:
    """What is wrong with train.checkpoint_storage ``setting`` (None: nothing): "" (the driver's folders), an
    absolute folder, or a URI whose filesystem fsspec has here."""
    if setting == "":
        return None
    if "://" not in setting:
        if not os.path.isabs(setting):
            return (f"{setting!r} is a relative folder, which each unit would read as its own private folder; "
                    "allowed: '' (the driver's folders), an absolute folder every node mounts, or a URI (s3://...)")
        return None
    import fsspec

    protocol = setting.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError) as exc:
        return f"{setting!r}: {_one_line(exc)}"
    return None


@contextmanager
def open_executor(settings: ExecutorSettings, workers: int) -> Iterator[LocalExecutor | RayExecutor]:
    """The executor ``settings`` name, for one stage: ``workers`` processes here, or a Ray cluster (at
    RAY_ADDRESS, else a local Ray with ``workers`` CPUs, started when first needed and shut down at the end)."""
    if settings.kind == "local":
        yield LocalExecutor(workers)
        return
    if settings.kind != "ray":
        raise ValueError(f"executor {settings.kind!r}; allowed: {', '.join(EXECUTORS)}")
    ex = RayExecutor(workers, settings.gpu_fraction, settings.storage)
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

    def __init__(self, workers: int, gpu_fraction: float, storage: str = "") -> None:
        self.workers = max(1, workers)
        self.gpu_fraction = gpu_fraction
        self.storage = storage  # train.checkpoint_storage
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

    def gpu_memory(self) -> int | None:
        """Bytes of one GPU of the cluster, as a unit holding a share of one sees it (torch.cuda.mem_get_info's
        total); None where it sees no CUDA (a node declaring GPUs it does not have, as a test's does)."""
        ray = self.connect()
        probe = ray.remote(_gpu_bytes).options(num_cpus=0, num_gpus=self.gpu_fraction, max_retries=MAX_RETRIES)
        return ray.get(probe.remote())

    def check_fits(self, jobs: Sequence[Any], names: Sequence[str]) -> None:
        """Every stack's step memory (fedbench.engine.stacking.StepMemory, within its MEMORY_SHARE) against one GPU
        of the cluster: a stack that does not fit one GPU raises DoesNotFit (one line, before any unit starts); one
        that does not fit its share (gpu_fraction) is said on stderr."""
        from fedbench.engine.stacking import MEMORY_SHARE

        per_gpu = None
        for job, name in zip(jobs, names):
            need = stack_bytes(job)
            if need is None:
                continue
            per_gpu = self.gpu_memory() if per_gpu is None else per_gpu
            if per_gpu is None:
                return
            if need > MEMORY_SHARE * per_gpu:
                raise DoesNotFit(f"stack [{name}] needs {_size(need)} a step, more than {MEMORY_SHARE:g} of one GPU of "
                                 f"the cluster ({_size(per_gpu)}); allowed: fewer runs or clients per round in a stack, "
                                 "or a cluster of larger GPUs")
            if need > MEMORY_SHARE * per_gpu * self.gpu_fraction:
                print(f"fedbench: ray: stack [{name}] needs {_size(need)} a step, more than its share of a GPU "
                      f"(train.gpu_fraction {self.gpu_fraction:g} of {_size(per_gpu)}); Ray does not enforce memory "
                      "shares: raise train.gpu_fraction if units run out of memory", file=sys.stderr)

    def map(self, fn: Callable[[Any], Any], jobs: Sequence[Any], device: str = "cpu",
            each: Callable[[Any], None] | None = None, names: Sequence[str] | None = None,
            progress: bool = True) -> list[Any]:
        """``[fn(job) for job in jobs]``, each job a Ray task; ``each(result)`` here as each finishes. ``fn``
        must be importable on the workers (a top-level function of an installed module). ``names`` name the
        units in the progress bar's failures and in the error the stage fails with. A job that is a stack of
        simulations (fedbench.study.runner._Stack: ``sims`` and ``checkpoints``) has its datasets put in the
        object store and its checkpoints kept in the storage (the module docstring)."""
        jobs = list(jobs)
        names = list(names) if names is not None else [f"unit {i}" for i in range(len(jobs))]
        if not jobs:
            return []
        ray = self.connect()
        gpus = self.gpu_fraction if self.uses_gpu(device) else 0
        if gpus:
            self.check_fits(jobs, names)
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        setup = _Setup(code=_code_hash(), env={k: os.environ[k] for k in ENV_KEYS if k in os.environ})
        task = ray.remote(_run_unit).options(num_cpus=1, num_gpus=gpus, max_retries=MAX_RETRIES,
                                              retry_exceptions=False, runtime_env={"env_vars": setup.env})
        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        board = ray.remote(_Board).options(num_cpus=0, scheduling_strategy=here).remote()  # on the driver's node
        storage = _Bucket(self.storage) if self.storage else _DriverFolders(board)
        ship = _Shipper(ray)
        refs = [task.remote(fn, ship(job), i, setup, board, storage) for i, job in enumerate(jobs)]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(jobs)
        failed: list[tuple[int, BaseException]] = []
        bar = _UnitBar(len(jobs), gpus, progress)
        pending, t0 = list(refs), time.perf_counter()
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1, timeout=1.0)  # fetched to this node when ready
                for ref in ready:
                    i = index[ref]
                    try:
                        results[i] = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # raised in the task, or its worker lost too often
                        failed.append((i, _cause(exc)))
                        bar.write(f"fedbench: ray: {names[i]} failed for good:\n{exc}")
                    else:
                        if each is not None:
                            each(results[i])  # kept (the store): its checkpoints are no longer needed
                        for key in _checkpoint_keys(jobs[i]):
                            storage.remove(key)
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
    """The fedbench package's code: SHA-256 (16 hex digits) over the names and bytes of its .py files, which a node
    must share with the driver. Bytes, not fedbench.provenance.code_hash's syntax trees: every process of the cluster
    computes it once, and parsing the whole package took 3 s of a loaded 2-core machine, hashing its bytes 0.02 s."""
    from fedbench.provenance import PACKAGE

    return package_hash(PACKAGE)


def package_hash(root: Path) -> str:
    """SHA-256 (16 hex digits) over the names (relative to ``root``) and bytes of the .py files under ``root``."""
    import hashlib

    from fedbench.provenance import code_files

    h = hashlib.sha256()
    for f in code_files(("",), root):
        data = f.read_bytes()
        h.update(f"{f.relative_to(root)}\0{len(data)}\0".encode() + data)
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class _Setup:
    code: str  # the driver's _code_hash
    env: dict[str, str]  # the driver's ENV_KEYS


def _run_unit(fn: Callable[[Any], Any], job: Any, index: int, setup: _Setup, board: Any, storage: Any) -> Any:
    """A Ray task: set this worker up as a forked local worker would be, then run the unit in a private folder of
    this node, its checkpoints read from and copied to ``storage``."""
    board.started.remote(index)
    host = socket.gethostname()
    for key, value in setup.env.items():
        if os.environ.get(key) != value:
            raise RuntimeError(f"node {host}: {key}={os.environ.get(key)!r} in the worker, {value!r} on the driver")
    if _code_hash() != setup.code:
        import fedbench

        raise FedbenchError(f"node {host}: fedbench at {os.path.dirname(fedbench.__file__)} has code {_code_hash()}, "
                            f"the driver's is {setup.code}; install the driver's fedbench on every node")
    one_torch_thread()
    try:
        with _private_folder() as here:
            job, files = _localized(job, here, storage)
            with _Persisting(files, storage):
                return fn(job)
    finally:
        _FETCHED.clear()  # this unit's datasets: the next unit of this worker gets its own from the object store


@contextmanager
def _private_folder() -> Iterator[Path]:
    """A new temporary folder of this node as the working directory (a relative path a unit writes lands there, as
    on a node with no shared disk), removed at the end."""
    before = os.getcwd()
    here = Path(tempfile.mkdtemp(prefix="fedbench-unit-"))
    os.chdir(here)
    try:
        yield here
    finally:
        os.chdir(before)
        shutil.rmtree(here, ignore_errors=True)


def _checkpoint_keys(job: Any) -> list[str]:
    """The driver's checkpoint files of a stack's runs (``checkpoints``; none for another job): their keys in the
    storage."""
    return [str(c) for c in getattr(job, "checkpoints", None) or () if c is not None]


def _localized(job: Any, here: Path, storage: Any) -> tuple[Any, dict[Path, str]]:
    """``job`` with each run's checkpoint a file in ``here``, holding what ``storage`` has for it (a unit started
    again resumes from it); and those files, each with its key in the storage."""
    if not _checkpoint_keys(job):
        return job, {}
    files, paths = {}, []
    for n, key in enumerate(job.checkpoints):
        if key is None:
            paths.append(None)
            continue
        path = here / f"{n}-{Path(key).name}"
        data = storage.read(str(key))
        if data is not None:
            path.write_bytes(data)
        files[path] = str(key)
        paths.append(path)
    return dataclasses.replace(job, checkpoints=paths), files


def _version(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


class _Persisting:
    """A thread copying each new version of a unit's checkpoint files to the storage every PERSIST_EVERY_S seconds,
    and once more when the unit ends (the engine replaces a checkpoint whole: fedbench.engine.simulation)."""

    def __init__(self, files: dict[Path, str], storage: Any) -> None:
        self.files, self.storage = files, storage
        self.seen = {path: _version(path) for path in files}  # what the storage holds already
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="fedbench-checkpoints", daemon=True)
        self.warned = False

    def __enter__(self) -> Self:
        if self.files:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.files:
            self.stop.set()
            self.thread.join()
            self.sync()

    def _loop(self) -> None:
        while not self.stop.wait(PERSIST_EVERY_S):
            self.sync()

    def sync(self) -> None:
        for path, key in self.files.items():
            version = _version(path)
            if version is None or version == self.seen[path]:
                continue
            try:
                self.storage.write(key, path.read_bytes())
            except FileNotFoundError:  # the run finished meanwhile (the engine removes its checkpoint)
                continue
            except Exception as exc:  # noqa: BLE001 - the run goes on; a resume would start from an older checkpoint
                if not self.warned:
                    print(f"fedbench: ray: a checkpoint could not be kept in the storage: {_one_line(exc)}",
                          file=sys.stderr)
                    self.warned = True
                continue
            self.seen[path] = version


@dataclass(frozen=True)
class _Bucket:
    """The storage train.checkpoint_storage names (a folder every node mounts, or an fsspec URI): a checkpoint kept
    under its file's name."""

    url: str

    def _where(self, key: str) -> tuple[Any, str]:
        from fsspec.core import url_to_fs

        fs, root = url_to_fs(self.url)
        return fs, f"{root.rstrip('/')}/{Path(key).name}"

    def read(self, key: str) -> bytes | None:
        fs, path = self._where(key)
        try:
            return fs.cat_file(path)
        except FileNotFoundError:
            return None

    def write(self, key: str, data: bytes) -> None:
        fs, path = self._where(key)
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        tmp = f"{path}.{socket.gethostname()}-{os.getpid()}.tmp"
        fs.pipe_file(tmp, data)
        fs.mv(tmp, path)  # whole, or not at all (an object store's put is)

    def remove(self, key: str) -> None:
        fs, path = self._where(key)
        with contextlib.suppress(FileNotFoundError):
            fs.rm_file(path)


@dataclass(frozen=True)
class _DriverFolders:
    """The default storage: the driver's own checkpoint files (a key is the file), read and written by the board, an
    actor on the driver's node."""

    board: Any

    def read(self, key: str) -> bytes | None:
        import ray

        return ray.get(self.board.read.remote(key))

    def write(self, key: str, data: bytes) -> None:
        import ray

        ray.get(self.board.write.remote(key, data))

    def remove(self, key: str) -> None:
        import ray

        ray.get(self.board.remove.remote(key))


class _Board:
    """A Ray actor on the driver's node: counts how many times each unit started (a unit retried after a lost worker
    starts again), and reads and writes the driver's checkpoint files for units on any node (_DriverFolders)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def started(self, index: int) -> None:
        self.counts[index] = self.counts.get(index, 0) + 1

    def starts(self) -> dict[int, int]:
        return dict(self.counts)

    def read(self, path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, path: str, data: bytes) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)

    def remove(self, path: str) -> None:
        Path(path).unlink(missing_ok=True)


class _Shipper:
    """On the driver: a stack's simulations with their datasets put in the object store, each dataset once (however
    many stacks read it); another job as it is."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.refs: dict[int, tuple[Any, Any]] = {}  # id(dataset): (the dataset, kept so its id stays its own; ref)

    def __call__(self, job: Any) -> Any:
        sims = getattr(job, "sims", None)
        if sims is None:
            return job
        return dataclasses.replace(job, sims=[dataclasses.replace(sim, dataset=self.ship(sim.dataset)) for sim in sims])

    def ship(self, build: Callable[[], Any]) -> _FromObjectStore:
        data = build()  # a Simulation's builder caches: runs sharing data give the same object
        if id(data) not in self.refs:
            self.refs[id(data)] = (data, self.ray.put(data))
        return _FromObjectStore(self.refs[id(data)][1])


_FETCHED: dict[bytes, Any] = {}  # in a worker: the datasets of the unit it runs, by object


@dataclass(frozen=True)
class _FromObjectStore:
    """A Simulation's dataset builder in a unit: the dataset from the node's copy in the object store, copied into
    the unit once (the object store's arrays are read-only; a local worker's are its own, as these)."""

    ref: Any

    def __call__(self) -> Any:
        key = self.ref.binary()
        if key not in _FETCHED:
            import copy

            import ray

            _FETCHED[key] = copy.deepcopy(ray.get(self.ref))
        return _FETCHED[key]


def stack_bytes(job: Any) -> int | None:
    """Bytes one step of a stack of simulations needs on a GPU (fedbench.engine.stacking.StepMemory, as the memory
    planner counts them); None for another job."""
    sims = getattr(job, "sims", None)
    if not sims:
        return None
    import torch

    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.kernels.generic import EVAL_CHUNK_SAMPLES
    from fedbench.engine.stacking import LARGEST_COHORT, algorithm_vectors, step_memory

    sim, model = sims[0], sims[0].model
    data, cfg = sim.dataset(), sim.config
    n = data.num_clients
    sample = torch.zeros(1, *data.train.x.shape[1:], dtype=model.input_dtype)
    batched = choose_kernel(model, torch.device("cuda"), cfg.kernel, cohort=LARGEST_COHORT).name != "loop"
    memory = step_memory(model, algorithm_vectors(sim.algorithm, model.num_params, n), sample, cfg.batch_size,
                         EVAL_CHUNK_SAMPLES, n, batched_activations=batched)
    return memory.bytes(len(sims), min(cfg.clients_per_round, n))


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n / 2**10:.1f} KiB"


def _gpu_bytes() -> int | None:
    """In a task holding a GPU share: the memory of its GPU (None where it sees no CUDA)."""
    import torch

    return int(torch.cuda.mem_get_info()[1]) if torch.cuda.is_available() else None


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

"""The fault suite: each test reproduces one fault of issue 14 through the real command line, in a temporary
workspace with its own data, runs and MLflow store.

Most tests drive ``python -m fedbench.cli`` as a user would, so they can be pointed at another checkout to see
which faults it has: ``FAULTS_CODE_ROOT=/path/to/checkout pytest tests/faults``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CODE = Path(os.environ.get("FAULTS_CODE_ROOT", ROOT)).resolve()


# A background command started as a terminal starts one: Ctrl-C and SIGTERM at their defaults, then the same process
# becomes ``python -m fedbench.cli ...`` (exec keeps its pid). A process whose SIGINT is ignored passes that on to its
# children, and Python then never raises KeyboardInterrupt in them: under the parallel suite a pytest worker was seen
# in that state (after some test in it), and `fedbench run` there ran every seed to the end through a Ctrl-C.
AS_A_TERMINAL_STARTS_IT = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                           "signal.signal(signal.SIGTERM, signal.SIG_DFL); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


class Workspace:
    """A folder to run ``fedbench`` in: params.yaml (a tiny profile of the repository's), data/, runs/, and an
    MLflow store in ``store_dir`` (on tmpfs where there is one: creating a SQLite store is a few hundred fsyncs,
    11 s on these machines' disks, 3 s in memory)."""

    def __init__(self, path: Path, store_dir: Path | None = None) -> None:
        self.path = path
        self.store = (store_dir or path) / "store.db"
        self.uri = f"sqlite:///{self.store}"
        self.env = os.environ | {
            "PYTHONPATH": str(CODE), "MLFLOW_TRACKING_URI": self.uri, "DVC_NO_ANALYTICS": "1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }

    def write_params(self, edit=None) -> Path:
        raw = yaml.safe_load((ROOT / "params.yaml").read_text())
        raw["data"]["datasets"] = ["synthetic_1_1"]
        raw["train"].update(rounds=3, local_epochs=2, seeds=[0], workers=1, device="cpu")
        raw["studies"] = {"stragglers": {"datasets": ["synthetic_1_1"], "algorithms": ["fedavg", "fedprox_mu0",
                                                                                     "fedprox_mu1"],
                                         "stragglers": [0.0, 0.5, 0.9]}}
        raw["claim_studies"] = {"default": {}}
        if edit is not None:
            edit(raw)
        (self.path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        return self.path / "params.yaml"

    def stored(self, dataset: str, variant: str, stragglers: float, seed: int, **overrides) -> dict:
        """The stored run of this cell and seed under the workspace's params.yaml with ``overrides`` (dotted keys, as
        `--set`: fedbench.study.experiments.find_run: its summary, with ``history``), and its outcome file as ``path``
        (results/fedprox_main_job/pipeline/outcomes/<fingerprint>.json)."""
        from fedbench.config import load_config
        from fedbench.study.experiments import RunKey, find_run, outcome_path

        cfg = load_config(self.path / "params.yaml", overrides or None)
        found = find_run(cfg, self.path / "data/generated", self.path / "results",
                         RunKey(dataset, variant, float(stragglers), seed))
        assert found is not None, f"no stored run of {dataset} {variant} stragglers={stragglers} seed={seed}"
        return found | {"path": outcome_path(self.path / "results", found["fingerprint"])}

    def index(self) -> list[dict]:
        """The records of the runs `fedbench run` made (results/fedprox_main_job/runs/simulations.jsonl), one per
        finished run (its first record: a run read back is recorded again, under the same fingerprint), oldest first."""
        import json

        path = self.path / "results/fedprox_main_job/runs/simulations.jsonl"
        records = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        first: dict[str, dict] = {}
        for r in records:
            first.setdefault(r["fingerprint"], r)
        return list(first.values())

    def outcome(self, fingerprint: str) -> dict:
        """The stored outcome file of run ``fingerprint``, as JSON."""
        import json

        from fedbench.study.experiments import outcome_path

        return json.loads(outcome_path(self.path / "results", fingerprint).read_text())

    def fedbench(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "fedbench.cli", *args], cwd=self.path, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def fedbench_script(self, stage: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """A DVC stage script (pipelines/<stage>.py) as DVC runs it."""
        return subprocess.run([sys.executable, str(CODE / "pipelines" / f"{stage}.py"), *args], cwd=self.path,
                              env=self.env, capture_output=True, text=True, timeout=timeout)

    def start(self, *args: str) -> subprocess.Popen:
        """``fedbench *args`` in the background; its output goes to a file (a pipe nobody reads would fill up
        with progress bars and block it): ``finish`` waits for it and returns its stderr."""
        self._started = getattr(self, "_started", 0) + 1
        log = self.path.parent / f"{self.path.name}-process-{self._started}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([sys.executable, "-c", AS_A_TERMINAL_STARTS_IT, "-m", "fedbench.cli", *args],
                                    cwd=self.path, env=self.env, stdout=out, stderr=subprocess.STDOUT, text=True)
        proc.log = log
        return proc

    @staticmethod
    def finish(proc: subprocess.Popen, timeout: float = 240) -> str:
        proc.wait(timeout=timeout)
        return proc.log.read_text()

    def runs(self):
        """Every MLflow run in the store (any status); none while there is no store. Read under the store's
        lock, as fedbench itself reads it, so that polling cannot race fedbench creating the store."""
        from contextlib import nullcontext

        from mlflow.tracking import MlflowClient

        try:
            from fedbench.locking import file_lock
            from fedbench.tracking import store_lock_path

            lock = file_lock(store_lock_path(self.uri))
        except ImportError:  # a checkout from before the lock (FAULTS_CODE_ROOT)
            lock = nullcontext()
        with lock:
            if not self.store.exists():
                return []
            client = MlflowClient(self.uri)
            ids = [e.experiment_id for e in client.search_experiments()]
            return client.search_runs(ids, max_results=10_000) if ids else []

    def create_store(self) -> None:
        from mlflow.tracking import MlflowClient

        MlflowClient(self.uri).search_experiments()


@pytest.fixture
def ws(tmp_path) -> Workspace:
    import shutil
    import tempfile

    shm = Path("/dev/shm")
    store_dir = Path(tempfile.mkdtemp(prefix="fedbench-faults-", dir=shm)) if shm.is_dir() else None
    w = Workspace(tmp_path, store_dir)
    w.write_params()
    yield w
    if store_dir is not None:
        shutil.rmtree(store_dir, ignore_errors=True)


def one_line(stderr: str) -> str:
    """The last non-empty line of ``stderr``, after checking it is the only line that is not a progress bar."""
    lines = [line for line in stderr.splitlines() if line.strip() and "it/s" not in line and "%|" not in line]
    assert len(lines) == 1, stderr[-3000:]
    return lines[0]


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - out
        out |= frontier
    return out


def wait_for_descendants(pid: int, n: int, timeout: float = 60) -> set[int]:
    """The processes below ``pid`` once there are at least ``n`` of them."""
    def found() -> set[int] | None:
        below = descendants(pid)
        return below if len(below) >= n else None

    return wait_for(found, timeout, f"{n} processes below {pid}")


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22); None if there is none."""
    try:
        return int((Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class Reaper(set):
    """Pids to SIGKILL at the end of a test if still alive, each with its start time: a pid the kernel has given to
    another process since (pids wrap at /proc/sys/kernel/pid_max, 32,768 on these machines, and the suite starts tens
    of thousands of processes; a test running beside this one may hold it) is left alone."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict[int, int | None] = {}

    def add(self, pid: int) -> None:
        self.started.setdefault(pid, _start_time(pid))
        super().add(pid)

    def update(self, *pid_sets) -> None:
        for pids in pid_sets:
            for pid in pids:
                self.add(pid)

    def kill_leftovers(self) -> None:
        for pid in self:
            if alive(pid) and self.started[pid] is not None and _start_time(pid) == self.started[pid]:
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def reaper():
    """Pids to SIGKILL at the end of the test if still alive (so that a failing test leaves no orphans), and still
    the processes they were when added (:class:`Reaper`)."""
    pids = Reaper()
    yield pids
    pids.kill_leftovers()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(predicate, timeout: float, what: str, step: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def kill(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)

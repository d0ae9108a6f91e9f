"""Test-wide settings: one torch thread (tests run tiny tensors; threads only add contention on 2 cores); the session
fixtures that several test folders read (the regression profile's runs, each claim study's end-to-end run)."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

# Triton's interpreter for the fused kernels' tests (tests/engine/test_fused_mclr.py): it must be set before Triton is
# first imported, which torch or another test may do in the same worker process; no test runs Triton on a GPU here
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
torch.set_num_threads(1)
# no test reads the machine's system dataset packages (e.g. Debian's dataset-fashion-mnist): a test that wants a
# local copy points this at its own folder (tests/data/test_local_copy.py)
os.environ["FEDBENCH_SYSTEM_DATASETS"] = "/nonexistent/fedbench-tests/system-datasets"

if TYPE_CHECKING:
    from tests.studies.end_to_end import Ran  # imported where used: every test process loads this file

NUMERICS_FILES = pytest.StashKey[set]()  # the files of the collected tests marked numerics (tests/test_markers.py)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every collected numerics test, whatever the run selects
def pytest_collection_modifyitems(config, items):
    """Records the files of the numerics tests, and orders the tests so that those marked ``slow`` (10 s or more)
    start first in every test process: a long test started first overlaps the rest, where one started last would be
    the run's tail. pytest-xdist's worksteal (`make test`'s) hands process i the i-th contiguous share of this order
    (len(pending) // processes left) and an idle process steals from the ends of the others' queues; so each share
    begins with its part of the slow tests (dealt in turn, from the second share when the first leads with
    the together tests), the rest fills it in the collection's order. Tests
    marked ``slow(together=True)`` (a module's tests sharing an expensive module fixture) all lead the first share,
    so that one process runs them and sets the fixture up once."""
    root = Path(__file__).resolve().parent.parent
    config.stash[NUMERICS_FILES] = {Path(i.path).resolve().relative_to(root).as_posix() for i in items
                                    if i.get_closest_marker("numerics")}
    items[:] = _slow_first(items, getattr(config, "workerinput", {}).get("workercount", 1))


def _slow_first(items: list, processes: int) -> list:
    """``items`` in the order described above, for ``processes`` test processes (deterministic: every process of a
    run collects, and must order, the same)."""
    def slow(item, together=False):
        mark = item.get_closest_marker("slow")
        return mark is not None and bool(mark.kwargs.get("together")) == together

    together = [i for i in items if slow(i, together=True)]
    dealt = [i for i in items if slow(i)]
    rest = [i for i in items if i.get_closest_marker("slow") is None]
    shares = [list(together) if p == 0 else [] for p in range(processes)]
    first = 1 if together else 0  # the deal starts beside the share that holds the together tests
    for k, item in enumerate(dealt):
        shares[(first + k) % processes].append(item)
    out, left = [], len(items)
    for p, share in enumerate(shares):
        size = left // (processes - p)  # what worksteal hands this process
        take = max(size - len(share), 0)
        out += share + rest[:take]
        rest = rest[take:]
        left -= len(share) + take
    return out + rest


@pytest.fixture(scope="session")
def quick_profile(tmp_path_factory) -> Path:
    """The regression profile's folder (fedbench.regression.key_numbers' ``root``: its data and train store), its runs
    computed once in the whole test session (17 CPU-seconds): under pytest-xdist by the first test process to ask,
    under a file lock, the others reading the finished runs back from the store (tests/test_regression.py and the
    local reference of tests/test_ray_executor.py read the same runs)."""
    from fedbench.locking import file_lock
    from fedbench.regression import key_numbers

    shared = _shared(tmp_path_factory)
    root = shared / "quick-profile"
    with file_lock(shared / "quick-profile.lock"):
        key_numbers(root=root)  # computed by the first, read back by the others
    return root


def _shared(tmp_path_factory) -> Path:
    """This session's folder, shared by its pytest-xdist workers (each worker's own base folder otherwise)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def real_root_of(tmp_path_factory) -> Callable[[str], Path]:
    """``real_root_of(study)``: the study's fixture-sized real variants (tests/studies/real_fixtures.BUILDERS), built
    on the first call."""
    from tests.studies.real_fixtures import build_for

    built: dict[str, Path] = {}

    def real_root(study: str) -> Path:
        if study not in built:
            built[study] = build_for(study, tmp_path_factory.mktemp(f"{study}_data"))
        return built[study]

    return real_root


@pytest.fixture(scope="session")
def study_run(tmp_path_factory, real_root_of) -> Callable[[str], Ran]:
    """``study_run(study)``: the study's end-to-end run at test size (tests/studies/end_to_end.run_small: a
    ``Ran``), run once in the whole test session: under pytest-xdist the first test process to ask runs it, under a
    file lock, and leaves it pickled for the other processes (scaffold_emnist's takes 45 s on 2 cores; several test
    files read each run, tests/test_ray_cluster.py its local executor's records of fedproxvr_mnist)."""
    from tests.studies.end_to_end import run_small

    ran: dict[str, Ran] = {}
    shared = _shared(tmp_path_factory)

    def run(study: str) -> Ran:
        if study not in ran:
            saved = shared / f"study-run-{study}.pickle"
            with open(shared / f"study-run-{study}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
                if saved.exists():
                    ran[study] = pickle.loads(saved.read_bytes())
                else:
                    ran[study] = run_small(study, tmp_path_factory.mktemp(f"{study}_run"), real_root_of)
                    part = saved.with_suffix(".part")
                    part.write_bytes(pickle.dumps(ran[study]))
                    os.replace(part, saved)  # whole or absent
        return ran[study]

    return run

"""Test-wide settings: one torch thread (tests run tiny tensors; threads only add contention on 2 cores)."""

import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
torch.set_num_threads(1)
# no test reads the machine's system dataset packages (e.g. Debian's dataset-fashion-mnist): a test that wants a
# local copy points this at its own folder (tests/data/test_local_copy.py)
os.environ["FEDBENCH_SYSTEM_DATASETS"] = "/nonexistent/fedbench-tests/system-datasets"

NUMERICS_FILES = pytest.StashKey[set]()  # the files of the collected tests marked numerics (tests/test_markers.py)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: every collected numerics test, whatever the run selects
def pytest_collection_modifyitems(config, items):
    """Records the files of the numerics tests, and moves the tests marked ``slow`` (10 s or more) to the front, in
    their order, those marked ``slow(together=True)`` (a module's tests sharing an expensive module fixture) before
    the others. pytest-xdist's worksteal (`make test`'s) gives each test process a contiguous share of this order
    and an idle process steals from the ends of the others' queues: a long test started first overlaps the rest
    (started last, it would be the run's tail), and tests at the very front are run by the process they were given,
    so a shared fixture is set up once."""
    root = Path(__file__).resolve().parent.parent
    config.stash[NUMERICS_FILES] = {Path(i.path).resolve().relative_to(root).as_posix() for i in items
                                    if i.get_closest_marker("numerics")}

    def rank(item) -> int:
        slow = item.get_closest_marker("slow")
        return 2 if slow is None else 0 if slow.kwargs.get("together") else 1

    items[:] = sorted(items, key=rank)  # stable: each rank keeps the collection's order

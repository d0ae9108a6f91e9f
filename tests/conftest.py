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
    their order: a long test started first overlaps the rest, where one started last would be the run's tail.
    (pytest-xdist's loadgroup, `make test`'s, hands out the xdist groups first, largest first, then each test in
    this order to whichever process is free; a group keeps the tests that share an expensive fixture in one
    process.)"""
    root = Path(__file__).resolve().parent.parent
    config.stash[NUMERICS_FILES] = {Path(i.path).resolve().relative_to(root).as_posix() for i in items
                                    if i.get_closest_marker("numerics")}
    items[:] = sorted(items, key=lambda i: i.get_closest_marker("slow") is None)  # stable: the rest keep their order

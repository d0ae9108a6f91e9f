"""Session fixtures of the study tests: each paper-scale study's fixture-sized real variants, built once, and each
study's end-to-end run at test size, run once (tests/studies/end_to_end.py)."""

from __future__ import annotations

import fcntl
import os
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.studies.end_to_end import Ran, run_small
from tests.studies.real_fixtures import build_for


@pytest.fixture(scope="session")
def real_root_of(tmp_path_factory) -> Callable[[str], Path]:
    """``real_root_of(study)``: the study's fixture-sized real variants (tests/studies/real_fixtures.BUILDERS), built
    on the first call."""
    built: dict[str, Path] = {}

    def real_root(study: str) -> Path:
        if study not in built:
            built[study] = build_for(study, tmp_path_factory.mktemp(f"{study}_data"))
        return built[study]

    return real_root


@pytest.fixture(scope="session")
def study_run(tmp_path_factory, real_root_of) -> Callable[[str], Ran]:
    """``study_run(study)``: the study's end-to-end run at test size (tests/studies/end_to_end.run_small), run once in
    the whole test session: under pytest-xdist the first test process to ask runs it, under a file lock, and leaves
    it pickled for the other processes (scaffold_emnist's takes 45 s on 2 cores; several test files read each run)."""
    ran: dict[str, Ran] = {}
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # this session's, shared by its workers

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

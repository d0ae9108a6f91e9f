"""Session fixtures of the study tests: each paper-scale study's fixture-sized real variants, built once, and each
study's end-to-end run at test size, run once (tests/studies/end_to_end.py)."""

from __future__ import annotations

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
    """``study_run(study)``: the study's end-to-end run at test size (tests/studies/end_to_end.run_small), run on the
    first call."""
    ran: dict[str, Ran] = {}

    def run(study: str) -> Ran:
        if study not in ran:
            ran[study] = run_small(study, tmp_path_factory.mktemp(f"{study}_run"), real_root_of)
        return ran[study]

    return run

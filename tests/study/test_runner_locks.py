"""The one runner holds a lock per simulation for a whole call (fedbench.study.runner.run_simulations): each is an open
file, so a call of more simulations than a user's soft limit on open files (often 1,024) raises that limit first, up
to the hard one, instead of failing with "Too many open files" half-way through taking its locks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import resource, sys, tempfile
from contextlib import ExitStack
from pathlib import Path
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
from fedbench.locking import file_lock
from fedbench.study.runner import _allow_open_files
n = int(sys.argv[1])
if sys.argv[2] == "raise":
    _allow_open_files(n + 256)
with tempfile.TemporaryDirectory() as tmp, ExitStack() as locks:
    for i in range(n):
        locks.enter_context(file_lock(Path(tmp) / f".{i}.lock"))
    print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


def _probe(n: int, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, str(n), mode], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_a_call_of_more_locks_than_the_soft_limit_raises_it_first():
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < 1000:
        import pytest

        pytest.skip("this machine's hard limit on open files is under 1,000")
    held = _probe(600, "raise")
    assert held.returncode == 0, held.stderr[-2000:]
    assert held.stdout.strip() == str(600 + 256)  # raised from 64 to what the call needs, no further
    failed = _probe(600, "keep")  # the limit left at 64: the 61st lock or so fails
    assert failed.returncode != 0 and "Too many open files" in failed.stderr

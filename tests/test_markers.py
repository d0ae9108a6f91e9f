"""The kernel-path runs (Makefile test-kernel-paths) collect only the files that Makefile's NUMERICS_FILES finds
with grep: every test marked ``numerics`` that this session collected must sit in one of them, or it would never be
rerun under another CPU's kernel paths."""

import subprocess
from pathlib import Path

from tests.conftest import NUMERICS_FILES

ROOT = Path(__file__).resolve().parent.parent


def test_every_numerics_test_sits_in_a_file_the_kernel_path_runs_collect(request):
    listed = set(subprocess.run(["make", "-s", "--no-print-directory", "numerics-files"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.split())
    assert "tests/test_regression.py" in listed and "tests/engine/test_kernels.py" in listed
    assert request.config.stash[NUMERICS_FILES] <= listed, "a numerics test in a file Makefile's grep misses"

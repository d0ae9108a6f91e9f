"""The tests marked ``numerics`` (floats compared across implementations, or with committed numbers) again under the
kernel paths of other x86 CPUs (issue 29 item 1), each path a pytest run of its own in a child process: torch picks
its kernels by instruction set when it is imported, from these variables.

- ``aten-default``: torch's ATen kernels unvectorised (``ATEN_CPU_CAPABILITY=default``);
- ``avx2``: a CPU without AVX-512, as AMD Zen 2/3 and pre-2017 Intel run: ATen, oneDNN's convolutions and MKL's BLAS
  at AVX2 together.

Under ``aten-default`` the regression profile (tests/test_regression.py, the costliest numerics test: its 110,000 local
steps are 17 CPU-seconds of a path's 50) is left out: unvectorised ATen moved its numbers least of the four settings
(docs/explanation/regression.md: loss 1.0e-9, dissimilarity 4.5e-8, against tolerances of 1e-4 and 2e-3), where it
moved the kernel gradients most (30 of 33 cases), which that path still runs. The ``avx2`` path, the one that moves
the profile most (loss 6.5e-7), runs it.

A test that breaks here breaks on an AMD or older Intel CPU; README "Regression check" says how far the numbers move.
The four settings one at a time also passed (``KERNEL_PATHS`` below, extended by hand: ``ATEN_CPU_CAPABILITY=avx2``,
``ONEDNN_MAX_CPU_ISA=AVX2`` and ``MKL_ENABLE_INSTRUCTIONS=AVX2`` each alone, capability "AVX512" for the last two). These run inside the suite,
where the parallel run starts them first (they are ``slow``), beside the other tests: on 2 cores the suite's
waiting (servers starting, subprocesses) leaves room for them. ``make test-kernel-paths`` runs only these."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL_PATHS = {  # the path's settings, the capability torch must report, numerics files it leaves out (see above)
    "aten-default": ({"ATEN_CPU_CAPABILITY": "default"}, "DEFAULT", ("tests/test_regression.py",)),
    "avx2": ({"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}, "AVX2",
             ()),
}
MARKED = re.compile(r"mark\.numerics|pytestmark.*numerics")  # how a file marks numerics tests (tests/test_markers.py)

# the child: torch's kernel capability as it took the variables, then the numerics tests of these files only
# (collecting the whole suite to deselect the rest costs a process about 15 s)
CHILD = "import sys, torch, pytest; print('capability', torch.backends.cpu.get_cpu_capability(), flush=True); " \
        "sys.exit(pytest.main(sys.argv[1:]))"


def numerics_files() -> list[str]:
    """The test files that mark tests ``numerics``, relative to the repository."""
    return sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
                  if p.name != Path(__file__).name and MARKED.search(p.read_text()))  # never itself


@pytest.mark.slow
@pytest.mark.parametrize("path", KERNEL_PATHS)
def test_the_numerics_tests_pass_under_another_cpus_kernel_path(path):
    settings, capability, left_out = KERNEL_PATHS[path]
    files = [f for f in numerics_files() if f not in left_out]
    assert set(left_out) <= set(numerics_files())  # a file left out is still a numerics file (a renamed one fails here)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ATEN_", "ONEDNN_", "MKL_"))}
    out = subprocess.run([sys.executable, "-c", CHILD, "-q", "-m", "numerics", "-p", "no:cacheprovider",
                          *files], cwd=ROOT, env=env | settings, capture_output=True, text=True,
                         timeout=900, check=False)
    assert out.stdout.startswith(f"capability {capability}\n"), out.stdout[:500]  # the path took effect
    assert out.returncode == 0, f"under {settings}:\n{out.stdout[-8000:]}{out.stderr[-2000:]}"
    assert re.search(r"^\d+ passed", out.stdout.splitlines()[-1]), out.stdout[-2000:]

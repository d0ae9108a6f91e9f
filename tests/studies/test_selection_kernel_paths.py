"""A step-size selection that float noise cannot flip (issue 32, item 5): mime_fashion's tuning at its fixture budget
(fixture-sized fashion_mnist_fedproxvr, 3 arms x the grid x 2 tuning seeds, widened where a choice sits at an edge)
run in fresh processes on three CPU kernel paths: this machine's default, torch's ATen kernels unvectorised
(ATEN_CPU_CAPABILITY=default) and a CPU without AVX-512 (ATen, oneDNN and MKL at AVX2, as Makefile's
test-kernel-paths sets them). The paths round differently (README, "Regression check"), so the tuning readings may
differ in their last digits; the selection (each arm's step, its grid) must be the same on every path. CUDA is the
other kernel path the issue names: no GPU here, so not run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedbench.data import stages
from tests.data import fixtures

KERNEL_VARS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
PATHS = {"default": {},
         "aten-unvectorised": {"ATEN_CPU_CAPABILITY": "default"},
         "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}}
FIXTURE_PARAMS = {"num_clients": 10, "phase1_per_label": 2, "tf_validation_size": 20}

TUNE = """
import json, sys
from fedbench.study.runner import run_simulations
from fedbench.studies import mime_fashion as study

b, root = study.BUDGETS["fixture"], sys.argv[1]


def run(jobs):
    return dict(zip(jobs, run_simulations([study.simulation(m, lr, s, b, root, "tuning") for m, lr, s in jobs], 1)))


selections, _ = study.tune(run, b)
print(json.dumps({m: sel.record(6) for m, sel in selections.items()}))
"""


@pytest.fixture(scope="module")
def real_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("selection_kernel_paths")
    raw = root / "raw"
    raw.mkdir()
    for name, data in fixtures.mnist_like().items():
        (raw / name).write_bytes(data)
    stages.prepare_dataset("fashion_mnist_fedproxvr", root, raw=raw, verify=False, variant_params=FIXTURE_PARAMS)
    return root / "real"


def _tune(real_root: Path, settings: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_VARS} | settings
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", TUNE, str(real_root)], env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# Not marked `numerics`: it sets the three kernel paths itself, so Makefile's test-kernel-paths would only rerun the
# same three subprocesses twice more (no path it does not already cover). It takes 13.6 s here at load 2.7 (12.6 s of
# CPU; 32 s of wall time at load 5 beside another study's run), once, in the whole suite.
@pytest.mark.slow
def test_tuning_chooses_the_same_steps_on_every_cpu_kernel_path(real_root):
    chosen = {name: _tune(real_root, settings) for name, settings in PATHS.items()}
    first = chosen["default"]
    assert set(first) == {"Mime", "MimeLite", "FedAvgM"}
    for name, sel in chosen.items():
        assert {m: (s["step"], s["grid"], s["interior"]) for m, s in sel.items()} == {
            m: (s["step"], s["grid"], s["interior"]) for m, s in first.items()}, name

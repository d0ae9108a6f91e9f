"""The prepared GPU check (fedbench/bench/gpucheck.py) on a machine without CUDA, as CI runs it: its CPU part
within a small budget, in a Python where the packages the GPU machines lack cannot be imported (MLflow, DVC,
pytest, pandas, PyYAML, matplotlib, SciPy, tqdm, pydot): the files it writes, and that it imported none of them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
ABSENT = ("mlflow", "dvc", "pytest", "pandas", "yaml", "matplotlib", "scipy", "tqdm", "pydot")

# A meta-path finder that makes ABSENT look uninstalled to `import` (ModuleNotFoundError) while letting
# importlib.util.find_spec probes (torch's optional-library checks) see a spec that is never loaded.
RUNNER = f"""
import importlib.abc, importlib.machinery, json, sys
ABSENT = {ABSENT!r}
class Absent(importlib.abc.Loader):
    def create_module(self, spec):
        raise ModuleNotFoundError(f"No module named {{spec.name!r}} (absent on the GPU machine)", name=spec.name)
    def exec_module(self, module):
        pass
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        return importlib.machinery.ModuleSpec(name, Absent()) if name.split(".")[0] in ABSENT else None
sys.meta_path.insert(0, Finder())
from fedbench.bench.gpucheck import main
rc = main(sys.argv[1:])
print("LOADED " + json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ABSENT and sys.modules[m] is not None)))
sys.exit(rc)
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU part is what CI runs; on a GPU run the command itself")
def test_gpucheck_cpu_part_writes_its_files_and_imports_no_mlflow_or_dvc(tmp_path):
    out = tmp_path / "check"
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(out), "--budget-s", "20"], cwd=ROOT, capture_output=True,
                          check=False, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.rsplit("LOADED ", 1)[1])
    assert loaded == []
    files = sorted(p.name for p in out.iterdir())
    assert {"bench.json", "gpu-tests.txt", "gpucheck.json", "summary.md"} <= set(files)  # at most 8, none elsewhere
    assert set(files) <= {"bench.json", "gpu-tests.txt", "gpucheck.json", "summary.md", "paper-cost.json",
                          "paper-cost.md"}
    result = json.loads((out / "gpucheck.json").read_text())
    assert result["environment"]["device"] == "cpu" and result["budget_s"] == 20
    passed = [c for c in result["checks"] if c["passed"]]
    assert passed and len(passed) == len(result["checks"])
    assert {c["part"] for c in passed} >= {"algorithms"}
    assert any(s["part"] == "paper_cost" for s in result["skipped"]) or "paper_cost" in result
    lines = (out / "gpu-tests.txt").read_text().splitlines()
    assert len(lines) == len(result["checks"]) + len(result["skipped"])
    assert (out / "summary.md").read_text().startswith("# fedbench GPU check: all checks passed")
    bench = json.loads((out / "bench.json").read_text())
    assert bench["device"] == "cpu" and "cases" in bench["throughput"]


def test_gpucheck_rejects_unknown_parts(tmp_path):
    from fedbench.bench.gpucheck import main

    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "x"), "--parts", "algorithms,speed"])
    assert exc.value.code == 2
    assert not (tmp_path / "x").exists()  # nothing written

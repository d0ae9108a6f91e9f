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


@pytest.mark.slow
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
                          "paper-cost.md", "syncs.md"}
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


def test_gpucheck_dry_cpu_part_prints_the_targets_with_not_measured_rows(tmp_path, capsys):
    from fedbench.bench.gpucheck import main

    assert main([str(tmp_path / "out"), "--parts", "stacking,workload,capture", "--budget-s", "60"]) == 0
    result = json.loads((tmp_path / "out" / "gpucheck.json").read_text())
    rows = {r["target"]: r for r in result["targets"]}
    assert rows["CPU: no number changes (stacked = alone bit for bit)"] == {
        "target": "CPU: no number changes (stacked = alone bit for bit)", "measured": "equal", "met": True,
        "figure": False}
    unmeasured = [t for t, r in rows.items() if r["met"] is None]
    assert len(unmeasured) == len(rows) - 1 and all(rows[t]["measured"] == "not measured" for t in unmeasured)
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Targets (issue 31; reported, not asserted)" in summary
    assert "| FedProx's 140-run synthetic study, stacked <= 60 s (cpu) | not measured | not measured |" in summary
    assert {s["part"] for s in result["skipped"]} == {"workload", "capture"}
    assert "targets (issue 31):" in capsys.readouterr().out


def test_gpucheck_syncs_part_checks_every_algorithm_round_waits_once_per_stack(tmp_path):
    from fedbench.bench.gpucheck import main
    from fedbench.bench.host_syncs import PER_RUN
    from tests.algorithms.cases import CASES

    assert main([str(tmp_path / "out"), "--parts", "syncs", "--budget-s", "600"]) == 0
    result = json.loads((tmp_path / "out" / "gpucheck.json").read_text())
    checks = {c["name"]: c for c in result["checks"]}
    assert set(checks) == set(CASES) - {"sequential_sgd"} and all(c["passed"] for c in checks.values())
    assert checks["fedprox"]["detail"] == "waits a round: 0 alone, 0 with 3 runs stacked, 0 a further run (declared 0)"
    assert [r["per_run"] for r in result["syncs"]] == [PER_RUN.get(r["algorithm"], 0) for r in result["syncs"]]
    table = (tmp_path / "out" / "syncs.md").read_text().splitlines()
    assert "| fedprox | 0 | 0 | 0 | - |" in table and len([t for t in table if t.startswith("| ")]) == 1 + len(checks)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU part is what CI runs; on a GPU run the command itself")
def test_gpucheck_proxies_part_prints_each_item_beside_its_cpu_proxy(tmp_path):
    """Issue 49's items (fedbench.bench.gpu_proxies) in the check's CPU part: the round of a small stack and one
    evaluation of 3 CNN models in one pass against a pass a model, each with its CPU proxy; the synthetic study is
    CUDA's alone."""
    from fedbench.bench.gpucheck import main

    assert main([str(tmp_path / "out"), "--parts", "proxies", "--budget-s", "60"]) == 0
    result = json.loads((tmp_path / "out" / "gpucheck.json").read_text())
    checks = {c["name"]: c for c in result["checks"]}
    assert set(checks) == {"round_fixed", "stacked_evaluation"} and all(c["passed"] for c in checks.values())
    assert checks["round_fixed"]["detail"].startswith("round of a 3-run stack: ")
    assert checks["round_fixed"]["detail"].endswith("| CPU proxy: 19 ATen ops outside the local steps a round, "
                                                    "0 host waits a round")
    assert checks["stacked_evaluation"]["detail"].endswith("| CPU proxy: passes 2 against 6")
    assert result["proxies"]["stacked_evaluation"]["max_abs_loss_difference"] <= 1e-4
    assert [s["name"] for s in result["skipped"]] == ["cnn_step", "synthetic_study"]
    rows = {r["target"].split(" (")[0]: r for r in result["targets"]}
    assert rows["GPU target: a round of a 30-run stack <= 1 ms"]["met"] is None  # a CUDA figure


def test_targets_from_the_committed_h200_check():
    """The targets as the committed H200 measurements give them (reports/bench-gpu/, 2026-11-28): the check of
    51c981a (gpucheck.json), its workload part (workload.json) and the paper cost with each unit's stacks timed
    (paper-cost.json, newer than the check's own paper cost). None met but the CPU's. The profile is each study's
    one cost figure (fedbench.study.costs.study_cost: its drawn schedule priced on the check's unit costs), the total
    their sum over the paper profile."""
    from fedbench.bench.gpucheck import targets
    from fedbench.study.costs import study_cost
    from fedbench.study.paper_profile import PAPER_CLAIM_STUDIES, PROFILES, study_scales

    gpu = ROOT / "reports/bench-gpu"
    result = json.loads((gpu / "gpucheck.json").read_text())
    result["workload"] = json.loads((gpu / "workload.json").read_text())
    result["paper_cost"] = json.loads((gpu / "paper-cost.json").read_text())
    rows = {r["target"].split(" (NVIDIA")[0]: r for r in targets(result)}
    scales = study_scales(5)
    names = PROFILES["paper"] + list(PAPER_CLAIM_STUDIES)
    assert set(names) <= set(result["paper_cost"]["studies"])
    per_study = {n: study_cost(n, scales[n], "cuda", gpu)["hours"] for n in names}
    for n in names:
        assert rows[f"paper profile: {n}, drawn schedule, GPU-h"]["measured"] == f"{per_study[n]:,.2f}"
    total = rows["paper profile as the study runner runs it <= 8 GPU-h"]
    assert total["measured"] == f"{sum(per_study.values()):,.1f} GPU-h" and total["met"] is False
    assert rows["FedProx's 140-run synthetic study, stacked <= 60 s"]["measured"] == "667 s"
    assert rows["CIFAR-CNN study stacked at R = 15 >= 6x one by one"]["measured"] == "1.4x"
    assert rows["Shakespeare LSTM, cohort 100 >= 0.3 of centralized"]["measured"] == "0.13 (rnn)"
    assert rows["a round's fixed cost <= 1 ms, small model (mclr units' round_s)"]["measured"].endswith(
        " ms (largest of 10)")
    assert [r["met"] for r in rows.values() if not r["figure"]] == [False] * 5 + [None, None] + [True]
    assert rows["GPU target: a round of a 30-run stack <= 1 ms"]["measured"] == "not measured"  # the check of 51c981a
    # had no proxies part


def test_gpucheck_module_imports_no_mlflow_or_dvc():
    code = ("import sys, fedbench.bench.gpucheck as g; g.targets; "
            "print(sorted(m for m in ('mlflow', 'dvc') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert proc.stdout.strip() == "[]"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU part is what CI runs; on a GPU run the command itself")
def test_gpucheck_precision_part_measures_each_declared_mode_against_its_tolerance(tmp_path):
    """Issue 53, item 5 (fedbench.bench.precision_check): without CUDA, mclr alone: tf32 is fp32 bit for bit on the
    CPU, bf16 another computation within its declared tolerance; each printed on one line of the check."""
    from fedbench.bench.gpucheck import main
    from fedbench.engine.precision import TOLERANCE

    assert main([str(tmp_path / "out"), "--parts", "precision", "--budget-s", "60"]) == 0
    result = json.loads((tmp_path / "out" / "gpucheck.json").read_text())
    assert [(c["part"], c["name"], c["passed"]) for c in result["checks"]] == [("precision", "mclr", True)]
    (found,) = result["precision"]
    assert found["modes"]["tf32"]["bit_identical"] and found["modes"]["tf32"]["max_rel"] == 0.0
    bf16 = found["modes"]["bf16"]
    assert not bf16["bit_identical"] and 0 < bf16["max_rel"] <= TOLERANCE["bf16"] and bf16["within"]
    assert "mclr bf16: " in result["checks"][0]["detail"] and "(declared tolerance 0.05: within)" in result["checks"][0]["detail"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU part is what CI runs; on a GPU run the command itself")
def test_gpucheck_fused_part_lists_each_size_it_would_measure_on_a_card(tmp_path):
    """Issue 53, item 6: without CUDA the fused part measures nothing and says so, family by family, with its sizes
    (its mclr size is run in the interpreter by tests/engine/test_fused_mclr.py)."""
    from fedbench.bench.gpucheck import FUSED_ROWS, main

    assert main([str(tmp_path / "out"), "--parts", "fused", "--budget-s", "60"]) == 0
    result = json.loads((tmp_path / "out" / "gpucheck.json").read_text())
    assert result["checks"] == [] and result["fused"] == []
    assert [s["name"] for s in result["skipped"]] == list(FUSED_ROWS) == ["mclr", "cifar_cnn", "fedprox_shakespeare_lstm"]
    assert result["skipped"][1]["reason"].startswith("no CUDA: at 1, 100, 3000 rows on a card")

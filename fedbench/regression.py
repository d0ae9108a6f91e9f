"""CI regression check: run a quick profile of the main pipeline and compare its key numbers with the
reference values committed in tests/regression/reference.json (written by ``fedbench regress --update``,
never by hand). A number outside its tolerance fails with a message naming it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from fedbench.config import QUICK_PROFILE as PROFILE
from fedbench.config import load_config
from fedbench.pipeline import ensure_dataset
from fedbench.study.experiments import study_cells, train

HERE = Path(__file__).resolve().parent.parent / "tests" / "regression"
REFERENCE = HERE / "reference.json"
# Tolerances, absolute, per metric, set from measured cross-machine drift. fedbench is bit-identical on one
# machine (same code, same torch build: checked by rerunning), but not across CPUs: torch picks its vectorized
# kernels (ATen's CPU capability: AVX2 or AVX512) and MKL its code path by the CPU, and sums in a different
# order. Measured on this profile (2 CPU cores, AMD EPYC with AVX512; the same seed under ATen AVX512 vs
# ATEN_CPU_CAPABILITY=avx2, MKL_ENABLE_INSTRUCTIONS=SSE4_2, MKL_CBWR=COMPATIBLE; torch threads 1 vs 2 changed
# nothing), the largest moves were: training loss 1.2e-6, round-1 loss 3.3e-7, dissimilarity (about 100-160
# here) 2.5e-5, test accuracy 0; over the main job's 40 rounds, loss 2.2e-6 and dissimilarity 3.9e-5. The
# committed outputs of an AVX2 machine are reproduced bit for bit here under ATEN_CPU_CAPABILITY=avx2.
# A tolerance is about 50 to 100 times the largest drift (room for CPUs and MKL builds not measured), and for
# accuracy two test samples of the profile's 1254 (a drift can flip a sample that sits on a class boundary).
# A changed algorithm, sampling draw or evaluation moves these numbers by 1e-2 or more, far outside.
TOLERANCES = {"final_train_loss": 1e-4, "loss_round_1": 1e-4, "final_dissimilarity": 2e-3,
              "final_test_accuracy": 2e-3}


def key_numbers(params: str | Path = "params.yaml", root: Path | None = None) -> dict[str, float]:
    """The quick profile's key numbers. ``root``: the folder its data (``root/data``) and runs (``root/results``: the
    main job's store and records, fedbench.study.experiments) go in, a temporary one by default; runs already
    finished there are read back by their fingerprint, not run again, so that the tests compute the profile once a
    session (tests/conftest.py)."""
    if root is None:
        with tempfile.TemporaryDirectory(prefix="fedbench-regress-") as tmp:
            return key_numbers(params, Path(tmp))
    cfg = load_config(params, yaml.safe_load(PROFILE.read_text()))
    out: dict[str, float] = {}
    data_root, results_root = Path(root) / "data", Path(root) / "results"
    for ds in cfg.data.datasets:
        ensure_dataset(cfg, ds, root=data_root)
    for ds, variant, f in study_cells(cfg):  # each cell once, even if two studies list it
        for s in train(cfg, ds, variant, f, data_root=data_root, results_root=results_root, progress=False):
            key = f"{ds}/{variant}/stragglers={f:g}/seed={s['params']['seed']}"
            out[f"{key}/final_train_loss"] = s["final"]["train/loss"]
            out[f"{key}/final_test_accuracy"] = s["final"]["test/accuracy"]
            out[f"{key}/final_dissimilarity"] = s["final"]["train/dissimilarity"]
            out[f"{key}/loss_round_1"] = s["history"][1]["train/loss"]
    return out


def update(params: str | Path = "params.yaml") -> Path:
    values = key_numbers(params)
    REFERENCE.write_text(json.dumps({"profile": str(PROFILE.name), "values": values}, indent=2, sort_keys=True)
                         + "\n")
    print(f"wrote {len(values)} reference values to {REFERENCE}")
    return REFERENCE


def compare(values: dict[str, float], reference: dict[str, Any],
            tolerances: dict[str, float] = TOLERANCES) -> list[str]:
    problems = []
    ref = reference["values"]
    for key in sorted(set(ref) | set(values)):
        if key not in values:
            problems.append(f"{key}: in the reference but not produced by the quick profile")
            continue
        if key not in ref:
            problems.append(f"{key}: produced but missing from the reference (run `fedbench regress --update`)")
            continue
        tol = tolerances[key.rsplit("/", 1)[1]]
        a, b = values[key], ref[key]
        if a is None or b is None or abs(a - b) > tol:
            problems.append(f"{key}: {a} vs reference {b} (tolerance ±{tol})")
    return problems


def check(params: str | Path = "params.yaml", root: Path | None = None) -> list[str]:
    """What moved out of its tolerance (one line each), or what is missing; ``root`` as in :func:`key_numbers`."""
    if not REFERENCE.exists():
        return [f"{REFERENCE} is missing: run `fedbench regress --update`"]
    return compare(key_numbers(params, root), json.loads(REFERENCE.read_text()))

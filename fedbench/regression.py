"""CI regression check: run a quick profile of the main pipeline and compare its key numbers with the
reference values committed in tests/regression/reference.json (written by ``fedbench regress --update``,
never by hand). A number outside its tolerance fails with a message naming it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from fedbench.config import load_config
from fedbench.pipeline import generate, train
from fedbench.report.runs import study_cells

HERE = Path(__file__).resolve().parent.parent / "tests" / "regression"
PROFILE = HERE / "quick_profile.yaml"
REFERENCE = HERE / "reference.json"
# Tolerances: absolute, per metric. Loose enough for CPU/GPU and BLAS differences, tight enough to catch
# a changed algorithm, sampling draw or evaluation (those move these numbers by 1e-2 or more).
TOLERANCES = {"final_train_loss": 2e-3, "final_test_accuracy": 2e-3, "final_dissimilarity": 2e-2,
              "loss_round_1": 2e-3}


def key_numbers(params: str | Path = "params.yaml") -> dict[str, float]:
    cfg = load_config(params, yaml.safe_load(PROFILE.read_text()))
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="fedbench-regress-") as tmp:
        data_root, runs_root = Path(tmp) / "data", Path(tmp) / "runs"
        for ds in cfg.data.datasets:
            generate(cfg, ds, root=data_root)
        for ds, variant, f in study_cells(cfg):  # each cell once, even if two studies list it
            for s in train(cfg, "regression", ds, variant, f, data_root=data_root, runs_root=runs_root,
                           track=False, progress=False):
                key = f"{ds}/{variant}/stragglers={f:g}/seed={s['params']['seed']}"
                out[f"{key}/final_train_loss"] = s["final"]["train/loss"]
                out[f"{key}/final_test_accuracy"] = s["final"]["test/accuracy"]
                out[f"{key}/final_dissimilarity"] = s["final"]["train/dissimilarity"]
                out[f"{key}/loss_round_1"] = s["history"][1]["train/loss"]
    return out


def update(params: str | Path = "params.yaml") -> Path:
    values = key_numbers(params)
    REFERENCE.write_text(json.dumps({"profile": str(PROFILE.name), "tolerances": TOLERANCES, "values": values},
                                    indent=2, sort_keys=True) + "\n")
    print(f"wrote {len(values)} reference values to {REFERENCE}")
    return REFERENCE


def compare(values: dict[str, float], reference: dict[str, Any]) -> list[str]:
    problems = []
    ref = reference["values"]
    for key in sorted(set(ref) | set(values)):
        if key not in values:
            problems.append(f"{key}: in the reference but not produced by the quick profile")
            continue
        if key not in ref:
            problems.append(f"{key}: produced but missing from the reference (run `fedbench regress --update`)")
            continue
        tol = reference["tolerances"][key.rsplit("/", 1)[1]]
        a, b = values[key], ref[key]
        if a is None or b is None or abs(a - b) > tol:
            problems.append(f"{key}: {a} vs reference {b} (tolerance ±{tol})")
    return problems


def check(params: str | Path = "params.yaml") -> list[str]:
    if not REFERENCE.exists():
        return [f"{REFERENCE} is missing: run `fedbench regress --update`"]
    return compare(key_numbers(params), json.loads(REFERENCE.read_text()))

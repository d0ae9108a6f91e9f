"""Run one experiment (dataset, algorithm variant, straggler fraction, seed) and write its outputs.

A run's folder holds ``history.csv`` (one row per round), ``per_device.csv`` (final per-device metrics)
and ``summary.json`` (written last: a folder without it is incomplete). Runs checkpoint every few rounds
into ``<folder>.checkpoint.pt`` and pick up from there when restarted with the same settings; a finished
run whose fingerprint matches is not run again.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

import fedbench
from fedbench.algorithms import build_algorithm
from fedbench.config import Config
from fedbench.data.format import atomic_folder, load_dataset, read_meta
from fedbench.data.registry import dataset_dir
from fedbench.engine.metrics import reporting_round
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import build_model

SUMMARY = "summary.json"


def run_folder(root: str | Path, dataset: str, variant: str, stragglers: float, seed: int) -> Path:
    return Path(root) / dataset / variant / f"stragglers-{float(stragglers)}" / f"seed-{seed}"


def run_params(cfg: Config, dataset: str, variant: str, stragglers: float, seed: int) -> dict[str, Any]:
    """Every setting that determines a run's numbers, flat, as logged to MLflow."""
    algo = cfg.algorithms[variant]
    t = cfg.train
    return {
        "dataset": dataset, "algorithm": algo.name, "variant": variant, **{f"algo.{k}": v for k, v in algo.hyper.items()},
        "straggler_fraction": stragglers, "seed": seed, "model": t.model, "rounds": t.rounds,
        "clients_per_round": t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size,
        "lr": t.lr, "sampling": t.sampling, "straggler_epochs": t.straggler_epochs,
        "data.seed": cfg.data.seed, "data.num_devices": cfg.data.num_devices,
        "data.train_fraction": cfg.data.train_fraction,
    }


# The source that determines a run's numbers: a change here makes finished runs stale.
CODE_PATHS = ("engine", "algorithms", "models", "availability", "data/format.py", "data/transforms.py", "runner.py",
              "seeding.py", "ops.py", "quantile.py", "optimizers.py", "proximal.py")


def code_hash() -> str:
    root = Path(fedbench.__file__).resolve().parent
    h = hashlib.sha256()
    for rel in CODE_PATHS:
        path = root / rel
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            if f.exists():
                h.update(str(f.relative_to(root)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def fingerprint(params: dict[str, Any], dataset_hash: str) -> str:
    """Identity of a run's numbers: its settings, its data and the code that computes them."""
    blob = json.dumps({"params": params, "dataset": dataset_hash, "code": code_hash()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_run(folder: Path, fingerprint: str | None = None) -> dict[str, Any] | None:
    """The finished run in ``folder``: its summary with the ``history`` rows added, as :func:`run_one` returns
    it. None if the folder holds no finished run, or (given ``fingerprint``) one with another fingerprint."""
    path = folder / SUMMARY
    if not path.exists():
        return None
    summary = json.loads(path.read_text())
    if fingerprint is not None and summary.get("fingerprint") != fingerprint:
        return None
    summary["history"] = pd.read_csv(folder / "history.csv").to_dict("records")
    return summary


def run_one(cfg: Config, data_root: str | Path, out_root: str | Path, dataset: str, variant: str,
            stragglers: float, seed: int, progress: bool = True, position: int = 0) -> dict[str, Any]:
    """Run (or reuse) one experiment and return its summary (with ``history`` rows)."""
    torch.set_num_threads(1)
    data_dir = dataset_dir(data_root, dataset)  # data/generated/<name>, or data/real/<name> for a real variant
    ds_hash = read_meta(data_dir)["content_hash"]
    params = run_params(cfg, dataset, variant, stragglers, seed)
    fp = fingerprint(params, ds_hash)
    folder = run_folder(out_root, dataset, variant, stragglers, seed)
    summary = load_run(folder, fp)
    if summary is not None:
        summary["reused"] = True
        return summary

    ds = load_dataset(data_dir)
    model = build_model(cfg.train.model, ds.feature_shape, ds.num_classes)
    algo_cfg = cfg.algorithms[variant]
    algorithm = build_algorithm(algo_cfg.name, cfg.train.lr, **algo_cfg.hyper)
    t = cfg.train
    sim = SimulationConfig(
        rounds=t.rounds, clients_per_round=t.clients_per_round, local_epochs=t.local_epochs,
        batch_size=t.batch_size, straggler_fraction=stragglers, sampling=t.sampling,
        straggler_epochs=t.straggler_epochs, seed=seed, device=t.device, eval_every=t.eval_every,
        checkpoint_every=t.checkpoint_every,
    )
    folder.parent.mkdir(parents=True, exist_ok=True)
    checkpoint = folder.parent / f".{folder.name}.{fp}.checkpoint.pt"
    callbacks = (_Progress(f"{dataset} {variant} s={stragglers:g} seed={seed}", t.rounds, position),) if progress else ()
    result = simulate(sim, ds, model, algorithm, callbacks=callbacks, checkpoint=checkpoint)
    for cb in callbacks:
        cb.close()

    history = pd.DataFrame(result.history)
    losses = history["train/loss"].to_numpy()
    at, reason = reporting_round(losses)
    if reason == "diverged":  # the model at a non-finite loss predicts nothing: read the last finite round
        at = max(0, at - 1)
    per_device = pd.DataFrame({
        "client_id": ds.client_ids,
        "train_samples": ds.train.sizes, "test_samples": ds.test.sizes,
        "train_loss": result.final.device_train_loss, "test_accuracy": result.final.device_test_accuracy,
    })
    summary = {
        "fingerprint": fp, "params": params, "dataset_hash": ds_hash, "device": result.device,
        "diverged": result.diverged, "param_digest": result.param_digest,
        "final": {k: _num(v) for k, v in result.final.scalars().items()},
        "reporting_round": int(at), "reporting_reason": reason,
        "reporting_test_accuracy": _num(history["test/accuracy"].iloc[at]),
        "best_test_accuracy": _num(history["test/accuracy"].max()),
        "wall_time_s": float(history["wall_time_s"].sum()),
        "versions": versions(), "git_commit": git_commit(),
    }
    _write_run(folder, history, per_device, summary)
    summary["history"] = history.to_dict("records")
    summary["reused"] = False
    return summary


def _num(v: Any) -> float | None:
    v = float(v)
    return v if np.isfinite(v) else None


def git_commit() -> str:
    """HEAD of the checkout the code runs from, with '-dirty' if tracked files differ."""
    import subprocess

    try:
        run = dict(capture_output=True, text=True, check=True, cwd=Path(fedbench.__file__).resolve().parent)
        sha = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], **run).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> dict[str, str]:
    return {"fedbench": fedbench.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "pandas": pd.__version__, "python": sys.version.split()[0]}


def _write_run(folder: Path, history: pd.DataFrame, per_device: pd.DataFrame, summary: dict) -> None:
    with atomic_folder(folder) as tmp:
        history.to_csv(tmp / "history.csv", index=False)
        per_device.to_csv(tmp / "per_device.csv", index=False)
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


class _Progress:
    """A tqdm bar per run showing the round and the current training loss and test accuracy."""

    def __init__(self, desc: str, total: int, position: int) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, position=position, leave=False, file=sys.stderr,
                        dynamic_ncols=True, mininterval=1.0)

    def on_round_end(self, round_: int, row: dict[str, float]) -> None:
        self.bar.n = round_ + 1
        self.bar.set_postfix(loss=f"{row['train/loss']:.3f}", acc=f"{row['test/accuracy']:.3f}", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()

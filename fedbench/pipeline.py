"""What the DVC generate and train stages do, as library functions (the stage scripts in pipelines/ only parse
arguments). The study stage is fedbench.studies.run_claim_study, the track stage fedbench.track."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fedbench.config import Config
from fedbench.data.format import save_dataset
from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
from fedbench.engine.simulation import resolve_device
from fedbench.parallel import map_jobs
from fedbench.runner import run_one

DATA_ROOT = Path("data/generated")
RUNS_ROOT = Path("runs")


def generate(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """Generate one synthetic dataset into ``root/name`` (atomically)."""
    alpha, beta, iid = SYNTHETIC_DATASETS[name]
    ds = generate_synthetic(alpha, beta, iid, num_devices=cfg.data.num_devices, seed=cfg.data.seed,
                            train_fraction=cfg.data.train_fraction)
    folder = save_dataset(ds, root / name)
    print(f"{name}: {ds.num_clients} devices, {int(ds.train.sizes.sum())} train / {int(ds.test.sizes.sum())} "
          f"test samples, hash {ds.content_hash[:12]} -> {folder}")
    return folder


def train(cfg: Config, study: str, dataset: str, variant: str, stragglers: float, data_root: Path = DATA_ROOT,
          runs_root: Path = RUNS_ROOT, track: bool = False, progress: bool = True) -> list[dict[str, Any]]:
    """Run every seed of one (dataset, variant, stragglers) cell, in parallel processes, and track them."""
    seeds = list(cfg.train.seeds)
    workers = min(cfg.train.workers, len(seeds))
    if resolve_device(cfg.train.device).type == "cuda":
        workers = 1  # one GPU: runs share it one after another
    args = [(cfg, data_root, runs_root, dataset, variant, stragglers, s, progress, i % workers)
            for i, s in enumerate(seeds)]
    summaries = map_jobs(_run_star, args, workers)  # forked workers on the CPU; a GPU runs them one by one
    for s in summaries:
        p = s["params"]
        took = "reused" if s["reused"] else f"{s['wall_time_s']:.0f}s"
        print(f"{dataset} {variant} stragglers={stragglers:g} seed={p['seed']}: final loss "
              f"{s['final']['train/loss']:.4f}, test accuracy {s['final']['test/accuracy']:.4f} ({took})",
              file=sys.stderr)
    if track:
        from fedbench.track import track_cell

        track_cell(study, dataset, variant, stragglers, summaries, runs_root)
    return summaries


def _run_star(a: tuple) -> dict[str, Any]:
    return run_one(*a[:7], progress=a[7], position=a[8])


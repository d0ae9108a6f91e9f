"""What the DVC generate and train stages do, as library functions (the stage scripts in pipelines/ only parse
arguments). The study stage is fedbench.studies.run_claim_study, the track stage fedbench.track."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from fedbench.config import Config, ConfigError, check_stragglers
from fedbench.data.format import save_dataset
from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
from fedbench.locking import file_lock
from fedbench.parallel import map_jobs
from fedbench.runner import DATA_ROOT, RUNS_ROOT, dataset_meta, run_one

__all__ = ["DATA_ROOT", "RUNS_ROOT", "check_cell", "ensure_dataset", "generate", "train"]


def generate(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """Generate one synthetic dataset into ``root/name`` (atomically)."""
    alpha, beta, iid = SYNTHETIC_DATASETS[name]
    ds = generate_synthetic(alpha, beta, iid, num_devices=cfg.data.num_devices, seed=cfg.data.seed,
                            train_fraction=cfg.data.train_fraction)
    folder = save_dataset(ds, root / name)
    print(f"{name}: {ds.num_clients} devices, {int(ds.train.sizes.sum())} train / {int(ds.test.sizes.sum())} "
          f"test samples, hash {ds.content_hash[:12]} -> {folder}")
    return folder


def ensure_dataset(cfg: Config, name: str, root: Path = DATA_ROOT) -> Path:
    """``root/name``, generated first if it is not there; processes that ask at once generate it once. A real
    variant (data/real/<name>) is built by `fedbench data prepare`, not here."""
    from fedbench.data.registry import VARIANTS, dataset_dir

    if name in VARIANTS:
        folder = dataset_dir(root, name)
        if not (folder / "meta.json").exists():
            raise ConfigError(f"--dataset {name!r} is not built yet; run `fedbench data prepare {name}` (or `dvc repro`)")
        return folder
    folder = Path(root) / name
    with file_lock(Path(root) / f".{name}.lock", what=f"dataset {name}"):
        if not (folder / "meta.json").exists():
            generate(cfg, name, root)
    return folder


def check_cell(cfg: Config, variant: str, stragglers: float, where: str = "--stragglers") -> None:
    """Everything about one (variant, stragglers) cell that can fail before any work: the straggler fraction
    against train, and the algorithm's own checks (those that involve two hyperparameters). Imports torch."""
    from fedbench.algorithms import build_algorithm

    check_stragglers(cfg.train, stragglers, where)
    algo = cfg.algorithms[variant]
    try:
        build_algorithm(algo.name, cfg.train.lr, **algo.hyper)
    except ValueError as exc:
        raise ConfigError(f"algorithms.{variant}: {exc}") from None


def train(cfg: Config, study: str, dataset: str, variant: str, stragglers: float, data_root: Path = DATA_ROOT,
          runs_root: Path = RUNS_ROOT, track: bool = False, progress: bool = True) -> list[dict[str, Any]]:
    """Run every seed of one (dataset, variant, stragglers) cell, in parallel processes. With ``track``, each
    run is logged to MLflow as soon as it finishes, so an interrupted cell keeps what it finished."""
    from fedbench.engine.simulation import resolve_device

    check_cell(cfg, variant, stragglers)
    dataset_meta(cfg, dataset, data_root)  # data made with these settings, or one line saying how to remake it
    seeds = list(cfg.train.seeds)
    workers = min(cfg.train.workers, len(seeds))
    if resolve_device(cfg.train.device).type == "cuda":
        workers = 1  # one GPU: runs share it one after another
    args = [(cfg, data_root, runs_root, dataset, variant, stragglers, s, progress, i % workers)
            for i, s in enumerate(seeds)]
    if track:  # imported before the workers start: logging a finished run then takes a moment, not seconds
        from fedbench.track import track_cell

    def finished(summary: dict[str, Any]) -> None:
        print(_one_line(summary), file=sys.stderr)
        if track:
            track_cell(study, dataset, variant, stragglers, [summary], runs_root)

    return map_jobs(_run_star, args, workers, each=finished)  # forked workers on the CPU; a GPU runs them in turn


def _one_line(s: dict[str, Any]) -> str:
    p = s["params"]
    took = "reused" if s["reused"] else f"{s['wall_time_s']:.0f}s"
    head = f"{p['dataset']} {p['variant']} stragglers={p['straggler_fraction']:g} seed={p['seed']}"
    if s["diverged"]:
        return (f"{head}: DIVERGED at round {s.get('diverged_at_round')}; test accuracy "
                f"{_fmt(s['reporting_test_accuracy'])} at round {s['reporting_round']}, before it ({took})")
    return (f"{head}: final loss {_fmt(s['final']['train/loss'])}, test accuracy "
            f"{_fmt(s['final']['test/accuracy'])} ({took})")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _run_star(a: tuple) -> dict[str, Any]:
    return run_one(*a[:7], progress=a[7], position=a[8])

"""What the DVC stages do, as library functions (the stage scripts in pipelines/ only parse arguments)."""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from fedbench.config import Config
from fedbench.data.format import save_dataset
from fedbench.data.synthetic import SYNTHETIC_DATASETS, generate_synthetic
from fedbench.runner import run_folder, run_one

DATA_ROOT = Path("data/generated")
RUNS_ROOT = Path("runs")

STUDY_EXPERIMENTS = {
    "stragglers": "fedprox-stragglers",
    "heterogeneity": "fedprox-heterogeneity",
}


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
    if cfg.train.device.startswith("cuda") or (cfg.train.device == "auto" and _cuda()):
        workers = 1  # one GPU: runs share it one after another
    args = [(cfg, data_root, runs_root, dataset, variant, stragglers, s, progress, i % max(workers, 1))
            for i, s in enumerate(seeds)]
    if workers > 1:
        # fork: workers inherit the imported modules (no GPU is in use on this path)
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
            summaries = list(pool.map(_run_star, args))
    else:
        summaries = [_run_star(a) for a in args]
    for s in summaries:
        p = s["params"]
        took = "reused" if s["reused"] else f"{s['wall_time_s']:.0f}s"
        print(f"{dataset} {variant} stragglers={stragglers:g} seed={p['seed']}: final loss "
              f"{s['final']['train/loss']:.4f}, test accuracy {s['final']['test/accuracy']:.4f} ({took})",
              file=sys.stderr)
    if track:
        track_cell(study, dataset, variant, stragglers, summaries, runs_root)
    return summaries


def track_cell(study: str, dataset: str, variant: str, stragglers: float, summaries: list[dict[str, Any]],
               runs_root: Path = RUNS_ROOT) -> list[str]:
    """Log one cell's runs to MLflow (each skipped if already logged with the same fingerprint)."""
    from fedbench import tracking
    from fedbench.report.figures import run_curves

    experiment = STUDY_EXPERIMENTS.get(study, study)
    ids = []
    for s in summaries:
        p = s["params"]
        folder = run_folder(runs_root, dataset, variant, stragglers, p["seed"])
        curves = run_curves(s["history"], folder.parent / f".curves-seed-{p['seed']}.png",
                            title=f"{dataset} {variant} stragglers={stragglers:g} seed={p['seed']}")
        name = f"{variant}/{dataset}/stragglers={stragglers:g}/seed={p['seed']}"
        try:
            ids.append(tracking.log_run(experiment, name, s, [folder / "history.csv", folder / "per_device.csv",
                                                               folder / "summary.json", curves]))
        finally:
            curves.unlink(missing_ok=True)
    return ids


def track_all(cfg: Config, out_csv: Path, runs_root: Path = RUNS_ROOT, data_root: Path = DATA_ROOT) -> int:
    """Log every finished run of the configured studies to MLflow; write the run-id index to ``out_csv``."""
    import json

    import pandas as pd

    from fedbench.runner import SUMMARY

    rows = []
    for study_name, study in cfg.studies.items():
        for ds in study.datasets:
            for variant in study.algorithms:
                for f in study.stragglers:
                    summaries = []
                    for seed in cfg.train.seeds:
                        folder = run_folder(runs_root, ds, variant, f, seed)
                        if not (folder / SUMMARY).exists():
                            continue
                        s = json.loads((folder / SUMMARY).read_text())
                        s["history"] = pd.read_csv(folder / "history.csv").to_dict("records")
                        summaries.append(s)
                    ids = track_cell(study_name, ds, variant, f, summaries, runs_root)
                    rows += [{"experiment": STUDY_EXPERIMENTS.get(study_name, study_name), "dataset": ds,
                              "variant": variant, "stragglers": f, "seed": s["params"]["seed"], "mlflow_run_id": i}
                             for s, i in zip(summaries, ids)]
    out_csv = Path(out_csv)
    out_csv.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_csv.with_suffix(".tmp")
    pd.DataFrame(rows).to_csv(tmp, index=False)
    tmp.replace(out_csv)
    print(f"{len(rows)} runs in MLflow (experiments: {', '.join(sorted({r['experiment'] for r in rows}))})")
    return len(rows)


def _run_star(a: tuple) -> dict[str, Any]:
    return run_one(*a[:7], progress=a[7], position=a[8])


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


STUDIES_ROOT = Path("reports/studies")


def run_claim_study(name: str, root: Path = STUDIES_ROOT, track: bool = True) -> list[dict[str, Any]]:
    """Run fedbench.studies.<name> into ``root/name`` (atomically: a temporary folder renamed into place),
    with its claims in ``claims.json``, and log it to MLflow as one run of experiment ``study-<name>``."""
    import importlib
    import json
    import os
    import shutil
    import tempfile
    import time

    module = importlib.import_module(f"fedbench.studies.{name}")
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    os.chmod(tmp, 0o755)
    try:
        t0 = time.perf_counter()
        claims = module.run(tmp)
        seconds = time.perf_counter() - t0
        (tmp / "claims.json").write_text(json.dumps({"study": name, "seconds": round(seconds, 1), "claims": claims},
                                                    indent=2, default=float) + "\n")
        final = root / name
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for c in claims:
        print(f"{c['verdict']:>15}  {c['id']}")
    if track:
        from fedbench import tracking

        tracking.log_study(f"study-{name}", name, claims, sorted(final.iterdir()), seconds)
    return claims

"""Load the finished runs of the parameters in force (the train store, results/train/: fedbench.runner) into tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedbench.config import Config
from fedbench.data.format import read_meta
from fedbench.data.registry import dataset_dir
from fedbench.provenance import TRAIN_RUN_CODE, code_hash
from fedbench.runner import DATA_ROOT, RunKey, find_run  # noqa: F401 (DATA_ROOT: for the report)


def study_cells(cfg: Config) -> list[tuple[str, str, float]]:
    """The main job's (dataset, variant, straggler fraction) cells, each once (Config.cells without the study)."""
    return list(dict.fromkeys(cell[1:] for cell in cfg.cells()))


def load_runs(cfg: Config, results_root: Path, data_root: Path,
              found: list[dict] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(history, summaries) of every complete run of the configured studies whose fingerprint matches
    the current params (stale runs from other settings are ignored); each run's summary (fedbench.runner.summary)
    with its ``name`` is appended to ``found`` where given."""
    histories, summaries = [], []
    hashes: dict[str, str | None] = {}
    code = code_hash(TRAIN_RUN_CODE)
    for ds, variant, f in study_cells(cfg):
        if ds not in hashes:
            try:
                hashes[ds] = read_meta(dataset_dir(data_root, ds))["content_hash"]
            except FileNotFoundError:
                hashes[ds] = None
        for seed in cfg.train.seeds:
            if hashes[ds] is None:
                continue
            summary = find_run(cfg, data_root, results_root, RunKey(ds, variant, float(f), seed), hashes[ds], code)
            if summary is None:
                continue
            if found is not None:
                found.append(summary | {"name": RunKey(ds, variant, float(f), seed).desc})
            h = pd.DataFrame(summary["history"]).assign(dataset=ds, variant=variant, stragglers=f, seed=seed,
                                                        diverged=summary["diverged"])
            histories.append(h)
            summaries.append({"dataset": ds, "variant": variant, "stragglers": f, "seed": seed,
                              "final_loss": summary["final"]["train/loss"],
                              "final_accuracy": summary["final"]["test/accuracy"],
                              "reporting_round": summary["reporting_round"],
                              "reporting_reason": summary["reporting_reason"],
                              "reporting_accuracy": summary["reporting_test_accuracy"],
                              "best_accuracy": summary["best_test_accuracy"],
                              "diverged": summary["diverged"], "wall_time_s": summary["wall_time_s"],
                              "device": summary["device"]})
    hist = pd.concat(histories, ignore_index=True) if histories else pd.DataFrame()
    return hist, pd.DataFrame(summaries)

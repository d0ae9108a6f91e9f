"""The main job's runs as curves, and what every FedProx claim judged on them shares: its entry (statement and rule
from the declaration, fedbench.studies.fedprox_main_job; scale, seeds and fidelity from params.yaml), the runs a claim
lacks, and the per-seed values it shows.

The claims themselves are judged in fedbench.studies.fedprox_main_job_claims (Figures 1 and 7: stragglers and mu) and
fedbench.studies.fedprox_main_job_heterogeneity (Figures 2 and 5: heterogeneity and IID data); the real-data FedProx
claims (fedbench.studies.real_claims, fedbench.studies.fedprox_partial_work) read their runs with the same Curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedbench.config import Config
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import fidelity
from fedbench.claims.entry import not_run
from fedbench.studies.fedprox_main_job import DECLARATION, PAPER_ROUNDS


STUDY = "main job"
REGISTERED_AFTER_RUNS = ("the runs were computed before this rule was registered (the rule was written from the "
                         "paper's text without reading our values)")
LOSS_READINGS = ("tail", "final", "best")
ACCURACY_READINGS = ("tail", "paper", "final", "best")
FIG1, FIG2, FIG5 = ("figures/fig1_stragglers_synthetic_1_1.png", "figures/fig2_heterogeneity.png",
                    "figures/fig5_iid_stragglers.png")


def common_deviations(cfg: Config) -> list[str]:
    """The main job's departures from the paper's setup, the ones that matter most first."""
    t = cfg.train
    out = []
    if t.rounds < PAPER_ROUNDS:
        out.append(f"{t.rounds} of the paper's {PAPER_ROUNDS} rounds per run (the offline default fits 2 CPU cores; "
                   f"`dvc exp run -S train.rounds={PAPER_ROUNDS}` runs the paper's budget): curves still falling at "
                   "the end are read early")
    out += [
        (f"data: our seeded draw (data.seed={cfg.data.seed}) of the authors' generator law, not their committed JSON "
        "files (their generators set no seed); the four synthetic sets use common random numbers: the same device "
        "sizes and standard-normal draws, scaled by alpha and beta, so they differ only in alpha and beta"),
    ]
    if t.straggler_epochs == "authors_code":
        out.append("stragglers run U{1..E-1} epochs as in the authors' code (the paper says uniform in [1, E])")
    out += ["train/test split 90/10 as in the authors' code (the paper says 80/20)",
            f"{len(t.seeds)} training seeds (selection, stragglers, minibatches, init) where the paper shows one run"]
    return out


def scale(cfg: Config, datasets: list[str]) -> dict[str, Any]:
    t = cfg.train
    return {"datasets": datasets, "devices": cfg.data.num_devices, "rounds": t.rounds,
            "clients_per_round": t.clients_per_round, "local_epochs": t.local_epochs, "batch_size": t.batch_size,
            "lr": t.lr, "sampling": t.sampling, "model": t.model}


class Curves:
    """Per-run curves of the main job: ``loss``, ``accuracy`` and ``dissimilarity`` of (dataset, variant,
    stragglers, seed), from the history table."""

    def __init__(self, hist: pd.DataFrame) -> None:
        self.frame = hist
        self.runs: dict[tuple[str, str, float, int], pd.DataFrame] = {}
        if len(hist):
            for key, h in hist.groupby(["dataset", "variant", "stragglers", "seed"], sort=False):
                self.runs[(key[0], key[1], float(key[2]), int(key[3]))] = h.sort_values("round")

    def has(self, ds: str, variant: str, f: float, seed: int) -> bool:
        return (ds, variant, float(f), int(seed)) in self.runs

    def series(self, ds: str, variant: str, f: float, seed: int, metric: str) -> np.ndarray:
        h = self.runs[(ds, variant, float(f), int(seed))]
        return h[metric].to_numpy(dtype=float) if metric in h else np.full(len(h), np.nan)


def missing_runs(curves: Curves, cells: list[tuple[str, str, float]], seeds: Sequence[int]) -> list[str]:
    out = []
    for ds, v, f in cells:
        n = sum(curves.has(ds, v, f, s) for s in seeds)
        if n < len(seeds):
            out.append(f"{v} on {ds} at {int(round(f * 100))}% stragglers ({n}/{len(seeds)} seeds)")
    return out


def entry(cfg: Config, cid: str, datasets: list[str], deviations: list[str], figure: dict[str, str],
          **rule_fields: Any) -> dict[str, Any]:
    """Claim ``cid``'s entry with verdict not-run (the judging fills it in): its statement and rule from the
    declaration (fedbench.studies.fedprox_main_job; ``rule_fields`` fill the rule's config-dependent fields), its
    scale, seeds and fidelity from ``cfg``."""
    t = cfg.train
    return DECLARATION.entry(cid, rule_fields or None, scale=scale(cfg, datasets),
                             deviations=deviations + common_deviations(cfg), figure=figure,
                             fidelity=fidelity("paper", t.rounds, PAPER_ROUNDS, len(t.seeds)), rounds_run=t.rounds,
                             training_seeds=list(t.seeds), data_seeds=[cfg.data.seed])


def not_run_for(e: dict[str, Any], missing: list[str]) -> dict[str, Any]:
    return not_run(e, "missing runs: " + "; ".join(missing), "running the missing runs (dvc repro)")


def mean_dissimilarity(series: np.ndarray, rounds: int, budget: float, reading: str) -> float:
    from fedbench.claims.readings import cut_round

    v = series[: cut_round(rounds, budget) + 1]
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan")
    return float(v.mean()) if reading == "mean" else float(v[-1])


def per_seed(values: list[float]) -> list[float | str]:
    return [round(float(v), 4) if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in values]


def reading_effect(result: dict[str, Any], reading: str) -> str:
    for cell in result["sensitivity"]:
        if cell["reading"] == reading and cell["budget"] == 1.0:
            return f"{fmt_effect(cell)} ({cell['verdict']})"
    return "n/a"

"""The main job's runs as curves, and what every FedProx claim judged on them shares: its datasets and cases, its
entry's fields (scale, deviations, seeds and fidelity from params.yaml; its statement and rule are the declaration's,
fedbench.studies.fedprox_main_job), the runs a claim lacks, and the per-seed values it shows.

The claims themselves are judged in fedbench.studies.fedprox_main_job_claims (Figures 1 and 7: stragglers and mu) and
fedbench.studies.fedprox_main_job_heterogeneity (Figures 2 and 5: heterogeneity and IID data); the real-data FedProx
claims (fedbench.studies.real_claims, fedbench.studies.fedprox_partial_work) read their runs with the same Curves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.config import Config
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import fidelity

if TYPE_CHECKING:  # annotations only: the study's declaration imports no pandas
    import pandas as pd

PAPER_ROUNDS = 200  # FedProx's synthetic runs (FP run_fedavg.sh / run_fedprox.sh: num_rounds = 200)
HETERO = ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1")
TITLES = {"synthetic_iid": "Synthetic-IID", "synthetic_0_0": "Synthetic(0,0)",
          "synthetic_0p5_0p5": "Synthetic(0.5,0.5)", "synthetic_1_1": "Synthetic(1,1)"}
# Figures 6 and 7's comparisons of mu > 0 with mu = 0 that the main job runs: (dataset, stragglers, the mu = 0 arm).
# At 0% stragglers FedProx(mu=0) is FedAvg (Figure 1's caption), and the heterogeneity study runs FedAvg only
MU_CASES = (("synthetic_iid", 0.0, "fedavg"), ("synthetic_0_0", 0.0, "fedavg"), ("synthetic_0p5_0p5", 0.0, "fedavg"),
            ("synthetic_1_1", 0.0, "fedavg"), ("synthetic_1_1", 0.5, "fedprox_mu0"),
            ("synthetic_1_1", 0.9, "fedprox_mu0"))
MU_CASE_LABELS = tuple(f"{TITLES[d]} at {int(f * 100)}%" for d, f, _ in MU_CASES)

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


def entry_fields(cfg: Config, datasets: list[str], deviations: list[str], figure: dict[str, str]) -> dict[str, Any]:
    """A main-job claim's entry fields from ``cfg`` (fedbench.study.contract.Measurement.entry): its scale, its own
    ``deviations`` before the job's, its ``figure``, seeds and fidelity (its statement and rule are the
    declaration's)."""
    t = cfg.train
    return {"scale": scale(cfg, datasets), "deviations": deviations + common_deviations(cfg), "figure": figure,
            "fidelity": fidelity("paper", t.rounds, PAPER_ROUNDS, len(t.seeds)), "rounds_run": t.rounds,
            "training_seeds": list(t.seeds), "data_seeds": [cfg.data.seed]}


def missing_why(missing: list[str]) -> tuple[str, str]:
    """Why a claim whose ``missing`` runs are not there is not run, and what would run it (Measurement.not_run)."""
    return "missing runs: " + "; ".join(missing), "running the missing runs (dvc repro)"


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

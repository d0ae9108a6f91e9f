"""The claim entries of a confirmatory run of the train stage's studies (``fedbench claims confirm``,
fedbench.studies.confirm_train), judged by the very functions the report stage judges the exploratory runs with,
read from the confirmation's own runs root. Keyed by the study claims.json gives the entries (fedbench.report.build);
the CLI hands these to the command (the studies do not import the report). Reads runs; trains nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbench.config import Config


def main_job(cfg: Config, runs_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """The main job's claims (fedbench.studies.fedprox_main_job_claims) from the runs under ``runs_root`` of ``cfg``'s train.seeds."""
    from fedbench.studies.fedprox_main_job_claims import evaluate_claims
    from fedbench.studies.train_runs import load_runs

    hist, summ = load_runs(cfg, runs_root, data_root)
    return evaluate_claims(cfg, hist, summ)


def real_data(cfg: Config, runs_root: Path, data_root: Path) -> list[dict[str, Any]]:
    """The real-data entries (fedbench.report.real_claims) from the runs under ``runs_root``: the MNIST-5k ones are
    judged where its runs are there; the others read runs a confirmation does not make and stay not-run."""
    from fedbench.report.real_claims import evaluate

    return evaluate(cfg, runs_root, data_root)


JUDGES = {"main job": main_job, "real data": real_data}  # fedbench.studies.fedprox_main_job_claims.STUDY, real_claims.STUDY

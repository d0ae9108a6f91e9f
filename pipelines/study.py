"""DVC stage: run one small claim study (fedbench/studies/<name>.py) into reports/studies/<name>/ (the track
stage logs it to MLflow). ``--budget paper`` runs a study at the paper's round counts where it declares them
(e.g. fedproxvr_synthetic), into another root so the pipeline's outputs stay as they are."""

import argparse
from pathlib import Path

from fedbench.cli import run_guarded
from fedbench.config import ConfigError, load_config
from fedbench.executors import ExecutorSettings
from fedbench.studies import STUDIES_ROOT, WORKERS, run_claim_study


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("study")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--workers", type=int, default=WORKERS, help=f"worker processes (default {WORKERS})")
    p.add_argument("--budget", default=None, help="a round budget the study declares (its BUDGETS), e.g. paper")
    p.add_argument("--root", default=str(STUDIES_ROOT), help=f"where the study folder goes (default {STUDIES_ROOT})")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.study not in cfg.claim_studies:
        raise ConfigError(f"study {a.study!r} is not in claim_studies; allowed: {', '.join(cfg.claim_studies)}")
    if a.workers < 1:
        raise ConfigError(f"--workers: must be >= 1, got {a.workers}")
    try:
        run_claim_study(a.study, Path(a.root), workers=a.workers, budget=a.budget,
                        executor=ExecutorSettings.of(cfg.train))  # train.executor: where the stacks run
    except ValueError as exc:
        if "has no budget" in str(exc):
            raise ConfigError(f"--budget: {exc}") from None
        raise


if __name__ == "__main__":
    run_guarded(main)

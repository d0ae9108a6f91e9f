"""DVC stage ``study@NAME``: run claim study fedbench/studies/<NAME>.py as params.yaml's claim_studies declares it
(its budget and seeds) into results/<NAME>/<BUDGET>/ (fedbench.study.layout; the track stage logs it to MLflow, the
report copies its records into reports/studies/<NAME>/). ``--budget B`` runs it at another round budget it declares
(e.g. paper) into results/<NAME>/B/, so the pipeline's outputs stay as they are. The same code path as ``fedbench
study run NAME`` (fedbench.studies.stage.run_study)."""

import argparse
from pathlib import Path

from fedbench.guard import run_guarded
from fedbench.config import load_config
from fedbench.study.layout import RESULTS_ROOT
from fedbench.study.runner import WORKERS
from fedbench.studies.stage import run_study


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("study")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--workers", type=int, default=WORKERS, help=f"worker processes (default {WORKERS})")
    p.add_argument("--budget", default=None, help="a round budget the study declares (its BUDGETS), e.g. paper")
    p.add_argument("--root", default=str(RESULTS_ROOT), help="where the study's folder goes: ROOT/NAME/BUDGET/ "
                                                             "(default %(default)s)")
    a = p.parse_args()
    run_study(load_config(a.params), a.study, budget=a.budget, workers=a.workers, root=Path(a.root))


if __name__ == "__main__":
    run_guarded(main)

"""DVC stage ``main_job``: the main job, the claim study fedbench/studies/fedprox_main_job.py, run by the one driver on
params.yaml's grid (train, algorithms, studies) into results/fedprox_main_job/pipeline/ (claims.json,
simulations.jsonl, its figures, outcomes/: fedbench.studies.stage.run_study, as ``fedbench study run
fedprox_main_job``), the train store's finished runs of that grid moved into its store first, once
(fedbench.studies.fedprox_main_job.adopt_train_store); then params.yaml's offline MNIST-5k study, whose runs are the main
job's, by the one driver into results/fedprox_mnist5k/pipeline/ (fedbench.studies.fedprox_real: none recomputed).
The report reads each study's claims.json (fedbench.studies.entries)."""

import argparse
from pathlib import Path

from fedbench.config import load_config
from fedbench.guard import run_guarded
from fedbench.studies.fedprox_main_job import adopt_train_store
from fedbench.studies.fedprox_real import run_real_study
from fedbench.studies.fedprox_real_data import MNIST5K
from fedbench.studies.stage import run_study
from fedbench.study.layout import MAIN_JOB, RESULTS_ROOT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--root", default=str(RESULTS_ROOT), help="the results root (default %(default)s)")
    p.add_argument("--data", default="data/generated", help="the generated datasets (default %(default)s)")
    a = p.parse_args()
    cfg = load_config(a.params)
    moved, found = adopt_train_store(cfg, Path(a.root))  # the one-time move of the train store's runs (issue 50)
    if found:
        print(f"{moved} of the {found} runs of the train store moved into the study's store (no run recomputed; "
              f"{found - moved} already there or not shown computed by today's code)")
    run_study(cfg, MAIN_JOB, workers=cfg.train.workers, root=Path(a.root))
    if MNIST5K in cfg.studies:  # its runs are the main job's (the same fingerprints): judged by its own study
        run_real_study(cfg, MNIST5K, Path(a.root), Path(a.data).parent / "real")


if __name__ == "__main__":
    run_guarded(main)

"""DVC stage: train every run of the studies in params.yaml (each study's datasets x algorithm variants x
straggler fractions x train.seeds), as stacks of runs spread over train.workers processes; finished runs whose
settings, data and code are unchanged are reused."""

import argparse

from fedbench.guard import run_guarded
from fedbench.config import load_config
from fedbench.pipeline import study_runs, train_runs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--study", action="append", default=[], metavar="NAME",
                   help="only this study of params.yaml's 'studies' (repeatable; default: every study)")
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    runs = study_runs(cfg, a.study or None)
    train_runs(cfg, list(runs))


if __name__ == "__main__":
    run_guarded(main)

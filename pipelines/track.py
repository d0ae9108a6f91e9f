"""DVC stage: log every finished run and claim study to MLflow (each once) and write reports/mlflow_runs.csv."""

import argparse

from fedbench.guard import run_guarded
from fedbench.config import load_config
from fedbench.track import track_all


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--out", default="reports/mlflow_runs.csv")
    a = p.parse_args()
    track_all(load_config(a.params), a.out)


if __name__ == "__main__":
    run_guarded(main)

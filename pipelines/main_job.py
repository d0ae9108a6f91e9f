"""DVC stage ``main_job``: the claims judged on the train store's runs (the main job's and FedProx's on real data),
judged by their study modules and kept in results/fedprox_main_job/pipeline/ (claims.json, simulations.jsonl:
fedbench.studies.train_claims), which the report renders."""

import argparse
from pathlib import Path

from fedbench.config import load_config
from fedbench.guard import run_guarded
from fedbench.studies.train_claims import write
from fedbench.study.layout import RESULTS_ROOT


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--root", default=str(RESULTS_ROOT), help="the results root (default %(default)s)")
    p.add_argument("--data", default="data/generated", help="the generated datasets (default %(default)s)")
    a = p.parse_args()
    write(load_config(a.params), Path(a.root), Path(a.data))


if __name__ == "__main__":
    run_guarded(main)

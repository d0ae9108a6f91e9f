"""DVC stage: run one small claim study (fedbench/studies/<name>.py) into reports/studies/<name>/ (the track
stage logs it to MLflow)."""

import argparse

from fedbench.cli import run_guarded
from fedbench.config import ConfigError, load_config
from fedbench.studies import run_claim_study


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("study")
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.study not in cfg.claim_studies:
        raise ConfigError(f"study {a.study!r} is not in claim_studies; allowed: {', '.join(cfg.claim_studies)}")
    run_claim_study(a.study)


if __name__ == "__main__":
    run_guarded(main)

"""DVC stage: train every seed of one (study, dataset, algorithm variant, straggler fraction) cell."""

import argparse

from fedbench.cli import run_guarded
from fedbench.config import ConfigError, load_config
from fedbench.pipeline import train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--study", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--algorithm", required=True, help="an algorithm variant named in params.yaml 'algorithms'")
    p.add_argument("--stragglers", type=float, required=True)
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.study not in cfg.studies:
        raise ConfigError(f"--study {a.study!r} is not in studies; allowed: {', '.join(cfg.studies)}")
    study = cfg.studies[a.study]
    if a.dataset not in study.datasets:
        raise ConfigError(f"--dataset {a.dataset!r} is not in studies.{a.study}.datasets; allowed: {', '.join(study.datasets)}")
    if a.algorithm not in study.algorithms:
        raise ConfigError(f"--algorithm {a.algorithm!r} is not in studies.{a.study}.algorithms; "
                          f"allowed: {', '.join(study.algorithms)}")
    if a.stragglers not in study.stragglers:
        raise ConfigError(f"--stragglers {a.stragglers:g} is not in studies.{a.study}.stragglers; "
                          f"allowed: {', '.join(f'{s:g}' for s in study.stragglers)}")
    train(cfg, a.study, a.dataset, a.algorithm, a.stragglers)


if __name__ == "__main__":
    run_guarded(main)

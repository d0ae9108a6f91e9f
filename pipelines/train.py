"""DVC stage: train every seed of one (dataset, algorithm variant, straggler fraction) cell of a study."""

import argparse

from fedbench.cli import run_guarded
from fedbench.config import ConfigError, load_config
from fedbench.pipeline import train


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--study", help="the study the cell belongs to (default: the first study listing it); the "
                                   "runs do not depend on it")
    p.add_argument("--dataset", required=True)
    p.add_argument("--algorithm", required=True, help="an algorithm variant named in params.yaml 'algorithms'")
    p.add_argument("--stragglers", type=float, required=True)
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.study is not None and a.study not in cfg.studies:
        raise ConfigError(f"--study {a.study!r} is not in studies; allowed: {', '.join(cfg.studies)}")
    cell = (a.dataset, a.algorithm, a.stragglers)
    studies = [name for name, s in cfg.studies.items() if (a.study or name) == name
               and a.dataset in s.datasets and a.algorithm in s.algorithms and a.stragglers in s.stragglers]
    if not studies:
        raise ConfigError(f"--dataset {a.dataset} --algorithm {a.algorithm} --stragglers {a.stragglers:g} is not a "
                          f"cell of {'studies.' + a.study if a.study else 'any study'}; allowed: the datasets x "
                          f"algorithms x stragglers of {', '.join(cfg.studies)}")
    train(cfg, studies[0], *cell)


if __name__ == "__main__":
    run_guarded(main)

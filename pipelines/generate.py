"""DVC stage: generate one synthetic dataset into data/generated/<name>/."""

import argparse

from fedbench.guard import run_guarded
from fedbench.config import load_config
from fedbench.pipeline import generate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dataset")
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.dataset not in cfg.data.datasets:
        from fedbench.config import ConfigError

        raise ConfigError(f"dataset {a.dataset!r} is not in data.datasets; allowed: {', '.join(cfg.data.datasets)}")
    generate(cfg, a.dataset)


if __name__ == "__main__":
    run_guarded(main)

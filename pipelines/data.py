"""DVC data stages: ``fetch SOURCE``, ``prepare SOURCE``, ``partition VARIANT``, ``report`` (reports/data/).

A source of which no copy can be had (no local copy, no network) is recorded as unavailable and passed on
(fedbench.data.availability), so the rest of the main job runs; a corrupt copy still fails the stage."""

import argparse
import sys

from fedbench.guard import run_guarded
from fedbench.config import ConfigError, load_config


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("step", choices=["fetch", "prepare", "partition", "report"])
    p.add_argument("name", nargs="?", help="a source (fetch, prepare) or a variant (partition)")
    p.add_argument("--params", default="params.yaml")
    a = p.parse_args()
    cfg = load_config(a.params)
    if a.step in ("fetch", "prepare") and a.name not in cfg.data.sources:
        raise ConfigError(f"{a.step} {a.name!r}: not in data.sources; allowed: {', '.join(cfg.data.sources)}")
    if a.step == "partition" and a.name not in cfg.data.real:
        raise ConfigError(f"partition {a.name!r}: not in data.real; allowed: {', '.join(cfg.data.real)}")
    from fedbench.data import stages

    try:
        if a.step == "fetch":
            stages.fetch(a.name, progress=sys.stderr.isatty(), pass_unavailable=True)
        elif a.step == "prepare":
            stages.prepare_source(a.name, params=cfg.data.prepare.get(a.name), pass_unavailable=True)
        elif a.step == "partition":
            stages.partition(a.name, params=cfg.data.variants.get(a.name), pass_unavailable=True)
        else:
            stages.report(cfg.data.real)
    except (ValueError, OSError, RuntimeError) as exc:  # download, checksum, partition errors: one line
        print(f"data {a.step} {a.name or ''}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    run_guarded(main)

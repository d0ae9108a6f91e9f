"""DVC stage: build reports/ (claims.json, claims.md, figures) from the runs."""

import argparse

from fedbench.guard import run_guarded
from fedbench.config import load_config
from fedbench.report.build import build_report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--out", default="reports")
    a = p.parse_args()
    build_report(load_config(a.params), out_dir=a.out)


if __name__ == "__main__":
    run_guarded(main)

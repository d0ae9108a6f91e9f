"""``fedbench paper list|profile|run``: the paper profile's studies, their projected cost, and running one.

``fedbench paper run NAME`` is the command a ``not-run`` FedProx entry carries: it loads params.yaml with the
study added (fedbench.report.paper_profile.overrides, validated as params.yaml is), fetches the study's sources
(verified; ``FEDBENCH_MIRROR`` serves them from a mirror), prepares them, builds its dataset, trains its runs
with the train stage's code (stacked, reused when finished) and rebuilds ``reports/``. Nothing is trained before
every download has arrived, so an offline machine stops at the first fetch with one line naming the URL.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fedbench.config import Config, load_config
from fedbench.errors import FedbenchError
from fedbench.report.paper_profile import PROFILES, STUDIES, dvc_arguments, overrides


def study_config(params: str, name: str) -> Config:
    """params.yaml with study ``name`` of the profile added (a study params.yaml already lists is used as is)."""
    import yaml

    raw = yaml.safe_load(Path(params).read_text()) or {}
    if name in (raw.get("studies") or {}):
        return load_config(params)
    return load_config(params, overrides([name], raw.get("data") or {}))


def _variant_of(cfg: Config, name: str) -> list[str]:
    return list(cfg.studies[name].datasets)


def run(params: str, name: str, data_root: Path = Path("data"), runs_root: Path | None = None,
        report_dir: str = "reports", progress: bool = True) -> None:
    from fedbench.data import stages
    from fedbench.data.registry import VARIANTS
    from fedbench.pipeline import RUNS_ROOT, study_runs, train_runs
    from fedbench.report.build import build_report

    cfg = study_config(params, name)
    variants = [v for v in _variant_of(cfg, name) if v in VARIANTS]
    sources = list(dict.fromkeys(s for v in variants for s in VARIANTS[v].sources))
    for source in sources:  # every download first: an offline machine stops here
        stages.fetch(source, data_root, progress=progress)
    for source in sources:
        stages.prepare_source(source, data_root, params=cfg.data.prepare.get(source))
    for v in variants:
        stages.partition(v, data_root, cfg.data.variants.get(v))
    train_runs(cfg, list(study_runs(cfg, [name])), data_root / "generated", runs_root or RUNS_ROOT, progress=progress)
    build_report(cfg, out_dir=report_dir, runs_root=runs_root or RUNS_ROOT, data_root=data_root / "generated")


def listing(params: str) -> str:
    """Each profile's studies with their projected cost, and the totals."""
    from fedbench.report.costs import load_measured, project

    measured = load_measured()
    cfg = load_config(params)
    seeds = len(cfg.train.seeds)
    lines = [f"costs projected from per-step costs measured on {measured['device']} ({measured['measured_on']}); "
             f"{seeds} seeds (train.seeds), each run on its own"]
    for profile, names in PROFILES.items():
        total = 0.0
        lines.append(f"profile {profile}:")
        for n in names:
            c = project(STUDIES[n].scale(seeds), measured)
            total += c["hours"]
            lines.append(f"  {n:<28} {c['runs']:>3} runs x {c['rounds']:>4} rounds, {c['per_round_s']:>9.3f} s/round: "
                         f"{c['hours']:>9.2f} h   fedbench paper run {n}")
        lines.append(f"  {'total':<28} {total:.1f} h")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fedbench paper", description="The paper profile: real-data studies at the "
                                "papers' scale (fedbench/report/paper_profile.py).")
    p.add_argument("--params", default="params.yaml")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("list", help="each study with its projected cost, and the profiles' totals")
    pr = sub.add_parser("profile", help="print the `dvc exp run -S ...` arguments that add a profile's studies")
    pr.add_argument("profile", choices=list(PROFILES))
    r = sub.add_parser("run", help="fetch a study's data, train its runs, rebuild reports/")
    r.add_argument("name", choices=list(STUDIES) + ["fedprox_mnist5k"], metavar="NAME",
                   help=f"one of: {', '.join(STUDIES)}, fedprox_mnist5k")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    a = p.parse_args(argv)
    if a.command == "list":
        print(listing(a.params))
    elif a.command == "profile":
        import yaml

        data = (yaml.safe_load(Path(a.params).read_text()) or {}).get("data") or {}
        print(dvc_arguments(overrides(PROFILES[a.profile], data)))
    else:
        try:
            run(a.params, a.name, progress=not a.quiet)
        except (FedbenchError, ValueError, OSError, KeyError, RuntimeError) as exc:  # config, DownloadError, ...
            print(f"fedbench paper run: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}",
                  file=sys.stderr)
            return 2 if isinstance(exc, FedbenchError) else 1
        except KeyboardInterrupt:
            print("fedbench paper run: interrupted; rerun the same command (downloads resume, finished runs are "
                  "kept)", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``fedbench paper list|cost|profile|run``: the paper profile's studies, their cost, and running one.

``fedbench paper list`` prints each study's cost: the runs its claims read (the others left out, and counted), its
rounds, training and evaluation hours by its declared protocol, the share of evaluation, the total and its stacks.
The figure is fedbench.study.costs.study_cost's, the one every place quotes: the read runs as the runner stacks them,
priced chain by chain from their drawn schedules at the clients' sizes (fedbench.study.drawn), on unit costs measured
(``fedbench paper cost``'s file for the device, fedbench.bench.paper_cost) where there are some and from the
per-model table (fedbench.bench.costs) otherwise, each figure saying which. ``fedbench paper cost`` times each study
at its real shapes on generated data (fedbench.bench.paper_cost; this module only hands it the studies' scales), then
prints the profiles priced from what it measured, as ``paper list`` prints them.

``fedbench paper run NAME`` is the command a ``not-run`` real-data entry carries. For a FedProx study it loads
params.yaml with the study added (fedbench.study.paper_profile.overrides, validated as params.yaml is), fetches
the study's sources (verified; ``FEDBENCH_MIRROR`` serves them from a mirror), prepares them, builds its dataset,
runs the study by the one driver into ``results/NAME/BUDGET/`` (fedbench.studies.fedprox_real: stacked, reused when
finished, its train-store runs moved in once) and rebuilds ``reports/``. For a
paper-scale claim study (paper_profile.CLAIM_STUDIES: FedLaAvg, SCAFFOLD, Delta-FL, FedProxVR, Mime) it builds
the study's variants (its declared variants, with params.yaml's data.variants parameters) the same way, then makes
the call ``fedbench study run NAME --budget paper`` makes (fedbench.studies.stage.run_study: the one code path,
train.executor; on a GPU when there is one), with train.workers processes where that command takes ``--workers``, into ``results/NAME/paper/`` (``--budget B``:
``results/NAME/B/``, so no budget replaces another's output; fedbench.study.layout) and rebuilds
``reports/``. Nothing is trained before every download has arrived, so an offline machine stops
at the first fetch with one line naming the URL.

Before anything starts, ``paper run`` prints the study's cost (projected from measured per-step costs, or measured
where the main job ran it) and its downloads, and asks; ``--yes`` starts without asking (needed where stdin is not
a terminal), ``--dry-run`` prints and stops.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedbench.config import Config, load_config
from fedbench.data.params import read_params
from fedbench.errors import FedbenchError
from fedbench.executors import EXECUTORS
from fedbench.helptext import described
from fedbench.parallel import Terminated, raise_terminated
from fedbench.study.layout import RESULTS_ROOT
from fedbench.study.paper_profile import (
    CLAIM_STUDIES,
    PAPER_CLAIM_STUDIES,
    PROFILES,
    STAND_IN_STUDIES,
    STUDIES,
    dvc_arguments,
    overrides,
    study_scales,
)


def study_config(params: str, name: str, executor: str | None = None) -> Config:
    """params.yaml with study ``name`` of the profile added (a study params.yaml already lists is used as is), and
    train.executor set to ``executor`` (None: params.yaml's)."""
    raw = read_params(params)  # a missing or broken file: one line naming it
    added = {} if name in (raw.get("studies") or {}) else overrides([name], raw.get("data") or {})
    return load_config(params, added | _executor(executor))


def _executor(executor: str | None) -> dict[str, str]:
    """``--executor`` as the override `--set train.executor=...` makes (none when not given)."""
    return {} if executor is None else {"train.executor": executor}


def _variant_of(cfg: Config, name: str) -> list[str]:
    return list(cfg.studies[name].datasets)


def build_variants(cfg: Config, variants: list[str], data_root: Path, progress: bool = True) -> None:
    """Fetch, prepare and partition ``variants`` into ``data_root/real/`` with ``cfg``'s data parameters; every
    download first, so an offline machine stops before anything else is done."""
    from fedbench.data import stages
    from fedbench.data.registry import VARIANTS

    variants = [v for v in variants if v in VARIANTS]
    sources = list(dict.fromkeys(s for v in variants for s in VARIANTS[v].sources))
    for source in sources:
        stages.fetch(source, data_root, progress=progress)
    for source in sources:
        stages.prepare_source(source, data_root, params=cfg.data.prepare.get(source))
    for v in variants:
        stages.partition(v, data_root, cfg.data.variants.get(v))


def run(params: str, name: str, data_root: Path = Path("data"), results_root: Path = RESULTS_ROOT,
        report_dir: str = "reports", progress: bool = True, budget: str = "paper",
        report: Callable[..., Any] | None = None, executor: str | None = None) -> None:
    """Fetch and build study ``name``'s data, run it into ``results_root`` (a claim study, a FedProx real-data study
    included: fedbench.studies.fedprox_real, into ``results_root/NAME/BUDGET/``: fedbench.study.layout), then
    ``report(cfg, out_dir=, results_root=, data_root=)``: the report's rebuild,
    handed in by the CLI (fedbench.report.build.build_report), so that this module stands below the report (None:
    no rebuild). ``executor``: train.executor for its runs (``--executor``; None: params.yaml's)."""
    if name in CLAIM_STUDIES:
        run_claim(params, name, data_root, results_root, progress, budget, executor)
        cfg = load_config(params, _executor(executor))
    else:  # a FedProx study of the profile or MNIST-5k (FEDPROX_REAL): the one driver (fedbench.studies.fedprox_real)
        from fedbench.studies.fedprox_real import run_real_study

        cfg = study_config(params, name, executor)
        build_variants(cfg, _variant_of(cfg, name), data_root, progress)
        run_real_study(cfg, name, results_root, data_root / "real")
    if report is not None:
        report(cfg, out_dir=report_dir, results_root=results_root, data_root=data_root / "generated")


def run_claim(params: str, name: str, data_root: Path, results_root: Path = RESULTS_ROOT, progress: bool = True,
              budget: str = "paper", executor: str | None = None) -> list[dict]:
    """Paper-scale claim study ``name``: its variants fetched and built into ``data_root/real/``, then exactly
    ``fedbench study run NAME --budget BUDGET`` (fedbench.studies.stage.run_study, with train.workers processes, not its ``--workers``):
    into ``results_root/NAME/BUDGET/`` (replaced atomically when it finishes)."""
    from fedbench.studies.real_data import declaration
    from fedbench.studies.stage import run_study

    cfg = load_config(params, _executor(executor))
    build_variants(cfg, list(declaration(name).variants), data_root, progress)
    return run_study(cfg, name, budget=budget, workers=cfg.train.workers, root=results_root,
                     real_root=data_root / "real")


def study_variants(params: str, name: str) -> list[str]:
    """The data.real variants study ``name`` builds."""
    if name in CLAIM_STUDIES:
        from fedbench.studies.real_data import declaration

        return list(declaration(name).variants)
    return _variant_of(study_config(params, name), name)


def plan(params: str, name: str, data_root: Path = Path("data"), claims: Path = Path("reports/claims.json"),
         budget: str = "paper") -> list[str]:
    """What ``paper run NAME`` will cost and download, as lines: the projected cost (or the one measured by the
    main job, from ``claims``), then each source with its size and whether it is here already."""
    from fedbench.data.registry import VARIANTS
    from fedbench.data.sources import CHECKSUMS, SOURCES, raw_folder

    if name in CLAIM_STUDIES or name in STUDIES:
        from fedbench.study.costs import study_cost

        c = study_cost(name, study_scales(len(load_config(params).train.seeds))[name], "cpu")
        where = ("on unit costs `fedbench paper cost` measured at its shapes" if c["source"] == "measured" else
                 f"{c['source']}: unit costs from {c['table']}")
        cost = (f"projected {c['hours']:,.2f} CPU-h ({c['runs']} runs its claims read, of {c['runs'] + c['left_out']}, "
                f"x up to {c['rounds']:,} rounds, in {c['stacks']} stack(s), priced from their drawn schedules) {where} "
                f"on {c['device']}")
        if budget != "paper":  # the scales are the paper budget's: say so rather than print the wrong figure as this one's
            cost += f"; that is the paper budget's cost, --budget {budget} runs part of it (the study's BUDGETS)"
    else:  # a study of params.yaml the main job runs: its measured cost, if the report has it
        import json

        entries = json.loads(claims.read_text())["claims"] if claims.exists() else []
        found = [e["cost"] for e in entries if (e.get("cost") or {}).get("measured") and name.split("_", 1)[-1] in e["id"]]
        cost = (f"measured {found[0]['seconds']:,.0f} s ({found[0]['runs']} runs) on {found[0]['device']} by the main job"
                if found else "no projection (a study of params.yaml: the main job runs it)")
    sources = list(dict.fromkeys(s for v in study_variants(params, name) if v in VARIANTS for s in VARIANTS[v].sources))
    lines = [f"fedbench paper run {name}: {cost}", "downloads:" if sources else "downloads: none"]
    for src in sources:
        here = (raw_folder(src, data_root) / CHECKSUMS).exists()
        lines.append(f"  {src:<12} {SOURCES[src].size or 'size unknown'}"
                     f"{'  (here already: ' + str(raw_folder(src, data_root)) + ')' if here else ''}")
    return lines


def confirm(lines: list[str], yes: bool, dry_run: bool) -> bool:
    """Print the plan; True to start: ``yes``, or the user answered y at the terminal. ``dry_run``: False. Not a
    terminal and no ``yes``: a FedbenchError saying to pass --yes."""
    print("\n".join(lines))
    if dry_run:
        print("dry run: nothing started")
        return False
    if yes:
        return True
    if not sys.stdin.isatty():
        raise FedbenchError("not starting without confirmation (stdin is not a terminal): pass --yes to start it, "
                            "or --dry-run to see the cost only")
    try:
        answer = input("start it? [y/N] ")
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        print("not started")
        return False
    return True


def listing(params: str, device: str = "cpu", costs_dir: Path | None = None) -> str:
    """Each profile's studies with their cost (runs its claims read, the runs left out, rounds, training and
    evaluation hours, the share of evaluation, the total and the stacks it runs in), the figure every place quotes
    (fedbench.study.costs.study_cost: the read runs as the runner stacks them, priced chain by chain from their drawn
    schedules at the clients' sizes), on the unit costs ``fedbench paper cost`` measured (the file in ``costs_dir``,
    default reports/bench/ or reports/bench-gpu/ for ``device``) where there are some, on the per-model table (CPU)
    otherwise, and the totals."""
    from fedbench.study.costs import FILE, folder, load, load_measured

    measured = load_measured()
    costs_dir = costs_dir or folder(device)
    data = load(device, costs_dir)
    seeds = len(load_config(params).train.seeds)
    unit = "GPU" if device == "cuda" else "CPU"
    lines = [f"costs of the runs each study's claims read (runs no claim reads are left out and not counted), as the "
             f"study runner stacks them, priced chain by chain from their drawn schedules at the clients' sizes "
             f"(fedbench.study.drawn), by the study's declared evaluation protocol; {seeds} seeds (train.seeds) for "
             f"the FedProx studies; {unit}-hours",
             (f"measured: unit costs by `fedbench paper cost --device {device}` on {data['device_name']} (torch "
              f"{data['torch']}, {data['date']}), {costs_dir / FILE}" if data else
              f"measured: none for {device} yet ({costs_dir / FILE}; `fedbench paper cost --device {device}` makes it)"),
             f"projected: unit costs from the per-model table on {measured['device']} ({measured['measured_on']}), "
             "fedbench/bench/measured_costs.json" + ("; not shown for cuda (a CPU figure)" if device == "cuda" else ""),
             *profile_lines(seeds, device, costs_dir, data, measured),
             "each study runs with `fedbench paper run NAME`"]
    return "\n".join(lines)


def profile_lines(seeds: int, device: str, costs_dir: Path, data: dict | None = None, measured: dict | None = None,
                  stand_ins: bool = True) -> list[str]:
    """The table ``paper list`` prints under its header, and ``paper cost`` after measuring: each profile's studies
    with fedbench.study.costs.study_cost's figure for them at ``seeds`` seeds on ``device``'s unit costs in
    ``costs_dir`` (``data``, ``measured``: the tables when already read), and each profile's total; the stand-ins
    after them (``stand_ins``)."""
    from fedbench.study.costs import load, load_measured, study_cost

    measured = measured or load_measured()
    data = load(device, costs_dir) if data is None else data
    scales = study_scales(seeds)
    lines = [f"  {'study':<26} {'source':<10} {'runs':>5} {'left out':>8} {'rounds':>7} {'train h':>10} {'eval h':>10} "
             f"{'eval':>5} {'total h':>10} {'stacks':>6}"]

    def cost(name: str) -> dict | None:
        c = study_cost(name, scales[name], device, costs_dir, table=data, per_model=measured)
        return None if device == "cuda" and c["source"] != "measured" else c

    def line(name: str, c: dict | None) -> str:
        if c is None:
            return f"  {name:<26} {'not measured':<10}   fedbench paper cost --device {device} --study {name}"
        share = c["eval_hours"] / c["hours"] if c["hours"] else 0.0
        return (f"  {name:<26} {c['source']:<10} {c['runs']:>5} {c['left_out']:>8} {c['rounds']:>7,} "
                f"{c['train_hours']:>10,.2f} {c['eval_hours']:>10,.2f} {share:>5.0%} {c['hours']:>10,.2f} "
                f"{c['stacks']:>6}")

    def block(title: str, names: list[str], total: bool = True) -> None:
        lines.append(title)
        got = [(n, cost(n)) for n in names]
        lines.extend(line(n, c) for n, c in got)
        if not total:
            return
        counted = [c for _, c in got if c is not None]
        hours = sum(c["seconds"] for c in counted) / 3600
        train, evaluation = sum(c["train_hours"] for c in counted), sum(c["eval_hours"] for c in counted)
        share = evaluation / hours if hours else 0.0
        sources = [c["source"] for c in counted]
        said = ", ".join(f"{sources.count(k)} {k}" for k in ("measured", "partly measured", "projected") if k in sources)
        missing = len(got) - len(counted)
        said += f", {missing} not measured (not in the total)" if missing else ""
        lines.append(f"  {'total':<26} {'':<10} {sum(c['runs'] for c in counted):>5} "
                     f"{sum(c['left_out'] for c in counted):>8} {'':>7} {train:>10,.1f} {evaluation:>10,.1f} "
                     f"{share:>5.0%} {hours:>10,.1f} {sum(c['stacks'] for c in counted):>6}   ({said})")

    for profile, names in PROFILES.items():
        block(f"profile {profile}:", names + (list(PAPER_CLAIM_STUDIES) if profile == "paper" else []))
    if stand_ins:
        block("stand-ins on real data this machine can install (not in the profile's total):", list(STAND_IN_STUDIES),
              total=False)
    return lines


def cost(params: str, device: str, names: list[str], rounds: int, max_seconds: float, out: Path | None,
         replace: bool = False) -> Path:
    """``fedbench paper cost``: measure ``names`` (default: every study of the profiles and the stand-ins) on
    ``device`` (fedbench.bench.paper_cost), write the JSON and markdown table into ``out``, then print the profiles
    priced from it (:func:`profile_lines`: the table ``paper list`` prints for that folder)."""
    from fedbench.bench.paper_cost import run, validate
    from fedbench.study.costs import folder

    seeds = len(load_config(params).train.seeds)
    scales = study_scales(seeds)
    names = names or list(scales)
    validate(names, list(scales), rounds, max_seconds, device)
    out = out or folder(device)
    run({n: scales[n] for n in names}, device, out, max_seconds, rounds, progress=lambda m: print(m, flush=True),
        scales_of=scales, replace=replace)
    print(f"the profiles as priced from {out / 'paper-cost.json'} (what `fedbench paper list` prints):")
    print("\n".join(profile_lines(seeds, device, out, stand_ins=False)))
    return out


NAMES = list(STUDIES) + ["fedprox_mnist5k"] + list(CLAIM_STUDIES)  # what `paper run` runs


def main(argv: list[str] | None = None, report: Callable[..., Any] | None = None) -> int:
    """``fedbench paper``; ``report``: how `paper run` rebuilds reports/ (the CLI hands it in: :func:`run`)."""
    p = argparse.ArgumentParser(prog="fedbench paper", description="The paper profile: real-data studies at the "
                                "papers' scale (fedbench/study/paper_profile.py).")
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ls = sub.add_parser("list", help="each study with its cost (measured where `paper cost` measured it, projected "
                                     "otherwise), and the profiles' totals")
    ls.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="whose measured costs to show (default cpu)")
    ls.add_argument("--costs", type=Path, default=None, metavar="DIR", help="the folder of paper-cost.json (default "
                    "reports/bench/ for cpu, reports/bench-gpu/ for cuda)")
    co = sub.add_parser("cost", help="time a few rounds of each paper study at its real shapes on generated data, "
                                     "project each study and the profile, write paper-cost.json and .md")
    co.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where to time (default cpu)")
    co.add_argument("--study", nargs="+", default=[], metavar="NAME", help="only these studies (default: all)")
    co.add_argument("--rounds", type=int, default=2, help="timed rounds a run, after one warm-up round (default 2)")
    co.add_argument("--max-seconds", type=float, default=120.0, help="about how long one study may take (default "
                    "120; CPU seconds on the CPU, so a machine shared with other jobs takes longer in wall time); a "
                    "study that would take longer is timed on a partial cohort and fewer local steps, scaled up, "
                    "and says so")
    co.add_argument("--out", type=Path, default=None, metavar="DIR", help="where to write paper-cost.json and "
                    "paper-cost.md (default reports/bench/ for cpu, reports/bench-gpu/ for cuda)")
    co.add_argument("--replace", action="store_true", help="replace a paper-cost.json there that another machine "
                    "measured (without it, such a file is kept and the command stops before measuring)")
    pr = sub.add_parser("profile", help="print the `dvc exp run -S ...` arguments that add a profile's FedProx studies (params.yaml studies.*; "
                                                  "the paper-scale claim studies run with `fedbench paper run NAME`)")
    pr.add_argument("profile", choices=list(PROFILES))
    r = sub.add_parser("run", help="print a study's cost and downloads, ask, then fetch its data, train its runs, "
                                   "rebuild reports/ (a claim study: its variants built, then what `fedbench study "
                                   "run NAME --budget BUDGET` does)",
                       description="Print study NAME's cost and downloads and ask; then fetch and build its data, "
                                   "run it and rebuild reports/. A FedProx study runs by the one driver into "
                                   "results/NAME/BUDGET/ (fedbench.studies.fedprox_real); a "
                                   "claim study (real data) by exactly `fedbench study run NAME --budget BUDGET` (the same "
                                   "function), into results/NAME/BUDGET/.")
    r.add_argument("name", metavar="NAME", help=f"one of: {', '.join(NAMES)}")
    r.add_argument("--quiet", action="store_true", help="no progress bars")
    r.add_argument("--yes", "-y", action="store_true", help="start without asking (needed when stdin is not a terminal)")
    r.add_argument("--dry-run", action="store_true", help="print the cost and downloads, start nothing")
    r.add_argument("--budget", default="paper", help="a claim study's budget (its BUDGETS; default paper), e.g. "
                                                     "fedproxvr_fashion's convex: Table 1 alone; written to "
                                                     "results/NAME/BUDGET/")
    r.add_argument("--executor", default=None, metavar="KIND", help="where its runs' stacks run, as `--set "
                   "train.executor=KIND` would set it: local (processes here) or ray (a Ray cluster: RAY_ADDRESS; "
                   "default: params.yaml's train.executor)")
    a = described(p).parse_args(argv)
    if a.command == "run" and a.executor is not None and a.executor not in EXECUTORS:
        print(f"fedbench paper run: --executor {a.executor!r}; allowed: {', '.join(EXECUTORS)}", file=sys.stderr)
        return 2
    if a.command == "run" and a.name not in NAMES:
        from fedbench.algorithms import closest  # a name holding the word first: femnist -> fedprox_femnist

        close = closest(a.name, NAMES)
        print(f"fedbench paper run: {a.name!r} is not a paper study"
              f"{f'; did you mean {close!r}?' if close else ''}; known: {', '.join(NAMES)}", file=sys.stderr)
        return 2
    if a.command == "list":
        try:
            if a.costs is not None and not a.costs.is_dir():  # named on purpose: a folder that is there
                raise ValueError(f"--costs {a.costs}: not a folder; allowed: a folder holding paper-cost.json")
            print(listing(a.params, a.device, a.costs))
        except ValueError as exc:
            print(f"fedbench paper list: {exc}", file=sys.stderr)
            return 2
    elif a.command == "cost":
        try:
            out = cost(a.params, a.device, a.study, a.rounds, a.max_seconds, a.out, a.replace)
        except ValueError as exc:
            print(f"fedbench paper cost: {exc}", file=sys.stderr)
            return 2
        print(f"wrote {out / 'paper-cost.json'} and {out / 'paper-cost.md'}")
    elif a.command == "profile":
        try:
            data = read_params(a.params).get("data") or {}  # a missing or broken params file: one line
        except ValueError as exc:
            print(f"fedbench paper profile: {exc}", file=sys.stderr)
            return 2
        print(dvc_arguments(overrides(PROFILES[a.profile], data)))
    else:
        try:
            if a.budget != "paper" and a.name not in CLAIM_STUDIES:
                raise FedbenchError(f"--budget {a.budget}: only a claim study has budgets; {a.name} runs at the paper's")
            if a.name in CLAIM_STUDIES:  # the check `fedbench study run` makes, before the cost and any download
                from fedbench.config import _one_of
                from fedbench.study import registry

                _one_of(a.budget, registry.budgets(a.name), f"--budget (study {a.name})")
            if not confirm(plan(a.params, a.name, budget=a.budget), a.yes, a.dry_run):
                return 0
            signal.signal(signal.SIGTERM, raise_terminated)  # SIGTERM unwinds it as Ctrl-C does: the same clean-up
            run(a.params, a.name, progress=not a.quiet, budget=a.budget, report=report, executor=a.executor)
        except (FedbenchError, ValueError, OSError, KeyError, RuntimeError) as exc:  # config, DownloadError, ...
            print(f"fedbench paper run: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}",
                  file=sys.stderr)
            return 2 if isinstance(exc, FedbenchError) else 1
        except (KeyboardInterrupt, Terminated) as exc:
            print(f"fedbench paper run: {'interrupted' if isinstance(exc, KeyboardInterrupt) else 'terminated'}; "
                  "rerun the same command (downloads resume, finished runs are kept)", file=sys.stderr)
            return 130 if isinstance(exc, KeyboardInterrupt) else 128 + signal.SIGTERM
    return 0


if __name__ == "__main__":
    sys.exit(main())

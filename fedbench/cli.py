"""The ``fedbench`` command: one subcommand per task, for people who do not drive it through DVC.

``fedbench --help``, ``check-config`` and ``show`` import no torch: they answer at once."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fedbench.algorithms import did_you_mean
from fedbench.claims.entry import FIDELITIES, VERDICTS
from fedbench.config import ConfigError, load_config, parse_value
from fedbench.errors import check_folder
from fedbench.guard import refuse, run_guarded
from fedbench.helptext import described


def _overrides(pairs: list[str]) -> dict[str, object]:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise ConfigError(f"--set {p!r}: expected KEY=VALUE, e.g. train.rounds=200")
        k, v = p.split("=", 1)
        if not k.strip():
            raise ConfigError(f"--set {p!r}: no key before '='; expected KEY=VALUE, e.g. train.rounds=200")
        try:
            out[k] = parse_value(v)
        except ConfigError as exc:
            raise ConfigError(f"--set {p!r}: {exc}") from None
    return out


def algorithm_variants(params: str, names: list[str], overrides: dict[str, object]) -> list[str]:
    """The variants of params.yaml's ``algorithms`` that ``--algorithm`` ``names`` mean: a variant by its name; an
    algorithm by its registered name (``scaffold``, or an entry point's) or by its dotted path
    (``package.module:Class``, the variant named by the class) added to ``overrides`` as a variant of its own, with
    its defaults unless ``--set algorithms.<variant>.<key>=...`` gives others. ConfigError for any other name."""
    from fedbench.algorithms import ALGORITHMS, did_you_mean, is_target, resolve
    from fedbench.data.params import read_params

    given = read_params(params).get("algorithms") or {}
    given = given if isinstance(given, dict) else {}  # a malformed section: load_config names it
    out = []
    for name in names:
        if name in given:
            out.append(name)
            continue
        if name not in ALGORITHMS and not is_target(name):
            raise ConfigError(f"--algorithm {name!r} is not a variant in 'algorithms' nor an algorithm"
                              f"{did_you_mean(name, [*given, *ALGORITHMS])}; allowed: variants {', '.join(given)}; "
                              f"algorithms {', '.join(ALGORITHMS)}; or a class of your own as package.module:Class")
        try:
            algorithm = resolve(name)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        variant = name.split(":")[1] if is_target(name) else name
        if variant in given:
            raise ConfigError(f"--algorithm {name}: its variant name {variant!r} is already a variant in "
                              "'algorithms'; rename the class, or the variant")
        overrides[f"algorithms.{variant}.name"] = algorithm
        out.append(variant)
    return out


def cmd_run(a: argparse.Namespace) -> None:
    from fedbench.pipeline import check_cell, ensure_dataset
    from fedbench.study.experiments import train

    overrides = _overrides(a.set)
    if a.seed is not None:
        if a.seed < 0:
            raise ConfigError(f"--seed {a.seed}: allowed: a seed >= 0")
        if "train.seeds" in overrides:
            raise ConfigError("--seed and --set train.seeds both choose the seeds: give one of them")
        overrides["train.seeds"] = [a.seed]
    (variant,) = algorithm_variants(a.params, [a.algorithm], overrides)
    cfg = load_config(a.params, overrides)
    known = cfg.data.datasets + cfg.data.real
    if a.dataset not in known:
        raise ConfigError(f"--dataset {a.dataset!r} is not in data.datasets or data.real{did_you_mean(a.dataset, known)}; "
                          f"allowed: {', '.join(known)}")
    check_cell(cfg, variant, a.stragglers)  # everything that can fail before data is generated
    each = None
    if not a.no_track:  # imported before the workers start: logging a finished run then takes a moment, not seconds
        from fedbench import plotting, tracking  # noqa: F401 (MLflow and matplotlib, each run's figure: 2 s to import
        from fedbench.track import track_runs  #   alone, 5 s and more on a loaded machine, paid once here)

        tracking.checked_uri()  # a store fedbench cannot use: one line before data or runs are made, not after

        def each(key, summary):  # each run logged to MLflow as soon as its stack finishes
            track_runs(a.study, [summary])

    ensure_dataset(cfg, a.dataset)
    summaries = train(cfg, a.dataset, variant, a.stragglers, each=each)
    print("\n".join(run_locations(cfg, summaries, tracked=not a.no_track)))


def run_locations(cfg, summaries: list[dict], tracked: bool, results_root: Path | None = None) -> list[str]:
    """Where each run of ``summaries`` is: its outcome file, and the MLflow experiment holding it (a run the main job
    logged already stays in its experiment: it is not logged twice)."""
    from fedbench.study.experiments import RunKey, outcome_path
    from fedbench.study.layout import RESULTS_ROOT

    lines = []
    for s in summaries:
        p = s["params"]
        key = RunKey(p["dataset"], p["variant"], float(p["straggler_fraction"]), int(p["seed"]))
        lines.append(f"{key.desc}: {'reused' if s.get('reused') else 'wrote'} "
                     f"{outcome_path(results_root or RESULTS_ROOT, s['fingerprint'])}")
        if tracked:
            from fedbench import tracking_index
            from fedbench.track import logged  # no MLflow loaded where the store's file answers

            found = logged(s["fingerprint"])
            lines.append(f"  MLflow: experiment {found[0]!r}, run {found[1]} ({tracking_index.tracking_uri()})" if found
                         else "  MLflow: not logged")
    return lines


def cmd_generate(a: argparse.Namespace) -> None:
    from fedbench.pipeline import generate

    cfg = load_config(a.params, _overrides(a.set))
    unknown = [name for name in a.datasets if name not in cfg.data.datasets]
    if unknown:  # every name checked before any is generated
        raise ConfigError(f"dataset {unknown[0]!r} is not in data.datasets; allowed: {', '.join(cfg.data.datasets)}")
    for name in a.datasets or cfg.data.datasets:
        generate(cfg, name)


def cmd_compare(a: argparse.Namespace) -> None:
    from fedbench.compare import Selection, compare

    overrides = _overrides(a.set)
    variants = algorithm_variants(a.params, a.algorithm, overrides)
    against = None if a.against is None else algorithm_variants(a.params, [a.against], overrides)[0]
    cfg = load_config(a.params, overrides)
    selection = Selection(tuple(a.dataset), tuple(variants), tuple(a.stragglers), tuple(a.seed))
    result = compare(cfg, selection, a.metric or ["train/loss", "test/accuracy"], Path(a.out), overrides=overrides,
                     against=against)
    if result.missing:
        missing = result.missing
        print(f"fedbench compare: {len(missing)} selected runs have not finished under these parameters, drawn "
              f"without them: {'; '.join(k.desc for k in missing[:5])}{' ...' if len(missing) > 5 else ''}",
              file=sys.stderr)
    print("\n".join([*result.effects, str(result.path)]))


# what `fedbench report` writes into its folder (and the track stage's table beside it): a folder holding one of
# them is a report folder, also one whose last build was cut short (DVC removes a stage's outputs before it runs)
REPORT_OUTPUTS = ("claims.json", "claims.md", "runs.csv", "metrics.json", "figures", "studies", "mlflow_runs.csv")


def report_folder(out: str) -> Path:
    """``--out`` of `fedbench report`: a new or empty folder, or a report folder (holding one of REPORT_OUTPUTS);
    ConfigError otherwise, before anything is written (`--out .` in a checkout would write the report among the
    sources)."""
    check_folder("--out", out, "a new or empty folder, or a report folder, e.g. reports")
    path = Path(out)
    if path.is_dir() and any(path.iterdir()) and not any((path / name).exists() for name in REPORT_OUTPUTS):
        raise ConfigError(f"--out {out}: holds files but no report (none of {', '.join(REPORT_OUTPUTS)}); allowed: a "
                          "new or empty folder, or a report folder")
    return path


def cmd_report(a: argparse.Namespace) -> None:
    out = report_folder(a.out)
    _rebuild_report(load_config(a.params), out_dir=out)


def cmd_show(a: argparse.Namespace) -> None:
    if a.claims and a.experiment is not None:
        raise ConfigError("--experiment selects MLflow runs: use it without --claims")
    if not a.claims and a.out is not None:
        raise ConfigError("--out is the report folder --claims reads: use it with --claims")
    if a.claims:
        from fedbench.report.show import show_claims

        print("\n".join(show_claims(Path(a.out or "reports") / "claims.json", paper=a.paper, verdict=a.verdict,
                                    fidelity=a.fidelity, verbose=a.verbose)))
        return
    if a.paper or a.verdict or a.fidelity or a.verbose:
        raise ConfigError("--paper, --verdict, --fidelity and --verbose select claims: use them with --claims")
    from fedbench import tracking

    if a.experiment is not None and a.experiment not in (known := tracking.experiment_names()):
        raise ConfigError(f"--experiment {a.experiment!r} is not an MLflow experiment in {tracking.tracking_uri()}; "
                          f"known: {', '.join(known) or 'none (run `dvc repro` first)'}")
    rows = tracking.list_runs(a.experiment)
    if not rows:
        print(f"no runs in {tracking.tracking_uri()}")
        return
    import pandas as pd

    df = pd.DataFrame(rows)
    with pd.option_context("display.max_rows", 500, "display.width", 200, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=lambda x: f"{x:.4f}"))


def check_port(port: int, host: str = "127.0.0.1") -> None:
    """A ConfigError unless ``port`` is in 1..65535 and free to listen on at ``host`` (checked before MLflow
    starts: it would print the link, then fail to bind, and the link would show whatever owns the port)."""
    import errno
    import socket

    if not 1 <= port <= 65535:
        raise ConfigError(f"--port {port}: allowed 1..65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as MLflow's server: a closed port's TIME_WAIT is free
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError as exc:
            why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
            raise ConfigError(f"--port {port}: {host}:{port} {why}; pick another, e.g. --port {port + 1 if port < 65535 else 5000}") from None


def cmd_ui(a: argparse.Namespace) -> None:
    check_port(a.port)
    from fedbench import tracking
    from fedbench.track import TABLE_METRICS, TABLE_PARAMS, headline_charts

    # the headline comparisons' chart links need params.yaml's studies: none where the default file is absent (a
    # store looked at outside a checkout)
    given = a.params != "params.yaml" or Path(a.params).exists()
    charts = headline_charts(load_config(a.params)) if given else []
    sys.exit(tracking.serve_ui(port=a.port, charts=charts, params_first=TABLE_PARAMS, metrics_first=TABLE_METRICS))


def cmd_check(a: argparse.Namespace) -> None:
    cfg = load_config(a.params)
    n = sum(len(s.datasets) * len(s.algorithms) * len(s.stragglers) for s in cfg.studies.values())
    print(f"{a.params}: ok ({len(cfg.studies)} studies, {n} cells x {len(cfg.train.seeds)} seeds)")


def cmd_study(a: argparse.Namespace) -> None:
    from fedbench.studies.stage import list_studies, run_study
    from fedbench.study.registry import FEDPROX_REAL

    if a.study_command == "run" and a.name in FEDPROX_REAL:  # params.yaml with the study, as `fedbench paper run`
        from fedbench.paper import study_config

        cfg = study_config(a.params, a.name)
    else:
        cfg = load_config(a.params)
    if a.study_command == "list":
        print("\n".join(list_studies(cfg)))
    else:
        run_study(cfg, a.name, budget=a.budget, workers=a.workers)


def cmd_regress(a: argparse.Namespace) -> None:
    from fedbench.regression import check, update

    if a.update:
        update(a.params)
    else:
        problems = check(a.params)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            sys.exit(1)
        print("regression check: all key numbers within tolerance")


def cmd_bench(a: argparse.Namespace) -> None:
    from fedbench.bench.cli import main as bench_main

    sys.exit(bench_main(a.bench_args))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fedbench",
        description="Rerun federated-optimization papers' experiments and check their published numbers.\n"
                    "The main job is `dvc repro` (params.yaml -> results/ -> reports/); these commands do its parts by hand.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  fedbench run --dataset synthetic_1_1 --algorithm fedprox_mu1 --stragglers 0.9 --seed 0\n"
               "  fedbench run --dataset synthetic_iid --algorithm fedavg --stragglers 0 --set train.rounds=200\n"
               "  fedbench show --claims          # the claims of reports/claims.json under their counts; --verbose, --paper, ...\n"
               "  fedbench study list             # the claim studies: budgets, default or opt-in, cost\n"
               "  fedbench study run feddane_synthetic   # an opt-in claim study into results/ (then dvc repro reports it)\n"
               "  fedbench paper list             # the paper studies' cost: runs read, training/evaluation hours, measured or projected\n"
               "  fedbench paper cost --device cpu   # time each paper study at its shapes on generated data (reports/bench/)\n"
               "  fedbench ui --port 5000         # MLflow UI on http://127.0.0.1:5000\n"
               "  fedbench bench --quick          # simulator speed vs per-client loop and centralized\n"
               "  fedbench data show mnist5k_fedprox   # a real dataset's statistics (fetch, prepare: see `fedbench data -h`)\n",
    )
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    # --params is also accepted after the command (`fedbench check-config --params x`)
    params = argparse.ArgumentParser(add_help=False)
    params.add_argument("--params", default=argparse.SUPPRESS, help="params file (default: params.yaml)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("run", parents=[params], help="run one experiment from the config (all its seeds) and log it to MLflow")
    r.add_argument("--dataset", required=True, help="a name in data.datasets or data.real, e.g. synthetic_1_1, mnist5k_fedprox")
    r.add_argument("--algorithm", required=True, help="a variant in 'algorithms' (fedavg, fedprox_mu1), any registered "
                   "algorithm by name (scaffold: its hyperparameters by --set algorithms.scaffold.eta_g=...), or a class "
                   "of your own as package.module:Class (its variant named by the class)")
    r.add_argument("--stragglers", type=float, default=0.0, help="fraction of selected clients that straggle, in [0, 1]")
    r.add_argument("--seed", type=int, help="run only this seed (default: train.seeds)")
    r.add_argument("--study", default="adhoc", help="the study it belongs to: MLflow experiment train-STUDY (default: adhoc)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a params key, e.g. train.rounds=200")
    r.add_argument("--no-track", action="store_true", help="do not log to MLflow")
    r.set_defaults(fn=cmd_run)

    g = sub.add_parser("generate", parents=[params], help="generate synthetic datasets into data/generated/")
    g.add_argument("datasets", nargs="*", help="names (default: data.datasets)")
    g.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a params key, e.g. data.seed=1")
    g.set_defaults(fn=cmd_generate)

    rp = sub.add_parser("report", parents=[params], help="judge FedProx's real-data claims anew (as the stage "
                                                         "main_job does after the main job study) and rebuild reports/ "
                                                         "(figures, claims.json, claims.md) from results/")
    rp.add_argument("--out", default="reports", help="folder to write the report into: a new or empty one, or a "
                                                     "report folder (default: reports)")
    rp.set_defaults(fn=cmd_report)

    cp = sub.add_parser("compare", parents=[params], help="draw any selection of finished runs (mean over seeds, band "
                                                          "min..max) to a PNG, in the report's style")
    cp.add_argument("--dataset", nargs="+", default=[], help="datasets (default: every one the studies list)")
    cp.add_argument("--algorithm", nargs="+", default=[], help="algorithm variants, e.g. fedavg fedprox_mu1, or "
                    "algorithms as `fedbench run --algorithm` takes them (default: every variant)")
    cp.add_argument("--stragglers", nargs="+", type=float, default=[], help="straggler fractions (default: all)")
    cp.add_argument("--seed", nargs="+", type=int, default=[], help="seeds (default: train.seeds)")
    cp.add_argument("--metric", nargs="+", help="panels, e.g. train/loss test/accuracy train/dissimilarity "
                                                "(default: train/loss test/accuracy)")
    cp.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="the parameters whose runs are read, e.g. train.rounds=40 (default: params.yaml's)")
    cp.add_argument("--against", metavar="VARIANT", help="judge every other algorithm against this one as FedProx's "
                    "headline judges FedProx against FedAvg: the test-accuracy difference per seed (mean of the last "
                    "5 evaluations), its 95%% interval and the verdict of the headline's rule, per dataset and "
                    "straggler level")
    cp.add_argument("--out", default="compare.png", help="the PNG to write (default: compare.png)")
    cp.set_defaults(fn=cmd_compare)

    s = sub.add_parser("show", help="list tracked runs with their final metrics, or the claims' verdicts")
    s.add_argument("--experiment", help="only this MLflow experiment (e.g. train-stragglers)")
    s.add_argument("--claims", action="store_true", help="the claims' verdicts instead (OUT/claims.json): their counts, "
                   "then each claim with its effect, or why it did not run and the command that runs it, fit to the "
                   "terminal's width")
    s.add_argument("--paper", help="--claims: only this paper's claims (e.g. FedProx, SCAFFOLD)")
    s.add_argument("--verdict", help=f"--claims: only this verdict ({', '.join(VERDICTS)})")
    s.add_argument("--fidelity", help=f"--claims: only this fidelity ({', '.join(FIDELITIES)})")
    s.add_argument("--verbose", action="store_true", help="--claims: each claim's observation, rule, deviations, place "
                   "in the paper and what would change its verdict too")
    s.add_argument("--out", help="--claims: the report folder to read claims.json from (default: reports)")
    s.set_defaults(fn=cmd_show)

    u = sub.add_parser("ui", parents=[params], help="open the MLflow UI on 127.0.0.1 against the tracking store: a link "
                       "to each experiment's runs, and a chart link per headline comparison")
    u.add_argument("--port", type=int, default=5000, help="port on 127.0.0.1, 1..65535, free (default: 5000)")
    u.set_defaults(fn=cmd_ui)

    c = sub.add_parser("check-config", parents=[params], help="validate params.yaml and exit")
    c.set_defaults(fn=cmd_check)

    st = sub.add_parser("study", parents=[params], help="the claim studies: list them, or run one at any budget it "
                                                        "declares (what its DVC stage and `paper run` do)")
    st_sub = st.add_subparsers(dest="study_command", required=True, metavar="{list,run}")
    st_sub.add_parser("list", parents=[params], help="each claim study: its budgets, what runs it, its cost where known")
    sr = st_sub.add_parser(
        "run", parents=[params], help="run claim study NAME at a budget it declares (`fedbench study list`)",
        description="Run claim study NAME at BUDGET: the one code path of the DVC stage study@NAME and of `fedbench "
                    "paper run NAME`, into results/NAME/BUDGET/: one folder per (study, budget), so no budget replaces "
                    "another's output (the report reads a small study at the budget params.yaml gives it, else "
                    "pipeline; a paper-scale one at paper, else a budget that has run). A paper-scale study (real "
                    "data) reads its variants from data/real/ (`fedbench paper run NAME` fetches and builds them "
                    "first).")
    sr.add_argument("name", help="a claim study of fedbench/studies/ (`fedbench study list`)")
    sr.add_argument("--budget", help="a round budget the study declares (default: params.yaml claim_studies', else "
                                     "paper for a paper-scale study, else pipeline)")
    sr.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    st.set_defaults(fn=cmd_study)

    rg = sub.add_parser("regress", parents=[params], help="run the quick profile and compare key numbers with the committed reference")
    rg.add_argument("--update", action="store_true", help="regenerate the reference values from the pipeline")
    rg.set_defaults(fn=cmd_regress)

    d = sub.add_parser("data", help="real datasets: fetch, prepare, show (see `fedbench data --help`)", add_help=False)
    d.add_argument("data_args", nargs=argparse.REMAINDER)

    sub.add_parser("paper", help="the paper profile: real-data studies, their cost, running one (see `fedbench paper --help`)",
                   add_help=False).add_argument("paper_args", nargs=argparse.REMAINDER)

    sub.add_parser("claims", help="the claims' registered rules: `fedbench claims register`, `freeze`, `confirm` (see `fedbench claims "
                   "--help`)",
                   add_help=False).add_argument("claims_args", nargs=argparse.REMAINDER)

    b = sub.add_parser("bench", help="measure simulator throughput (see `fedbench bench --help`)", add_help=False)
    b.add_argument("bench_args", nargs=argparse.REMAINDER)
    b.set_defaults(fn=cmd_bench)
    return described(p)


def _rebuild_report(cfg, **where) -> None:
    """The report rebuilt (`fedbench report`, and after `fedbench paper run`, which takes it from here: the paper module
    stands below the report): every record rendered, each FedProx real-data study's its own claims.json
    (fedbench.studies.entries)."""
    from fedbench.report.build import build_report

    build_report(cfg, **where)


def _command_first(argv: list[str]) -> list[str]:
    """``argv`` with a leading ``--params FILE`` moved behind a command that parses its own arguments and reads a
    params file (`fedbench --params x data list` is `fedbench data --params x list`); ConfigError for one that reads
    none (claims register and freeze, bench)."""
    given, rest = [], argv
    while rest and (rest[0] == "--params" or rest[0].startswith("--params=")):  # the last one given wins
        given, rest = (rest[:1], rest[1:]) if "=" in rest[0] else (rest[:2], rest[2:])
    if not given:
        return argv
    if rest[:2] == ["claims", "confirm"]:
        return rest[:2] + given + rest[2:]
    if rest[:1] in (["data"], ["paper"]):
        return rest[:1] + given + rest[1:]
    if rest[:1] in (["claims"], ["bench"]):
        raise ConfigError(f"--params: `fedbench {rest[0]}` reads no params file; allowed: the command without --params")
    return argv


SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader closed the pipe


def main(argv: list[str] | None = None) -> None:
    """``fedbench``; output cut short by its reader (``fedbench show --claims | head``) ends quietly, exit
    SIGPIPE_EXIT, as a command killed by SIGPIPE would, not in a BrokenPipeError traceback."""
    try:
        _main(argv)
    except BrokenPipeError:
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)  # Python flushes stdout at exit: into nothing, not the closed pipe
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(SIGPIPE_EXIT)


def _main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        argv = _command_first(argv)
    except ConfigError as exc:
        refuse(exc)
    if argv[:1] == ["data"]:  # everything after `data` belongs to fedbench.data.cli's parser
        from fedbench.data.cli import main as data_main

        sys.exit(data_main(argv[1:]))
    if argv[:1] == ["paper"]:  # the paper profile's studies (fedbench.paper)
        from fedbench.paper import main as paper_main

        sys.exit(paper_main(argv[1:], report=_rebuild_report))
    if argv[:2] == ["claims", "confirm"]:  # confirmatory runs: reruns studies (fedbench.studies.confirm)
        from fedbench.studies.confirm import main as confirm_main

        sys.exit(confirm_main(argv[2:]))
    if argv[:1] == ["claims"]:  # the claims' registered rules (fedbench.claims.registry)
        from fedbench.claims.registry import main as claims_main
        from fedbench.studies.confirm import fresh_data  # which studies draw fresh data with a frozen block

        sys.exit(claims_main(argv[1:], lambda entry: fresh_data(str(entry.get("study", "")))))
    if argv[:1] == ["bench"]:  # everything after `bench` belongs to the benchmark's own parser
        from fedbench.bench.cli import main as bench_main

        sys.exit(bench_main(argv[1:]))
    args = build_parser().parse_args(argv)
    run_guarded(lambda: args.fn(args))


if __name__ == "__main__":
    main()

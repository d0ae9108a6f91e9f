"""``fedbench bench``: the command line. Parses its arguments without importing torch (``--help`` is instant),
then runs the parts asked for and prints, saves or reports the figures."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any

from fedbench.errors import ConfigError, check_folder

SCHEMA = "fedbench.bench/2"
PARTS = ("throughput", "workload", "executors", "steps", "proxies")
DEFAULT_PARTS = ("throughput", "workload")  # executors needs Ray (pip install -e '.[ray]')

DESCRIPTION = """\
How fast the simulator trains, measured on this machine (figures are per core with the default --threads 1).

throughput           for each model and cohort size, samples/s of one federated round through every
                      execution kernel that can run the model (the engine's schedule_round + run_round,
                      scheduling included), of centralized SGD at batch = cohort x 10, and the floor
                      max(FLOPs / peak, weight bytes / bandwidth), with peak matmul FLOP/s and memory
                      bandwidth measured in the same run.
workload             FedProx's synthetic study at the paper's settings (30 devices, K = 10, E = 20, batch 10,
                      lr 0.01; 140 runs: FedAvg, FedProx mu = 0 and 1, stragglers 0/10/50/90%, 4 datasets,
                      seeds 0-4) for R = 1, 15 and all runs: stacked (simulate_stack), one by one (simulate),
                      a plain numpy per-client loop, and the arithmetic floor; each run's first rounds are timed
                      and projected to 200 rounds. With CUDA, also a CNN study (10 clients per round).
steps                not by default: where a client step's time goes on the per-client loop:
                      autograd's gradients alone, placed into the cohort's rows (the kernel), with FedAvg's
                      update (the engine's step), the engine round, and an in-place update as headroom; ms
                      per client step and share of the FLOP floor (--models default leaf_femnist_cnn,cifar_cnn;
                      --cohorts default 10).
proxies              not by default: the GPU targets as counts measured exactly on the CPU
                      (fedbench.bench.proxies): host syncs a round and a block, ATen ops outside the local steps at
                      1, 10 and 100 runs, the synthetic study's chain, evaluation passes at 1 and 15 CNN runs, the
                      runs the dissimilarity is computed for; with the paper profile and the synthetic study priced
                      from their drawn schedules on the committed H200 calibration (fedbench.bench.drawn_cost);
                      printed as a table, each target met or not (about 3 min on 2 cores; --quick about 1 min).
executors            not by default: the regression's quick profile through the train stage on the local
                      process pool and as Ray tasks on a local Ray of as many CPUs, side by side: Ray's
                      start-up, seconds per unit (a stack of runs) and their ratio, no-op dispatch per unit.

Nothing is asserted: targets are printed as met or not. Timings on a machine shared with other jobs are not
publishable; the README written by --report states the load average at the start."""

EPILOG = """\
examples:
  fedbench bench --quick                          # both parts, short measurements (about 3 min on 2 cores)
  fedbench bench --quick --parts throughput --models mclr --cohorts 10,100
  fedbench bench --quick --json out/bench.json    # the figures as JSON
  fedbench bench --quick --parts executors        # ray vs local executor overhead (needs pip install -e '.[ray]')
  fedbench bench --parts proxies --json proxies.json   # the GPU targets as CPU counts, met or not
  fedbench bench --parts steps --cohorts 10,35    # where the papers' CNNs' client step spends its time
  fedbench bench --report                         # full run (about 10 min on CPU); writes reports/bench/
  fedbench bench --device cuda --threads 0 --report   # on a GPU; writes reports/bench-gpu/
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fedbench bench", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="short measurements: cohorts 10 and 100, CNN/LSTM clients run a few local steps instead of "
                        "an epoch, 1 measured round per run of the workload")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--report", nargs="?", const="", metavar="DIR",
                   help="write README.md (tables), bench.json and figures to DIR (default reports/bench, or "
                        "reports/bench-gpu on CUDA)")
    p.add_argument("--parts", default=",".join(DEFAULT_PARTS), metavar="NAME,...",
                   help=f"which measurements: {', '.join(PARTS)} (default {','.join(DEFAULT_PARTS)})")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (cuda if available; default)")
    p.add_argument("--models", metavar="NAME,...",
                   help="throughput: models to measure, of mclr, leaf_femnist_cnn, cifar_cnn, fedprox_shakespeare_lstm, "
                        "fedprox_sent140_lstm (fedbench.bench.federation.BENCH_MODELS; default all)")
    p.add_argument("--cohorts", metavar="K,...",
                   help="throughput: cohort sizes (default 10,100,1000; quick 10,100); a cohort whose models do "
                        "not fit in memory, or whose round's FLOP floor exceeds 20 s (quick 2 s), is skipped")
    p.add_argument("--rounds", type=int, metavar="M",
                   help="workload: rounds timed per run before projecting (default 3; quick 1)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: per-core figures, steadier on a shared machine; 0 = torch's "
                        "own choice)")
    p.add_argument("--min-time", type=float, metavar="S",
                   help="throughput: seconds of timed rounds per case (default 3; quick 0.5)")
    p.add_argument("--seed", type=int, default=0,
                   help="throughput: seed of the synthetic federations and schedules (the workload runs its "
                        "study's own seeds 0-4)")
    return p


def _fail(message: str) -> SystemExit:
    """A wrong argument: its one line on stderr, and exit 2 (as every fedbench command)."""
    print(f"fedbench bench: {message}", file=sys.stderr)
    return SystemExit(2)


def _int_list(text: str, flag: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise _fail(f"{flag} {text!r}: expected comma-separated integers") from None
    if not values or min(values) < 1:
        raise _fail(f"{flag} {text!r}: expected integers >= 1")
    return values


def _name_list(text: str, allowed: tuple[str, ...], flag: str) -> tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    for v in values:
        if v not in allowed:
            raise _fail(f"{flag}: unknown {v!r}; allowed: {', '.join(allowed)}")
    if not values:
        raise _fail(f"{flag} is empty")
    return values


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `fedbench bench -- --quick`
        argv = argv[1:]
    a = build_parser().parse_args(argv)
    parts = _name_list(a.parts, PARTS, "--parts")
    cohorts = _int_list(a.cohorts, "--cohorts") if a.cohorts else None
    if a.rounds is not None and a.rounds < 1:
        raise _fail(f"--rounds {a.rounds}: must be >= 1")
    if a.threads < 0:
        raise _fail(f"--threads {a.threads}: must be >= 0")
    if a.min_time is not None and not a.min_time >= 0:
        raise _fail(f"--min-time {a.min_time}: must be >= 0")
    if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", a.device):  # config.DEVICES: config imports yaml, which the
        # prepared GPU check's image lacks (fedbench.bench imports this module)
        raise _fail(f"--device {a.device!r}: allowed: auto, cpu, cuda, cuda:N")
    if a.report:
        try:
            check_folder("--report", a.report, "a folder for README.md, bench.json and figures")
        except ConfigError as exc:
            raise _fail(str(exc)) from None
    if a.json is not None and (not a.json.strip() or Path(a.json).is_dir()):
        raise _fail(f"--json {a.json!r}: allowed: a file path for the JSON results, e.g. bench.json")

    import torch

    import fedbench.bench.federation as federation
    from fedbench.engine.simulation import resolve_device

    models = _name_list(a.models, tuple(federation.BY_NAME), "--models") if a.models else None
    try:
        device = resolve_device(a.device)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if a.threads:
        torch.set_num_threads(a.threads)
    result = run(parts, device, a.quick, models, cohorts, a.rounds, a.min_time, a.seed, log)
    from fedbench.bench.report import print_summary, write_report

    print(print_summary(result))
    if a.report is not None:
        out = Path(a.report or ("reports/bench-gpu" if device.type == "cuda" else "reports/bench"))
        write_report(result, out, "fedbench bench " + " ".join(argv))
        log(f"wrote {out}/")
    if a.json:
        from fedbench.bench.report import to_json

        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(to_json(result))
        log(f"wrote {a.json}")
    return 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(parts: tuple[str, ...], device, quick: bool, models: tuple[str, ...] | None = None,
        cohorts: tuple[int, ...] | None = None, rounds: int | None = None, min_time: float | None = None,
        seed: int = 0, log=log) -> dict[str, Any]:
    """Measure ``parts`` on ``device`` and return the results (the JSON document)."""
    import dataclasses

    import torch

    import fedbench.bench.studies as studies
    import fedbench.bench.throughput as throughput
    import fedbench.bench.workload as workload
    from fedbench.bench.federation import BENCH_MODELS, BY_NAME
    from fedbench.bench.machine import environment, measure_machine

    t_start = time.perf_counter()
    env = environment(device)
    log(f"fedbench bench on {device} ({'quick' if quick else 'full'}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread(s))")
    machine = measure_machine(device, quick)
    log(f"  peak matmul {machine.peak_flops / 1e9:.1f} GFLOP/s, bandwidth {machine.bandwidth / 1e9:.1f} GB/s")
    result: dict[str, Any] = {"schema": SCHEMA, "quick": quick, "device": str(device), "environment": env,
                              "machine": machine.as_dict()}
    if "throughput" in parts:
        settings = throughput.QUICK if quick else throughput.FULL
        if min_time is not None:
            settings = dataclasses.replace(settings, min_time=min_time)
        specs = [BY_NAME[m] for m in models] if models else list(BENCH_MODELS)
        default_cohorts = throughput.COHORTS[:2] if quick else throughput.COHORTS
        result["throughput"] = throughput.measure_all(specs, cohorts or default_cohorts, device, machine, settings,
                                                      seed, log)
    if "workload" in parts:
        chosen = [studies.fedprox_study()] + ([studies.cnn_study()] if device.type == "cuda" else [])
        result["workloads"] = [workload.measure_workload(s, device, machine, rounds or (1 if quick else 3), log)
                               for s in chosen]
        result["workload_targets"] = [t for w in result["workloads"] for t in workload.check_targets(w)]
        result["workloads_skipped"] = [] if device.type == "cuda" else [
            {"name": "cnn_cifar_shaped", "reason": "the GPU study; this run has no CUDA"}]
    if "steps" in parts:
        import fedbench.bench.step_parts as step_parts

        names = models or step_parts.MODELS
        result["steps"] = []
        for name in names:
            for k in cohorts or (10,):
                c = step_parts.measure_steps(BY_NAME[name], k, device, machine, min_time or (0.5 if quick else 2.0))
                result["steps"].append(c)
                log(f"  {name} cohort {k}: " + ", ".join(f"{p} {c['ms_per_client_step'][p]:.1f} ms"
                                                          for p in step_parts.PARTS) + " a client step")
    if "proxies" in parts:
        import fedbench.bench.proxies as proxies

        result["proxies"] = proxies.measure(quick, log)
    if "executors" in parts:
        from fedbench.bench.executors import measure_executors

        result["executors"] = measure_executors(workers=2, repeats=1 if quick else 3, log=log)
    result["elapsed_s"] = time.perf_counter() - t_start
    log(f"done in {result['elapsed_s']:.0f} s")
    return result

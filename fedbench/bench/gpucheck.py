"""The prepared GPU check (issue 20): one command, run once whenever a GPU is lent, within a time budget.

    PYTHONPATH=. python -m fedbench.bench.gpucheck OUT_DIR --budget-s 420

It needs torch and numpy only (the GPU machines have torch with CUDA and numpy, no venv): it imports neither
MLflow nor DVC nor pytest, and nothing that draws figures. Its parts, in order, each given what is left of the
budget (a part or case that would not finish in it is skipped and listed as skipped):

1. **algorithms**: every registered algorithm (tests/algorithms/cases.py's configuration; the contract of
   tests/engine/test_gpu.py) simulated 4 rounds on generated Synthetic(1,1) with mclr, on the CPU and on CUDA,
   twice on CUDA: CUDA = CPU within rtol = atol = 1e-4 (theta and every round's training loss), CUDA = CUDA
   within atol 1e-6.
2. **models**: every paper model (:data:`PAPER_MODELS`), on random inputs of its real shape: each execution
   kernel's cohort gradient (3 clients, one with padding) on the device against the per-client loop on the CPU in
   float64, max |difference| <= 1e-4 x max |gradient| (float32, TF32 off); and 2 rounds of FedAvg through the
   engine (chosen kernel) on the device against the CPU: theta within rtol = atol = 1e-4.
3. **throughput**: ``fedbench bench``'s throughput part (every bench model, cohorts 10, 100 and 1000, quick
   local work: fedbench.bench.throughput), each case timed only if the budget still allows it.
4. **paper cost**: ``fedbench paper cost`` (fedbench.bench.paper_cost) for every paper study and stand-in in turn,
   each given at most ``--paper-max-seconds`` (default: what is left, split evenly over the studies not yet
   measured, x 0.7 for the setup's share; half of a unit's share times its stacks as the study runner makes
   them, fedbench.bench.paper_cost.measure_stacks); a study is skipped when under 5 s would be left for it. It writes
   ``paper-cost.json`` and ``paper-cost.md`` (copy them to ``reports/bench-gpu/`` for ``fedbench paper list
   --device cuda``). The FedProx studies are counted at 5 seeds (params.yaml's train.seeds: this machine has no
   PyYAML to read it).

5. **stacking** (on every device, before the timed parts): 3 FedProx runs of generated Synthetic(1,1) stacked
   (fedbench.engine.simulation.simulate_stack) against each run alone on the CPU: equal bit for bit (issue 31's
   "CPU: no number changes").
6. **workload** (CUDA only): ``fedbench bench --quick --parts workload --device cuda``'s two studies, FedProx's
   140-run synthetic study and the CIFAR-CNN study, stacked and one by one (fedbench.bench.workload; about 75 s
   on an H200), when at least :data:`WORKLOAD_MIN_S` are left; its JSON is ``workload.json``.
7. **syncs** (on every device, seconds): how often a round makes the host wait for the device, for every
   algorithm alone and 3 runs stacked (fedbench.bench.host_syncs; on CUDA with torch's own count of synchronising
   operations beside): a check each, passed where each further run adds only what
   fedbench.bench.host_syncs.PER_RUN declares and no copy to the device blocks. Its table is ``syncs.md``.
8. **proxies** (issue 49; fedbench.bench.gpu_proxies): the round of a 30-run stack with torch's syncs counted,
   one evaluation of 15 CIFAR-CNN models in one pass against a pass a model (their losses within 1e-4), a
   CIFAR-CNN chain step at 5 rows (FedLaAvg's sequential arm) against its price in the drawn profile, and the
   synthetic study stacked as today for up to 20 rounds projected by its chain, each printed beside its CPU proxy
   (fedbench.bench.proxies). Without CUDA: 3 runs, 3 models of a small federation, no GPU timing.
9. **capture** (optional): the engine's CUDA-graph capture checks, where the engine provides them: the function
   named by :data:`CAPTURE_HOOK` (``capture_check(device=...) -> dict``: differences against its GPU tolerance, and timings); skipped, and said so,
   where it does not exist.

10. **fused** (CUDA only; issue 53, item 6): each model family's fused step against the engine's static path on
   the card: mclr's step and round kernels on a real round of FedProx stacks at 1, 100 and 1,400 rows
   (fedbench.engine.fused.check), the CIFAR CNN's step at 1, 100 and 3,000 rows with its fraction of fp32 peak
   (fedbench.bench.fused_cnn_check), FedProx's Shakespeare LSTM step at 1 and 200 rows against the CPU, eager and
   its round captured in one CUDA graph and replayed (fedbench.bench.fused_rnn_check): launches and microseconds a
   chain step, each passed within 1e-4. Without CUDA each is listed as skipped: the interpreter tests
   (tests/engine/test_fused_*.py) make the same comparisons on the CPU at a few rows (the captured round excepted:
   tests/test_gpucheck_fused.py runs its comparison and judgement as far as a CPU can).
11. **precision** (issue 53, item 5; fedbench.bench.precision_check): each declared precision mode (tf32, bf16)
   against fp32, a model of each family (mclr, LEAF's FEMNIST CNN, FedProx's Shakespeare LSTM; mclr alone
   without CUDA), a short FedAvg run each: the final parameters' largest difference from fp32 relative to the
   largest parameter, passed where within the mode's declared tolerance (fedbench.engine.precision.TOLERANCE),
   and each mode's seconds on the card.

Then the **targets** (issue 31; reported, never asserted: :func:`targets`), printed and written as met, not met
or not measured: the paper profile as the study runner would run it (each study stacked,
fedbench.study.costs.stacked_cost, from the unit costs just measured) <= 8 GPU-hours, each study's figure
beside; FedProx's 140-run synthetic study stacked <= 60 s; the CIFAR-CNN study stacked at R = 15 >= 6x one by
one; the Shakespeare LSTM at cohort 100 >= 0.3 of centralized; a round's fixed cost (``round_s`` of the paper
studies' mclr units, the small model) <= 1 ms; and the CPU's numbers unchanged (the stacking part, and the
algorithms' CPU runs repeatable bit for bit).

Numerical contract on GPU: float32 throughout. The correctness parts (1, 2) run with TF32 off for matrix products
and cuDNN convolutions (``torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False``); the
CUDA results then equal the CPU reference within the tolerances above (reduction order differs, nothing else).
Part 2 also reports, not judges, each kernel's deviation with cuDNN's TF32 on (PyTorch's default for
convolutions: about 1e-3 relative). The throughput part runs PyTorch's defaults (TF32 off for matmul, on for cuDNN
convolutions), as the engine does unless told otherwise.

Without CUDA the same command runs its CPU part: the algorithms once each on the CPU (repeatable bit for bit),
the kernels against the loop on the CPU, and the throughput of mclr and the CIFAR CNN at cohort 10 (CI runs it so,
with a small budget). It writes at most these files into OUT_DIR: ``summary.md`` (what passed, what was skipped,
the throughput table), ``gpucheck.json`` (everything), ``gpu-tests.txt`` (one line per check), ``bench.json``
(the throughput in ``fedbench bench``'s JSON schema, for ``reports/bench-gpu/``), ``syncs.md`` and, where a study was
measured, ``paper-cost.json`` and ``paper-cost.md``. Exit status 0 when every check
that ran passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

PAPER_MODELS: tuple[tuple[str, tuple[int, ...], int, int | None, tuple[int, int] | None], ...] = (
    # (model, one sample's input shape, classes, token vocabulary (None: float inputs), frozen word table)
    ("mclr", (60,), 10, None, None),
    ("cifar_cnn", (3, 32, 32), 10, None, None),
    ("leaf_femnist_cnn", (1, 28, 28), 62, None, None),
    ("fedproxvr_cnn", (1, 28, 28), 10, None, None),
    ("deltafl_emnist_cnn", (1, 28, 28), 62, None, None),
    ("deltafl_emnist_linear", (784,), 62, None, None),
    ("scaffold_mlp", (784,), 47, None, None),
    ("deltafl_sent140_linear", (50,), 2, None, None),
    ("fedprox_shakespeare_lstm", (80,), 80, 80, None),
    ("fedprox_sent140_lstm", (25,), 2, 1000, (1000, 300)),  # speed and numbers do not depend on the table's rows
    ("deltafl_sent140_lstm", (25,), 2, 1000, (1000, 50)),
    ("deltafl_shakespeare_gru", (80,), 53, 53, None),
)
FILES = ("summary.md", "gpucheck.json", "gpu-tests.txt", "bench.json", "paper-cost.json", "paper-cost.md",
         "workload.json", "syncs.md")
PARTS = ("algorithms", "models", "stacking", "proxies", "syncs", "throughput", "workload", "paper_cost", "capture",
         "fused", "precision")
FUSED_ROWS = {"mclr": (1, 100, 1400), "cifar_cnn": (1, 100, 3000), "fedprox_shakespeare_lstm": (1, 200)}
CAPTURED_FUSED = ("fedprox_shakespeare_lstm",)  # also replayed from a CUDA graph (fedbench.bench.fused_rnn_check)
FUSED_TOL = 1e-4  # fused against the static path (the LSTM: against the CPU), absolute on the local state
PROXIES_SYNTHETIC_S = 45.0  # at most this long timing the synthetic study's first rounds (the proxies part)
WORKLOAD_MIN_S = 150.0  # the workload part runs only with this much left (75 s measured on an H200, x 2)
CAPTURE_HOOK = "fedbench.bench.capture_check:capture_check"  # the engine's CUDA-graph checks: one dict of figures
# issue 31's targets (reported, not asserted)
PROFILE_GPU_HOURS = 8.0
SYNTHETIC_STUDY_S = 60.0
CNN_STACK_SPEEDUP = 6.0
LSTM_OF_CENTRALIZED = 0.3
ROUND_FIXED_S = 1e-3
PAPER_SEEDS = 5  # params.yaml's train.seeds, for the FedProx studies' runs
PAPER_MIN_S = 5.0  # a study is measured only with at least this many seconds for it
SIM_TOL = 1e-4  # CUDA against CPU: theta and losses, rtol = atol (tests/engine/test_gpu.py)
REPEAT_TOL = 1e-6  # CUDA against CUDA
GRAD_TOL = 1e-4  # max |kernel - float64 loop| / max |gradient|


class Budget:
    def __init__(self, seconds: float) -> None:
        self.end = time.perf_counter() + seconds

    @property
    def left(self) -> float:
        return self.end - time.perf_counter()


class Log:
    """Checks as they run: one line each (gpu-tests.txt) and a record each (gpucheck.json)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.checks: list[dict[str, Any]] = []
        self.skipped: list[dict[str, str]] = []

    def check(self, part: str, name: str, ok: bool, detail: str, seconds: float) -> None:
        self.checks.append({"part": part, "name": name, "passed": bool(ok), "detail": detail, "seconds": round(seconds, 2)})
        self.lines.append(f"{'PASS' if ok else 'FAIL'} {part}/{name}: {detail} ({seconds:.1f} s)")
        print(self.lines[-1], flush=True)

    def skip(self, part: str, name: str, reason: str) -> None:
        self.skipped.append({"part": part, "name": name, "reason": reason})
        self.lines.append(f"SKIP {part}/{name}: {reason}")
        print(self.lines[-1], flush=True)


def _tf32(on: bool) -> None:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def _max_rel(a, b) -> float:
    scale = float(b.abs().max()) or 1.0
    return float((a.double().cpu() - b.double().cpu()).abs().max()) / scale


# ---- 1. algorithms -------------------------------------------------------------------------------------------

def check_algorithms(device, budget: Budget, log: Log) -> None:
    import numpy as np
    import torch

    from fedbench.algorithms import ALGORITHMS, build_algorithm
    from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.simulation import SimulationConfig, simulate
    from fedbench.models import build_model

    try:
        from tests.algorithms.cases import CASES
    except ImportError as exc:
        log.skip("algorithms", "all", f"tests/algorithms/cases.py not importable ({exc}); run from the repository root")
        return
    data = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)

    def run(name: str, dev: str):
        hyper, changes = CASES[name]
        cfg = SimulationConfig(rounds=4, clients_per_round=5, local_epochs=2, batch_size=10, straggler_fraction=0.3,
                               seed=5, device=dev, checkpoint_every=10_000)
        cfg, ds = dataclasses.replace(cfg, **changes), data
        if name == "sequential_sgd":
            cfg, ds = sequential_config(cfg, local_steps=4), pool_clients(ds)
        model = build_model("mclr", ds.feature_shape, ds.num_classes)
        return simulate(cfg, ds, model, build_algorithm(name, **({"lr": 0.05} | hyper)))

    for name in sorted(set(CASES) | set(ALGORITHMS)):
        if budget.left <= 0:
            log.skip("algorithms", name, "budget spent")
            continue
        if name not in CASES:
            log.check("algorithms", name, False, "registered but without a case in tests/algorithms/cases.py", 0.0)
            continue
        t0 = time.perf_counter()
        try:
            cpu = run(name, "cpu")
            if device.type == "cuda":
                gpu, again = run(name, str(device)), run(name, str(device))
                theta_err = float((gpu.theta.cpu() - cpu.theta).abs().max())
                close = torch.allclose(gpu.theta.cpu(), cpu.theta, rtol=SIM_TOL, atol=SIM_TOL)
                losses_close = np.allclose([r["train/loss"] for r in gpu.history], [r["train/loss"] for r in cpu.history],
                                           rtol=SIM_TOL)
                repeat = float((again.theta - gpu.theta).abs().max())
                ok = close and losses_close and repeat <= REPEAT_TOL and not gpu.diverged
                detail = (f"max |theta cuda - cpu| {theta_err:.1e} (tol {SIM_TOL:g}), losses within rtol {SIM_TOL:g}: "
                          f"{losses_close}, cuda repeat {repeat:.1e}")
            else:
                again = run(name, "cpu")
                ok = torch.equal(again.theta, cpu.theta) and not cpu.diverged
                detail = "CPU only (no CUDA): repeatable bit for bit" if ok else "CPU runs differ"
        except Exception as exc:  # noqa: BLE001 - a failing algorithm is a failed check, the others go on
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        log.check("algorithms", name, ok, detail, time.perf_counter() - t0)


# ---- 2. models -----------------------------------------------------------------------------------------------

def _bench_spec(name: str, shape, classes: int, vocab, table):
    from fedbench.bench.federation import BenchModel

    return BenchModel(name, tuple(shape), classes, quick_steps=1, vocabulary=vocab, embedding=table)


def check_models(device, budget: Budget, log: Log) -> None:
    import torch

    from fedbench.algorithms import build_algorithm
    from fedbench.bench.federation import make_federation
    from fedbench.bench.machine import synthetic_inputs
    from fedbench.engine.kernels import KERNELS, kernel_names
    from fedbench.engine.simulation import SimulationConfig, simulate
    from fedbench.seeding import torch_generator

    for name, shape, classes, vocab, table in PAPER_MODELS:
        if budget.left <= 0:
            log.skip("models", name, "budget spent")
            continue
        spec = _bench_spec(name, shape, classes, vocab, table)
        try:
            model = spec.build()
        except Exception as exc:  # noqa: BLE001
            log.check("models", name, False, f"cannot be built: {type(exc).__name__}: {exc}", 0.0)
            continue
        k, b = 3, 4
        x, y = synthetic_inputs(model, spec.feature_shape, classes, k * b, torch_generator(0, -1, "data", 3), vocab)
        x, y = x.view(k, b, *x.shape[1:]), y.view(k, b)
        valid = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 1, 1]], dtype=torch.float32)
        w = valid / valid.sum(1, keepdim=True)
        theta = torch.stack([model.init(torch_generator(0, -1, "init", i)) for i in range(k)])
        model64 = dataclasses.replace(model, frozen={n: t.double() for n, t in model.frozen.items()})
        x64 = x.double() if x.is_floating_point() else x
        reference = KERNELS["loop"](model64).grad(theta.double(), x64, y, w.double())
        for kernel_name in kernel_names(model):
            if device.type == "cpu" and kernel_name == "loop":
                continue
            t0 = time.perf_counter()
            try:
                dev_model = model.to(device)
                kernel = KERNELS[kernel_name](dev_model)
                xd = kernel.prepare(x.reshape(k * b, *x.shape[2:]).to(device))
                xd = xd.view(k, b, *xd.shape[1:])
                errors = {}
                for tf32 in ((False, True) if device.type == "cuda" else (False,)):
                    _tf32(tf32)
                    got = kernel.grad(theta.to(device), *kernel.batch(xd, y.to(device), w.to(device)))
                    errors[tf32] = _max_rel(got, reference)
                _tf32(False)
                ok = errors[False] <= GRAD_TOL
                detail = f"{kernel_name} on {device.type}: max |g - float64 loop| / max |g| {errors[False]:.1e} (tol {GRAD_TOL:g})"
                if True in errors:
                    detail += f"; with cuDNN TF32 on {errors[True]:.1e} (reported)"
            except Exception as exc:  # noqa: BLE001
                ok, detail = False, f"{kernel_name}: {type(exc).__name__}: {exc}"
            log.check("models", f"{name}/{kernel_name}", ok, detail, time.perf_counter() - t0)
        if device.type != "cuda":
            continue
        t0 = time.perf_counter()
        try:
            ds = make_federation(spec, model, 4, seed=0)
            cfg = SimulationConfig(rounds=2, clients_per_round=4, local_epochs=1, batch_size=10, seed=3, device="cpu",
                                   local_steps=2, checkpoint_every=10_000)
            cpu = simulate(cfg, ds, model, build_algorithm("fedavg", lr=0.01))
            gpu = simulate(dataclasses.replace(cfg, device=str(device)), ds, model, build_algorithm("fedavg", lr=0.01))
            err = float((gpu.theta.cpu() - cpu.theta).abs().max())
            ok = torch.allclose(gpu.theta.cpu(), cpu.theta, rtol=SIM_TOL, atol=SIM_TOL)
            detail = (f"2 rounds of FedAvg, kernel {gpu.kernel} on cuda, {cpu.kernel} on cpu: max |theta cuda - cpu| "
                      f"{err:.1e} (tol {SIM_TOL:g})")
        except Exception as exc:  # noqa: BLE001
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        log.check("models", f"{name}/engine", ok, detail, time.perf_counter() - t0)


# ---- 3. throughput -------------------------------------------------------------------------------------------

def measure_throughput(device, budget: Budget, log: Log, cohorts: tuple[int, ...], models: tuple[str, ...]) -> dict:
    from fedbench.bench.federation import BY_NAME
    from fedbench.bench.machine import measure_machine, train_flops_per_sample
    from fedbench.bench.throughput import (
        CLIENT_BATCH,
        LR,
        Settings,
        check_targets,
        does_not_fit,
        measure_case,
        too_slow,
    )
    from fedbench.engine.kernels.host_memory import release_freed_memory
    from fedbench.engine.kernels.measured import table_from_cases

    settings = Settings(quick=True, min_time=0.3, max_reps=3, max_floor_s=2.0)
    machine = measure_machine(device, quick=True)
    cases, skipped = [], []
    for name in models:
        spec = BY_NAME[name]
        try:
            model = spec.build()
            flops = train_flops_per_sample(model, spec.feature_shape, spec.num_classes, CLIENT_BATCH, spec.vocabulary)
        except Exception as exc:  # noqa: BLE001
            skipped.append({"model": name, "reason": f"cannot be built: {type(exc).__name__}: {exc}"})
            continue
        for k in cohorts:
            reason = does_not_fit(model, k, device) or too_slow(spec, flops, k, machine, settings)
            if reason is None and budget.left <= (10 if device.type == "cuda" else 0):
                reason = "budget spent"
            if reason:
                skipped.append({"model": name, "cohort": k, "reason": reason})
                log.skip("throughput", f"{name}/{k}", reason)
                continue
            t0 = time.perf_counter()
            try:
                c = measure_case(spec, model, k, device, machine, settings, flops=flops)
            except Exception as exc:  # noqa: BLE001 - an out-of-memory, say: listed, the others go on
                skipped.append({"model": name, "cohort": k, "reason": f"{type(exc).__name__}: {exc}"})
                log.skip("throughput", f"{name}/{k}", f"{type(exc).__name__}: {str(exc)[:200]}")
                _empty_cache(device)
                continue
            release_freed_memory()
            cases.append(c)
            chosen = c["chosen_kernel"]
            print(f"  throughput {name} cohort {k}: {chosen} {c['kernels'][chosen]['samples_per_s']:.0f} samples/s, "
                  f"{c['chosen_over_loop']:.2f}x the loop, {c['chosen_over_centralized']:.2f} of centralized "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            _empty_cache(device)
    return {"machine": machine.as_dict(), "throughput": {
        "cases": cases, "skipped": skipped, "targets": check_targets(cases), "settings": dataclasses.asdict(settings),
        "client_batch": CLIENT_BATCH, "lr": LR, "kernel_table": table_from_cases(cases)}}


def _empty_cache(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.empty_cache()


# ---- 4. paper cost -------------------------------------------------------------------------------------------

def measure_paper_cost(device, budget: Budget, log: Log, out_dir: Path, max_seconds: float | None = None) -> dict | None:
    """Every paper study measured in turn (fedbench.bench.paper_cost.run, one timed round a run) into ``out_dir``;
    each given ``max_seconds`` or its even share of what is left; the last file's content, None if none ran."""
    from fedbench.bench import paper_cost
    from fedbench.study.paper_profile import study_scales

    scales = study_scales(PAPER_SEEDS)
    result = None
    for i, (name, study) in enumerate(scales.items()):
        share = min(max_seconds or max(0.7 * budget.left / (len(scales) - i), PAPER_MIN_S), 0.7 * budget.left)
        if share < PAPER_MIN_S:
            log.skip("paper_cost", name, f"budget spent ({max(budget.left, 0):.0f} s left)")
            continue
        t0 = time.perf_counter()
        try:
            result = paper_cost.run({name: study}, device.type, out_dir, share, rounds=1, progress=lambda m: None)
        except Exception as exc:  # noqa: BLE001
            log.check("paper_cost", name, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
            continue
        p = result["studies"][name]["projection"]
        log.check("paper_cost", name, True, f"{p['hours']:,.2f} h projected ({p['runs']} runs read; at most "
                  f"{share:.0f} s)", time.perf_counter() - t0)
    return result


# ---- 5. stacking, 6. workload, 7. capture -------------------------------------------------------------------

def check_stacking(budget: Budget, log: Log) -> None:
    """3 FedProx runs stacked against each alone, on the CPU: equal bit for bit."""
    import torch

    from fedbench.algorithms import build_algorithm
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack
    from fedbench.models import build_model

    if budget.left <= 0:
        log.skip("stacking", "cpu", "budget spent")
        return
    t0 = time.perf_counter()
    try:
        data = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.5, min_samples=20)
        model = build_model("mclr", data.feature_shape, data.num_classes)
        cfgs = [SimulationConfig(rounds=3, clients_per_round=5, local_epochs=2, batch_size=10, straggler_fraction=0.5,
                                 seed=seed, device="cpu", checkpoint_every=10_000) for seed in (0, 1, 2)]
        algorithm = build_algorithm("fedprox", lr=0.05, mu=1.0)
        stacked = simulate_stack(model, [RunSpec(c, data, algorithm) for c in cfgs])
        alone = [simulate(c, data, model, algorithm) for c in cfgs]
        ok = all(torch.equal(a.theta, b.theta) for a, b in zip(stacked, alone))
        detail = f"3 FedProx runs stacked = each alone on the CPU, bit for bit: {ok}"
    except Exception as exc:  # noqa: BLE001
        ok, detail = False, f"{type(exc).__name__}: {exc}"
    log.check("stacking", "cpu", ok, detail, time.perf_counter() - t0)


def check_syncs(device, budget: Budget, log: Log, out_dir: Path) -> list[dict] | None:
    """Every algorithm's waits for the device a round, alone and stacked (fedbench.bench.host_syncs), into
    ``syncs.md``."""
    from fedbench.bench import host_syncs

    try:
        from tests.algorithms.cases import CASES
    except ImportError as exc:
        log.skip("syncs", "all", f"tests/algorithms/cases.py not importable ({exc}); run from the repository root")
        return None
    rows = []
    for name in sorted(CASES):
        if budget.left <= 0:
            log.skip("syncs", name, "budget spent")
            continue
        t0 = time.perf_counter()
        try:
            found = host_syncs.measure({name: CASES[name]}, str(device))
        except Exception as exc:  # noqa: BLE001 - one algorithm failing leaves the others
            log.check("syncs", name, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
            continue
        for r in found:
            rows.append(r)
            torch_count = "" if r["alone"]["torch"] is None else \
                f"; torch's syncs {r['alone']['torch']:g} alone, {r['stacked']['torch']:g} stacked"
            log.check("syncs", name, r["as_declared"], f"waits a round: {r['alone']['reads'] + r['alone']['copies']} "
                      f"alone, {r['stacked']['reads'] + r['stacked']['copies']} with {host_syncs.STACKED} runs stacked, "
                      f"{r['per_run']:g} a further run (declared {host_syncs.PER_RUN.get(name, 0)}){torch_count}",
                      time.perf_counter() - t0)
    (out_dir / "syncs.md").write_text("\n".join(["# Waits for the device in a round between evaluations", "",
                                                 f"Device {device}; fedbench.bench.host_syncs says how they are "
                                                 "counted.", ""] + host_syncs.table(rows)) + "\n")
    return rows


def measure_workloads(device, budget: Budget, log: Log, out_dir: Path) -> dict | None:
    """``fedbench bench --quick --parts workload`` on CUDA (both studies, 1 measured round a run), written to
    ``out_dir``/workload.json; None where skipped."""
    if device.type != "cuda":
        log.skip("workload", "all", "no CUDA: `fedbench bench --parts workload` measures the CPU's (minutes on 2 cores)")
        return None
    if budget.left < WORKLOAD_MIN_S:
        log.skip("workload", "all", f"{max(budget.left, 0):.0f} s left, under {WORKLOAD_MIN_S:.0f} s")
        return None
    from fedbench.bench import studies, workload
    from fedbench.bench.cli import SCHEMA
    from fedbench.bench.machine import environment, measure_machine

    t0 = time.perf_counter()
    machine = measure_machine(device, quick=True)
    found = [workload.measure_workload(s, device, machine, 1, lambda m: print(m, flush=True))
             for s in (studies.fedprox_study(), studies.cnn_study())]
    result = {"schema": SCHEMA, "quick": True, "device": str(device), "environment": environment(device),
              "machine": machine.as_dict(), "workloads": found,
              "workload_targets": [t for w in found for t in workload.check_targets(w)]}
    (out_dir / "workload.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
    log.check("workload", "all", True, f"{len(found)} studies measured", time.perf_counter() - t0)
    return result


def check_proxies(device, budget: Budget, log: Log) -> dict | None:
    """Issue 49's items (fedbench.bench.gpu_proxies), each beside its CPU proxy."""
    from fedbench.bench import gpu_proxies

    cuda = device.type == "cuda"
    import torch

    card = torch.cuda.get_device_name(device) if cuda else str(device)
    found: dict[str, Any] = {}
    from fedbench.bench.proxies import RoundSetup

    small = RoundSetup(devices=10, clients_per_round=3)  # the CPU part: seconds, as CI runs it
    items = (("round_fixed", lambda: gpu_proxies.round_fixed(device, *((30, 20, None) if cuda else (3, 3, small)))),
             ("stacked_evaluation", lambda: gpu_proxies.stacked_evaluation(
                 device, *((15, 5, 1.0) if cuda else (3, 1, 0.05)))),
             ("cnn_step", lambda: gpu_proxies.cnn_step(device)),
             ("synthetic_study", lambda: gpu_proxies.synthetic_study(device, min(PROXIES_SYNTHETIC_S, budget.left / 2))))
    for name, measure in items:
        if name in ("cnn_step", "synthetic_study") and not cuda:
            log.skip("proxies", name, "no CUDA: a GPU timing (the CPU counts its proxy: `fedbench bench --parts "
                     "proxies`)")
            continue
        if budget.left <= 0:
            log.skip("proxies", name, "budget spent")
            continue
        t0 = time.perf_counter()
        try:
            found[name] = measure()
        except Exception as exc:  # noqa: BLE001 - one item failing leaves the others
            log.check("proxies", name, False, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)
            continue
        text = gpu_proxies.lines({name: found[name]}, card)[0]
        ok = name != "stacked_evaluation" or found[name]["max_abs_loss_difference"] <= SIM_TOL
        log.check("proxies", name, ok, text, time.perf_counter() - t0)
    return found


def check_capture(device, budget: Budget, log: Log) -> None:
    """The engine's CUDA-graph capture checks (:data:`CAPTURE_HOOK`), where the engine has them."""
    import importlib

    module, name = CAPTURE_HOOK.split(":")
    try:
        hook = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        log.skip("capture", "all", f"the engine has no {CAPTURE_HOOK} yet")
        return
    if device.type != "cuda" or budget.left <= 0:
        log.skip("capture", "all", "no CUDA" if device.type != "cuda" else "budget spent")
        return
    t0 = time.perf_counter()
    out = hook(device=device.type)
    if "skipped" in out:
        log.skip("capture", "all", str(out["skipped"]))
        return
    tol = out["tolerance"]
    seconds = time.perf_counter() - t0
    for key in ("max_abs_captured_vs_static", "max_abs_captured_vs_ragged", "max_abs_simulation_captured_vs_none"):
        log.check("capture", key.removeprefix("max_abs_"), out[key] <= tol, f"max |diff| {out[key]:.3g} (<= {tol:g})",
                  seconds)
    timing = ", ".join(f"{m}: {out[f'round_ms_{m}']:.2f} ms a round, {out[f'step_us_{m}']:.1f} us a step"
                       for m in ("none", "static", "cuda_graph") if f"round_ms_{m}" in out)
    log.check("capture", "timing", True, f"{out['runs']} runs x {out['clients_per_run']} clients: {timing}", 0.0)


# ---- the targets ---------------------------------------------------------------------------------------------

def _fused_mclr(rows: int, device) -> dict:
    """mclr's fused step and round on the last round of FedProx stacks of ``rows`` client rows on ``device``."""
    from fedbench.algorithms import build_algorithm
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.fused import check
    from fedbench.engine.simulation import RunSpec, SimulationConfig
    from fedbench.models import build_model

    data = generate_synthetic(1, 1, num_devices=30, seed=0)
    model = build_model("mclr", data.feature_shape, data.num_classes)
    per_run = min(rows, 10)
    cfg = SimulationConfig(rounds=1, clients_per_round=per_run, local_epochs=1, batch_size=10, device=str(device),
                           capture="static", dissimilarity_every=0, checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.01, mu=1.0))
             for s in range(max(1, rows // per_run))]
    args, reference = check.last_round(model, specs)
    return check.compare(args, reference)


def fused_verdict(out: dict[str, dict]) -> tuple[bool, str]:
    """Part 10's judgement of one family and size from its comparison ({path: row}, the static reference's row left
    out): passed where every path that ran is within :data:`FUSED_TOL` of the reference and at least one ran; the
    detail gives each path's difference, launches and microseconds a chain step (and fraction of fp32 peak where
    measured), or why it was skipped (the captured LSTM round off CUDA)."""
    paths = {k: v for k, v in out.items() if k != "static"}
    ran = {k: v for k, v in paths.items() if "skipped" not in v}
    ok = bool(ran) and all(v["max_abs_diff"] <= FUSED_TOL for v in ran.values())
    detail = "; ".join(
        f"{k}: skipped ({v['skipped']})" if "skipped" in v else
        f"{k}: {v['max_abs_diff']:.1e} from the reference, "
        f"{v.get('launches_per_chain_step', v.get('launches_per_step')):g} launches and "
        f"{v.get('us_per_chain_step', v.get('us_per_step', float('nan'))):.1f} us a chain step"
        + (f", {v['fraction_of_peak']:.1%} of fp32 peak" if "fraction_of_peak" in v else "")
        + (f", its tiles issue {v['issued_over_training_flops']:.2f}x the training FLOPs"
           if "issued_over_training_flops" in v else "")
        for k, v in paths.items())
    return ok, detail


def check_fused(device, budget: Budget, log: Log) -> list[dict]:
    """Part 10: each family's fused step against the static path at the rows of :data:`FUSED_ROWS` (CUDA only)."""
    found: list[dict] = []
    if device.type != "cuda":
        for name, rows in FUSED_ROWS.items():
            captured = " (eager, and its round captured in one CUDA graph)" if name in CAPTURED_FUSED else ""
            log.skip("fused", name, f"no CUDA: at {', '.join(map(str, rows))} rows on a card{captured}; the interpreter "
                                    "tests (tests/engine/test_fused_*.py) make the same comparisons on the CPU")
        return found
    from fedbench.bench.fused_cnn_check import compare as cnn_compare
    from fedbench.bench.fused_rnn_aot import PAPER_MODELS, _model
    from fedbench.bench.fused_rnn_check import compare as rnn_compare
    from fedbench.bench.fused_rnn_check import draw_round
    from fedbench.bench.machine import measure_machine
    from fedbench.models import build_model

    peak = measure_machine(device, quick=True).peak_flops
    for name, all_rows in FUSED_ROWS.items():
        for rows in all_rows:
            if budget.left <= 0:
                log.skip("fused", f"{name}@{rows}", "budget spent")
                continue
            t0 = time.perf_counter()
            try:
                if name == "mclr":
                    out = _fused_mclr(rows, device)
                elif name == "cifar_cnn":
                    out = cnn_compare(build_model("cifar_cnn", (3, 32, 32), 10), rows, peak_flops=peak, device=device)
                else:
                    _, seq, batch = PAPER_MODELS[name]
                    out = rnn_compare(draw_round(_model(name), rows, 2, batch, seq), device)
                ok, detail = fused_verdict(out)
                found.append({"model": name, "rows": rows, **out})
            except Exception as exc:  # noqa: BLE001 - one size failing leaves the others
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            log.check("fused", f"{name}@{rows}", ok, detail, time.perf_counter() - t0)
            _empty_cache(device)
    return found


def check_precision(device, budget: Budget, log: Log) -> list[dict]:
    """Part 11: each declared precision mode against fp32, a model of each family (mclr alone without CUDA)."""
    from fedbench.bench.federation import bench_model
    from fedbench.bench.precision_check import FAMILIES, compare, lines

    found = []
    for name in FAMILIES if device.type == "cuda" else FAMILIES[:1]:
        if budget.left <= 0:
            log.skip("precision", name, "budget spent")
            continue
        t0 = time.perf_counter()
        result = compare(bench_model(name), str(device))
        found.append(result)
        ok = all(row.get("within", True) for row in result["modes"].values())
        log.check("precision", name, ok, "; ".join(lines(result)), time.perf_counter() - t0)
    _tf32(False)  # as every other part runs
    return found


def targets(result: dict) -> list[dict[str, Any]]:
    """Issue 31's targets from what the check measured: rows of target, measured (text) and met (True, False, or
    None: not measured here)."""
    from fedbench.study.costs import study_cost
    from fedbench.study.paper_profile import PAPER_CLAIM_STUDIES, PROFILES, study_scales

    device = result["environment"]["device"]
    card = result["environment"].get("device_name", device)
    rows: list[dict[str, Any]] = []

    def row(target: str, measured: float | None, text: str, met, figure: bool = False) -> None:
        rows.append({"target": target, "measured": text if measured is not None else "not measured",
                     "met": None if measured is None or figure else bool(met), "figure": figure})

    cost = result.get("paper_cost") if device == "cuda" else None
    names = PROFILES["paper"] + list(PAPER_CLAIM_STUDIES)
    scales = study_scales(PAPER_SEEDS)
    per_study = {}
    if cost:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:  # study_cost reads a paper-cost.json: this run's
            (Path(tmp) / "paper-cost.json").write_text(json.dumps(cost))
            # the one figure: each study's drawn schedule priced on this card's unit costs (fedbench.study.costs)
            per_study = {n: study_cost(n, scales[n], "cuda", Path(tmp))["hours"]
                         for n in names if n in cost["studies"]}
    for n in names:
        h = per_study.get(n)
        row(f"paper profile: {n}, drawn schedule, GPU-h ({card})", h, f"{h:,.2f}" if h is not None else "", None, figure=True)
    complete = len(per_study) == len(names)
    total = sum(per_study.values()) if complete else None
    row(f"paper profile as the study runner runs it <= {PROFILE_GPU_HOURS:g} GPU-h ({card})", total,
        f"{total:,.1f} GPU-h" if total is not None else "", total is not None and total <= PROFILE_GPU_HOURS)
    subsets = {w["name"]: w["subsets"] for w in (result.get("workload") or {}).get("workloads", [])}
    whole = subsets.get("fedprox_synthetic", {}).get("all")
    s = whole["stacked"]["projected_s"] if whole else None
    row(f"FedProx's 140-run synthetic study, stacked <= {SYNTHETIC_STUDY_S:g} s ({card})", s,
        f"{s:,.0f} s" if s is not None else "", s is not None and s <= SYNTHETIC_STUDY_S)
    r15 = subsets.get("cnn_cifar_shaped", {}).get("R = 15")
    x = r15["one_by_one"]["projected_s"] / r15["stacked"]["projected_s"] if r15 else None
    row(f"CIFAR-CNN study stacked at R = 15 >= {CNN_STACK_SPEEDUP:g}x one by one ({card})", x,
        f"{x:.1f}x" if x is not None else "", x is not None and x >= CNN_STACK_SPEEDUP)
    cases = (result.get("bench") or {}).get("throughput", {}).get("cases", []) if device == "cuda" else []
    lstm = next((c for c in cases if c["model"] == "fedprox_shakespeare_lstm" and c["cohort"] == 100), None)
    f = lstm["chosen_over_centralized"] if lstm else None
    row(f"Shakespeare LSTM, cohort 100 >= {LSTM_OF_CENTRALIZED:g} of centralized ({card})", f,
        f"{f:.2f} ({lstm['chosen_kernel']})" if lstm else "", f is not None and f >= LSTM_OF_CENTRALIZED)
    small = [u["round_s"] for st in (cost or {}).get("studies", {}).values() for k, u in st["units"].items()
             if k.startswith("mclr@")]
    worst = max(small) if small else None
    row(f"a round's fixed cost <= {ROUND_FIXED_S * 1e3:g} ms, small model (mclr units' round_s) ({card})", worst,
        f"{worst * 1e3:.1f} ms (largest of {len(small)})" if small else "", worst is not None and worst <= ROUND_FIXED_S)
    found = result.get("proxies") or {}
    rf = (found.get("round_fixed") or {}) if device == "cuda" else {}
    rs = rf.get("round_s")
    row(f"GPU target: a round of a 30-run stack <= {ROUND_FIXED_S * 1e3:g} ms ({card}; CPU proxy: "
        f"{rf.get('cpu_ops_outside_steps', '-')} ops outside the steps)", rs, f"{(rs or 0) * 1e3:.2f} ms",
        rs is not None and rs <= ROUND_FIXED_S)
    ev = (found.get("stacked_evaluation") or {}) if device == "cuda" else {}
    gain = ev["pass_a_model_s"] / ev["one_pass_s"] if ev else None
    row(f"GPU target: 15 CNN models evaluated in one pass, x faster than a pass a model ({card})", gain,
        f"{gain:.1f}x" if gain else "", None, figure=True)
    syn = found.get("synthetic_study") or {}
    ps = syn.get("projected_s")
    row(f"GPU target: FedProx synthetic study from its chain <= {SYNTHETIC_STUDY_S:g} s ({card})", ps,
        f"{ps:,.0f} s ({syn['projected_one_stack_s']:,.0f} s as one stack)" if ps is not None else "",
        ps is not None and ps <= SYNTHETIC_STUDY_S)
    cpu = [c for c in result.get("checks", []) if c["part"] == "stacking"]
    same = all(c["passed"] for c in cpu) if cpu else None
    row("CPU: no number changes (stacked = alone bit for bit)", same,
        ("equal" if same else "differ") if cpu else "", same)
    return rows


def targets_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| target | measured | met |", "|---|---|---|"]
    for r in rows:
        met = ("-" if r.get("figure") and r["measured"] != "not measured" else "not measured" if r["met"] is None
               else "met" if r["met"] else "not met")
        lines.append(f"| {r['target']} | {r['measured']} | {met} |")
    return lines


# ---- the command ---------------------------------------------------------------------------------------------

def summary(result: dict) -> str:
    from fedbench.bench.report import targets_table, throughput_table

    env = result["environment"]
    name = f" ({env['device_name']}, {env['device_memory_gib']} GiB)" if "device_name" in env else ""
    checks = result["checks"]
    failed = [c for c in checks if not c["passed"]]
    machine = (f"Device {env['device']}{name}; torch {env['torch']}, CUDA {env.get('cuda')}, numpy {env['numpy']}; "
               f"{env['date']}; budget {result['budget_s']:.0f} s, used {result['elapsed_s']:.0f} s.")
    counts = (f"{len(checks)} checks ran, {len(failed)} failed, {len(result['skipped'])} skipped (gpu-tests.txt has "
              "one line each).")
    lines = [f"# fedbench GPU check: {'all checks passed' if not failed else f'{len(failed)} check(s) failed'}", "",
             machine, "", counts, ""]
    for c in failed:
        lines.append(f"- FAIL {c['part']}/{c['name']}: {c['detail']}")
    if result.get("targets"):
        lines += ["", "## Targets (issue 31; reported, not asserted)", ""] + targets_lines(result["targets"])
    if result.get("bench", {}).get("throughput", {}).get("cases"):
        lines += ["", "## Throughput", ""] + throughput_table(result["bench"]["throughput"]["cases"])
        lines += ["", "Targets (issues 9 and 20; reported, not asserted):", ""]
        lines += targets_table(result["bench"]["throughput"]["targets"], "case")
    if result.get("paper_cost"):
        from fedbench.bench.paper_cost import markdown

        lines += ["", markdown(result["paper_cost"]).replace("# Paper studies", "## Paper studies", 1)]
    lines += ["", "Numerical contract and method: the docstring of fedbench/bench/gpucheck.py."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fedbench.bench.gpucheck", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", type=Path, help=f"folder for the files it writes (created; at most {len(FILES)} files)")
    p.add_argument("--budget-s", type=float, default=420.0, help="seconds for the whole check (default 420)")
    p.add_argument("--parts", default=",".join(PARTS), help=f"which parts, in order (default all: {','.join(PARTS)})")
    p.add_argument("--paper-max-seconds", type=float, default=None, help="seconds a paper study may take in the "
                   "paper_cost part (default: what is left, split evenly over the studies)")
    args = p.parse_args(argv)
    parts = [s for s in args.parts.split(",") if s]
    unknown = set(parts) - set(PARTS)
    if unknown:
        p.error(f"--parts: unknown {', '.join(sorted(unknown))}; allowed: {', '.join(PARTS)}")
    if args.budget_s <= 0:
        p.error("--budget-s must be positive")
    if args.paper_max_seconds is not None and args.paper_max_seconds <= 0:
        p.error("--paper-max-seconds must be positive")

    import torch

    start = time.perf_counter()
    budget = Budget(args.budget_s)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    if not cuda:
        torch.set_num_threads(1)
    _tf32(False)
    log = Log()
    from fedbench.bench.machine import environment as machine_environment

    result: dict[str, Any] = {"schema": "fedbench.gpucheck/1", "budget_s": args.budget_s, "environment": machine_environment(device)}
    args.out_dir.mkdir(parents=True, exist_ok=True)

    def write() -> None:
        result.update(checks=log.checks, skipped=log.skipped, elapsed_s=time.perf_counter() - start)
        result["targets"] = targets(result)
        (args.out_dir / "gpu-tests.txt").write_text("\n".join(log.lines) + "\n")
        (args.out_dir / "gpucheck.json").write_text(json.dumps(result, indent=1, default=str) + "\n")
        (args.out_dir / "summary.md").write_text(summary(result))

    # of what is left at its start (the throughput part leaves at least 30% to the paper cost)
    shares = {"algorithms": 0.2, "models": 0.25, "stacking": 0.1, "proxies": 0.35, "syncs": 0.1, "throughput": 0.5, "workload": 0.6, "paper_cost": 0.9,
              "capture": 0.5, "fused": 0.6, "precision": 1.0}
    for part in parts:
        part_budget = Budget(max(0.0, budget.left * shares[part]))
        try:
            if part == "algorithms":
                check_algorithms(device, part_budget, log)
            elif part == "models":
                check_models(device, part_budget, log)
            elif part == "throughput":
                cohorts, models = ((10, 100, 1000), tuple(m[0] for m in _bench_models())) if cuda else \
                    ((10,), ("mclr", "cifar_cnn"))
                bench = measure_throughput(device, part_budget, log, cohorts, models)
                result["bench"] = bench
                from fedbench.bench.cli import SCHEMA

                (args.out_dir / "bench.json").write_text(json.dumps(
                    {"schema": SCHEMA, "quick": True, "device": str(device), "environment": result["environment"],
                     "machine": bench["machine"], "throughput": bench["throughput"]}, indent=1, default=str) + "\n")
            elif part == "stacking":
                check_stacking(part_budget, log)
            elif part == "proxies":
                result["proxies"] = check_proxies(device, part_budget, log)
            elif part == "syncs":
                found = check_syncs(device, part_budget, log, args.out_dir)
                if found is not None:
                    result["syncs"] = found
            elif part == "workload":
                found = measure_workloads(device, part_budget, log, args.out_dir)
                if found is not None:
                    result["workload"] = found
            elif part == "capture":
                check_capture(device, part_budget, log)
            elif part == "fused":
                result["fused"] = check_fused(device, part_budget, log)
            elif part == "precision":
                result["precision"] = check_precision(device, part_budget, log)
            elif part == "paper_cost":
                cost = measure_paper_cost(device, part_budget, log, args.out_dir, args.paper_max_seconds)
                if cost is not None:
                    result["paper_cost"] = cost
        except Exception as exc:  # noqa: BLE001 - one part failing leaves the others' results
            log.check(part, "part", False, f"{type(exc).__name__}: {exc}", 0.0)
            traceback.print_exc()
        write()
    write()  # the targets from every part (and the files, where no part ran)
    print("\n".join(["targets (issue 31):"] + targets_lines(result["targets"])), flush=True)
    return 0 if all(c["passed"] for c in log.checks) else 1


def _bench_models():
    from fedbench.bench.federation import BENCH_MODELS

    return [(m.name,) for m in BENCH_MODELS]


if __name__ == "__main__":
    sys.exit(main())

"""``fedbench paper cost``: each paper study's cost measured at its own shapes on this machine, and projected.

For each study (its ``Scale`` tuple, fedbench.study.scale) the runs its claims read are grouped by unit, the
(model, batch) pair (:func:`fedbench.study.costs.unit_key`); each unit is timed with the real engine
(fedbench.engine.simulation.simulate, one run, float32; on the CPU with one torch thread, as the train stage runs
each run) on GENERATED data of the real shapes (random content: these models have no data-dependent branches, so
the time does not depend on pixel values, and nothing is downloaded), at the unit's dominant scale (the one with
the most run-rounds): its cohort K, its local steps of batch B, and its evaluation; its mean client size n enters
through what it costs, the forward pass over the cohort's n samples a client that the engine makes every round to
catch a divergence (priced per sample as an evaluated sample), since a timed client holds m = min(n, B) samples (a
local step reads one minibatch whatever n is; with n samples, that forward pass hides a step's time in its noise).
FedAvg does the local work (the study's ``local_steps`` already count its algorithm's extra gradients in minibatch
units).

Each unit is two runs of ``rounds + 1`` rounds (round 0 warms up and is not timed; each figure is the least over
the timed rounds), both evaluating a pooled set of generated samples every round with the dissimilarity off:
    A: 1 local step a client, ``g_a`` evaluated samples;   B: ``s`` local steps a client, ``g_b`` samples;
and, for a study with the dissimilarity on, C: A with the dissimilarity over at most ``d`` samples a client. From
the history's per-round ``wall_time_s`` and ``eval_time_s`` (training = wall - evaluation):
    step_s        = (train_B - train_A) / (K' (s - 1))                  one local step of batch B
    eval_sample_s = (eval_B - eval_A) / (g_b - g_a)                       one evaluated sample
    eval_s        = eval_A - g_a eval_sample_s                            an evaluation's fixed cost
    round_s       = train_A - K' step_s - K' m eval_sample_s              a round's fixed cost (the last term: the
                                                                          cohort's own losses the engine reads)
    grad_sample_s = (eval_C - eval_A) / (K' d)                            one sample's gradient (dissimilarity; C's
                                                                          clients hold d = min(n, 200) samples)
On the CPU the times are CPU seconds (the process CPU time between two round ends, one torch thread, split between
training and evaluation as the engine's wall times of that round split it): CPU-hours, not inflated by other jobs
on a shared machine (``cpu_share`` records the share of a core the timed rounds got; the load average is recorded
beside). On CUDA they are wall seconds.
**Stacks** (:func:`measure_stacks`): where the study runner would stack runs of a unit (its largest group of
runs that may share a stack, fedbench.study.costs.group_sizes, cut on CUDA to what fits the device's memory,
:func:`stack_fit`), A and B are timed again as a stack of that size, then as stacks of 2, 4, 8, ... runs below
it (simulate_stack, seeds 0, 1, ...), as far as half the unit's budget allows, and the same unit costs derived
per row of the stack; fedbench.study.drawn reads a chain step's latency and per-row cost, and the round's fixed cost
of a stack, off them.

Time cap (``max_seconds`` a study, split over its units; CPU seconds on the CPU, wall seconds on CUDA): a pilot round sizes A and B; where the real cohort and
local work would not fit, B runs a partial cohort K' < K and s < S steps, and the projection scales them up
linearly (K S step_s; round_s measured with K' clients is scaled by K / K'), saying so in ``notes``.

:func:`write` keeps one JSON (``paper-cost.json``) and one markdown table (``paper-cost.md``) in a folder: the device,
torch and CUDA versions, the date, the load average, each study's unit costs and projection; a study measured
again replaces its entry, the others are kept. ``fedbench paper list`` reads it (fedbench.study.costs.load). The
projection is the figure every place quotes (fedbench.study.costs.study_cost: the read runs as the runner stacks
them, priced chain by chain from their drawn schedules at the clients' sizes); files written before 2026-12-07 hold
the mean-size figures of then (each run alone, stacked, and the drawn one beside), kept as the record they are.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from fedbench.bench.costs import MODEL_INPUTS
from fedbench.study.costs import DEVICES, FILE, Scale, group_sizes, load, study_cost, units


TABLE = "paper-cost.md"


SMALL_EVAL = 64  # run A's evaluated samples
MAX_EVAL = 20000  # run B's evaluated samples at most (more is scaled per sample)
MIN_SECONDS = 1.0
SHARES: list[float] = []  # each timed run's share of a core (CPU time / wall time), for the record
DISSIMILARITY_SAMPLES = 200  # run C's gradients a client at most (FedProx's LSTMs: 4 minibatches of 50)




















def _dataset(model: str, clients: int, n: int, eval_n: int):
    import numpy as np

    from fedbench.data.format import FederatedDataset, InputSpec, Split, Vocabulary

    shape, classes, kind, vocab, _ = MODEL_INPUTS[model]
    rng = np.random.default_rng(0)

    def block(m: int):
        if kind in ("chars", "tokens"):
            return rng.integers(0, vocab, size=(m, *shape)).astype(np.int64), rng.integers(0, classes, m)
        return rng.standard_normal((m, *shape)).astype(np.float32), rng.integers(0, classes, m)

    def split(sizes: list[int]) -> Split:
        xs, ys = zip(*(block(m) for m in sizes))
        return Split.from_clients(list(xs), list(ys), shape, dtype=None if kind in ("chars", "tokens") else np.float32)

    spec = InputSpec(kind=kind, transform="ids" if kind in ("chars", "tokens") else "identity",
                     vocabulary=Vocabulary(name="random", size=vocab) if vocab else None)
    return FederatedDataset(name=f"cost-{model}", client_ids=tuple(f"c{k}" for k in range(clients)),
                            train=split([n] * clients), test=split([0] * clients), num_classes=classes, input=spec,
                            label_kind="binary" if classes == 2 else "class", global_test=split([eval_n]))


def _model(model_name: str):
    """Model ``model_name`` at its real input shape (a random frozen word table where it takes one)."""
    import torch

    from fedbench.models import build_model

    shape, classes, _, vocab, dim = MODEL_INPUTS[model_name]
    return (build_model(model_name, shape, classes, torch.randn(vocab + 1, dim)) if dim
            else build_model(model_name, shape, classes))


def _rounds(model_name: str, device: str, clients: int, n: int, batch: int, steps: int, eval_n: int, rounds: int,
            dissimilarity: int = 0, runs: int = 1) -> tuple[float, float]:
    """(training, evaluation) seconds of the least timed round of one generated run, or of a stack of ``runs``
    runs (seeds 0, 1, ...; one dataset; fedbench.engine.simulation.simulate_stack, as the study runner runs a
    stack: the whole stack's round). On the CPU these are CPU seconds: the process CPU time of the round (between
    two round ends, one torch thread), split between training and evaluation as the history's wall times of that
    round split it, so that a machine loaded by other jobs does not inflate them."""

    from fedbench.algorithms import build_algorithm
    from fedbench.engine.evaluation import EvalSpec
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    ds = _dataset(model_name, clients, n, eval_n)
    model = _model(model_name)
    clock = _RoundClock(device)
    specs = []
    for seed in range(runs):
        cfg = SimulationConfig(rounds=rounds + 1, clients_per_round=clients, local_epochs=1, local_steps=steps,
                               batch_size=batch, seed=seed, device=device,
                               evaluations=(EvalSpec("global_test", final=False),),
                               dissimilarity_every=1 if dissimilarity else 0,
                               dissimilarity_samples=dissimilarity or None, checkpoint_every=10**9,
                               divergence_factor=1e30)
        # the clock on the first run only: the stack notifies its runs after the whole stack's round
        specs.append(RunSpec(cfg, ds, build_algorithm("fedavg", 1e-3), (clock,) if seed == 0 else ()))
    simulate_stack(model, specs)
    timed = clock.rounds(range(1, rounds + 1))
    if not timed:
        raise RuntimeError(f"{model_name}: no timed round (diverged?)")
    SHARES.extend(t[2] for t in timed)
    return min(t[0] for t in timed), min(t[1] for t in timed)


def stack_fit(model_name: str, device: str, clients: int, n: int, batch: int) -> int | None:
    """The most runs of a cohort of ``clients`` one stack holds in the device's free memory, as the study runner
    plans it (fedbench.engine.stacking.memory_limits, for FedAvg's vectors: a study's algorithm that keeps a
    per-client table needs more); None on the CPU (stacks are not cut for memory there)."""

    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import RunSpec, SimulationConfig
    from fedbench.engine.stacking import free_device_memory, memory_limits

    ds = _dataset(model_name, clients, min(n, batch), 1)
    model = _model(model_name)
    spec = RunSpec(SimulationConfig(clients_per_round=clients, local_steps=1, batch_size=batch, device=device), ds,
                   build_algorithm("fedavg", 1e-3))
    free = free_device_memory([spec])
    return None if free is None else memory_limits([spec], lambda _: model, free)[0]


class _RoundClock:
    """A callback (on_round_end) that reads the clock at every round's end: CPU time on the CPU, wall time on
    CUDA (the engine synchronizes before the round ends)."""

    def __init__(self, device: str) -> None:
        self.cuda = device == "cuda"
        self.marks: dict[int, tuple[float, float, float, float]] = {-1: (time.perf_counter(), time.process_time(), 0, 0)}

    def on_round_end(self, r: int, row: dict) -> bool:
        self.marks[r] = (time.perf_counter(), time.process_time(), row["wall_time_s"], row["eval_time_s"])
        return False

    def rounds(self, which) -> list[tuple[float, float, float]]:
        """(training, evaluation, share of a core) seconds of each round of ``which`` that has both marks."""
        out = []
        for r in which:
            if r in self.marks and r - 1 in self.marks:
                wall, cpu, row_wall, row_eval = self.marks[r]
                spent_wall = wall - self.marks[r - 1][0]
                spent = spent_wall if self.cuda else cpu - self.marks[r - 1][1]
                evaluation = spent * min(row_eval / row_wall, 1.0) if row_wall > 0 else 0.0
                out.append((spent - evaluation, evaluation, min(1.0, spent / spent_wall) if spent_wall > 0 else 1.0))
        return out


def derive(a: tuple[float, float], b: tuple[float, float], runs: int, k: int, m: int, steps: int,
           samples: tuple[int, int]) -> dict[str, float]:
    """The unit costs (the module docstring's formulas) from the (training, evaluation) seconds of a round of runs
    A and B, alone or stacked ``runs`` at a time, each a row of the stack's batched work: ``k`` clients of ``m``
    samples, B's ``steps`` steps a client, A's and B's evaluated ``samples``; ``round_s`` at ``k`` clients."""
    (train_a, eval_a), (train_b, eval_b), (g_a, g_b) = a, b, samples
    step_s = max(train_b - train_a, 0.0) / (runs * k * (steps - 1))
    eval_sample_s = max(eval_b - eval_a, 0.0) / (runs * (g_b - g_a))
    eval_s = max(eval_a - runs * g_a * eval_sample_s, 0.0)
    round_s = max(train_a - runs * k * step_s - runs * k * m * eval_sample_s, 0.0)
    return {"round_s": round_s, "step_s": step_s, "eval_s": eval_s, "eval_sample_s": eval_sample_s}


def measure_unit(s: Scale, device: str, max_seconds: float, rounds: int = 2, stack_runs: int = 1) -> dict[str, Any]:
    """The unit costs (COST_KEYS) of scale ``s`` timed on ``device`` within about ``max_seconds``, with what was
    timed (``measured_with``) and ``notes`` on what was scaled up; where the study runner would stack up to
    ``stack_runs`` runs of it, also the same costs timed for stacks (``stacked``, :func:`measure_stacks`: half of
    the budget is kept for them) and ``stack_fit``."""
    clock = time.perf_counter if device == "cuda" else time.process_time  # the cap: CPU seconds on the CPU
    start = clock()
    SHARES.clear()
    K, n, S = s.clients_per_round, max(1, round(s.client_samples)), max(1, s.steps_per_client())
    m = min(n, s.batch_size)  # samples a timed client holds: a step reads a minibatch, whatever n is
    g_a = min(SMALL_EVAL, max(1, s.eval_samples // 2))
    d = min(n, DISSIMILARITY_SAMPLES) if s.dissimilarity_every else 0
    # pilot: one timed round, a cohort of at most 2, 1 step, g_a samples: an upper bound of a client-step and a sample
    pilot_k = min(K, 2)
    train_p, eval_p = _rounds(s.model, device, pilot_k, m, s.batch_size, 1, g_a, 1)
    per_client = max(train_p / pilot_k, 1e-6)
    per_sample = max(eval_p / g_a, 1e-8)
    left = max(max_seconds - (clock() - start), MIN_SECONDS) * (0.5 if stack_runs > 1 else 1.0)
    runs = 3 if s.dissimilarity_every else 2
    per_round = left / (runs * (rounds + 1))  # what a round of A, B (and C) may take
    g_b = int(min(s.eval_samples, MAX_EVAL, max(2 * g_a, 0.3 * per_round / per_sample)))
    g_b = max(g_b, g_a + 1)
    budget_steps = max(per_round - g_b * per_sample, 0.0) / per_client  # client-steps of B's round (an upper bound
    # of a client-step: the pilot's fixed cost is in it, so B takes less)
    k = int(min(K, max(1, budget_steps // 4)))
    steps = int(min(S, max(2, budget_steps // k))) if S > 1 else 2
    train_a, eval_a = _rounds(s.model, device, k, m, s.batch_size, 1, g_a, rounds)
    train_b, eval_b = _rounds(s.model, device, k, m, s.batch_size, steps, g_b, rounds)
    costs = derive((train_a, eval_a), (train_b, eval_b), 1, k, m, steps, (g_a, g_b))
    step_s, eval_sample_s, eval_s = costs["step_s"], costs["eval_sample_s"], costs["eval_s"]
    round_s = costs["round_s"] * K / k
    grad_sample_s = 0.0
    if s.dissimilarity_every:
        _, eval_c = _rounds(s.model, device, k, d, s.batch_size, 1, g_a, rounds, dissimilarity=d)
        grad_sample_s = max(eval_c - eval_a, 0.0) / (k * d)
    notes = []
    stacked, fit = [], None
    if stack_runs > 1:
        fit = stack_fit(s.model, device, K, n, s.batch_size)
        target = stack_runs if fit is None else min(stack_runs, fit)
        left = max_seconds - (clock() - start)
        single = {"round_s": round_s * k / K, "step_s": step_s, "eval_s": eval_s, "eval_sample_s": eval_sample_s}
        shape = (s.model, device, k, m, s.batch_size, steps, (g_a, g_b), rounds)
        stacked, why = (measure_stacks(shape, target, left, single, clock) if target > 1
                        else ([], "no stack timed: one run fills the device's memory"))
        stacked = [p | {"round_s": p["round_s"] * K / k} for p in stacked]
        notes += [why] if why else []
        if fit is not None and fit < stack_runs:
            notes.append(f"stacks cut to {fit} runs by the device's memory (a group of {stack_runs})")
    if k < K:
        notes.append(f"cohort {k} of {K} timed, scaled up (the fixed round cost by {K}/{k})")
    if steps < S:
        notes.append(f"{steps} of {S} local steps a client timed, scaled up")
    if g_b < s.eval_samples:
        notes.append(f"{g_b:,} of {s.eval_samples:,} evaluated samples timed, scaled per sample")
    costs = {"step_s": step_s, "round_s": round_s, "eval_s": eval_s, "eval_sample_s": eval_sample_s,
             "grad_sample_s": grad_sample_s}
    return {**{key: float(f"{v:.4g}") for key, v in costs.items()},
            **({"stacked": [{key: (v if key == "runs" else float(f"{v:.4g}")) for key, v in p.items()}
                            for p in stacked], "stack_fit": fit} if stack_runs > 1 else {}),
            "measured_with": {"clients": k, "client_samples": m, "batch": s.batch_size, "steps": steps,
                              "eval_samples": [g_a, g_b], "dissimilarity_samples": d, "timed_rounds": rounds,
                              "cpu_share": round(sum(SHARES) / len(SHARES), 3)},
            "real": {"clients": K, "client_samples": n, "steps": S, "eval_samples": int(s.eval_samples)},
            "seconds": round(clock() - start, 1), "notes": notes}


def measure_stacks(shape: tuple, target: int, left: float, single: dict[str, float], clock) -> tuple[list, str]:
    """Stacks of ``target`` runs (the stacks the study runner would make of the unit), then of 2, 4, 8, ... below
    it, of a unit's timed shape ``shape`` = (model, device, K', m, batch, steps, (g_a, g_b), rounds): each timed as
    runs A and B are alone (A: 1 step a client and g_a samples, B: ``steps`` steps and g_b samples), its unit costs
    (per row of the stack's batched work) derived as alone (:func:`derive`, with R runs: step_s = (train_B -
    train_A) / (R K' (s - 1)), and so on; round_s at K', the caller scales it to the real cohort). Each run is timed
    only when an upper bound of its seconds fits in what is left of ``left`` (``clock`` seconds): A's, R times A's
    alone (``single``'s costs); B's, from A at the same size: each of B's steps costs at most A's whole training
    round, and its evaluation at most A's scaled by g_b / g_a. Returns the points, by runs, and a note of the sizes not timed ('' when all were)."""
    model, device, k, m, batch, steps, (g_a, g_b), rounds = shape
    alone_a = (rounds + 1) * (single["round_s"] + k * (single["step_s"] + m * single["eval_sample_s"])
                              + single["eval_s"] + g_a * single["eval_sample_s"])
    sizes, r = [target], 2
    while r < target:
        sizes.append(r)
        r *= 2
    start, points, skipped = clock(), [], []
    for r in sizes:
        if r * alone_a > left - (clock() - start):
            skipped.append(r)
            continue
        train_a, eval_a = _rounds(model, device, k, m, batch, 1, g_a, rounds, runs=r)
        if (rounds + 1) * (steps * train_a + eval_a * g_b / g_a) > left - (clock() - start):
            skipped.append(r)
            continue
        train_b, eval_b = _rounds(model, device, k, m, batch, steps, g_b, rounds, runs=r)
        points.append({"runs": r, **derive((train_a, eval_a), (train_b, eval_b), r, k, m, steps, (g_a, g_b))})
    note = (f"stacks of {', '.join(map(str, sorted(skipped)))} runs not timed (over the {left:.0f} s left for "
            "stacks); the stacked cost is read off the sizes timed" if skipped else "")
    return sorted(points, key=lambda p: p["runs"]), note


def measure_study(scales: tuple[Scale, ...] | list[Scale], device: str, max_seconds: float,
                  rounds: int = 2) -> dict[str, Any]:
    """Every unit of a study measured (``max_seconds`` split evenly over them); :func:`run` projects it."""
    found = units(scales)
    share = max_seconds / max(1, len(found))
    sizes = group_sizes(scales)
    measured = {key: measure_unit(s, device, share, rounds, sizes.get(key, 1)) for key, s in found.items()}
    # the projection is the one every place quotes, from the drawn schedule: run() prices it (it needs the name)
    return {"units": measured, "projection": {}, "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average": _load()}


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine(device: str) -> dict[str, Any]:
    """fedbench.bench.machine.environment, with the device named as the cost tables print it."""
    import torch

    from fedbench.bench.machine import environment

    env = environment(torch.device(device))
    name = env["device_name"] if device == "cuda" else f"{env['cpu']}, {env['cpu_cores']} cores, 1 torch thread a run"
    return {"device": device, "device_name": name, "torch": env["torch"], "cuda": env["cuda"],
            "python": env["python"], "date": env["date"][:10], "load_average": env.get("load_average", [])}


def _stacks(unit: dict[str, Any]) -> str:
    if "stacked" not in unit:
        return "-"
    points = ", ".join(f"{p['runs']}: {p['step_s']:.3g}" for p in unit["stacked"]) or "none"
    fit = unit.get("stack_fit")
    return points + ("" if fit is None else f" (fit {fit:,})")


def validate(names: list[str], known: list[str], rounds: int, max_seconds: float, device: str) -> None:
    """Bad input as one line: an unknown study, rounds < 1, a cap <= 0, an unknown device or cuda without CUDA."""
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"--study {unknown[0]!r} is not a paper study; known: {', '.join(known)}")
    if rounds < 1:
        raise ValueError(f"--rounds {rounds}: must be an integer >= 1 (timed rounds a run, after one warm-up round)")
    if not max_seconds > 0:
        raise ValueError(f"--max-seconds {max_seconds}: must be > 0 (seconds a study may take)")
    if device not in DEVICES:
        raise ValueError(f"--device {device!r}: allowed: {', '.join(DEVICES)}")


def run(studies: dict[str, tuple[Scale, ...]], device: str, out: Path, max_seconds: float, rounds: int = 2,
        progress=print, scales_of: dict[str, tuple[Scale, ...]] | None = None, replace: bool = False) -> dict[str, Any]:
    """Measure ``studies`` (name -> scales) on ``device`` and write ``out``/paper-cost.json and .md (entries of
    studies not measured now are kept from the file there, if its device name is the same). Each study's
    ``projection`` is the figure every place quotes (fedbench.study.costs.study_cost: its read runs as the runner
    stacks them, priced from their drawn schedules on the units now in the file), of every study the file holds
    whose scales are known (``studies``, and ``scales_of``: every study's, so that a kept study is priced at its
    current scales and on the units measured now). A file there measured on another machine is
    not replaced unless ``replace`` (its studies would be lost after the first study measured here): a ValueError
    naming the file, both machines and what is allowed."""
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device here; use --device cpu")
    if device == "cpu":
        torch.set_num_threads(1)
    head = machine(device)
    data = load(device, out) or {}
    other = data.get("studies") and data.get("device_name") != head["device_name"]
    if other and not replace:
        raise ValueError(f"{out / FILE} holds {len(data['studies'])} studies measured on {data.get('device_name')}; "
                         f"this machine is {head['device_name']}: allowed: --out DIR (a folder of its own), or "
                         "--replace to replace them")
    kept = {} if other else data.get("studies", {})
    result = {**head, "max_seconds": max_seconds, "timed_rounds": rounds, "studies": dict(kept)}
    known = {**(scales_of or {}), **studies}
    for name, scales in studies.items():
        t0 = time.perf_counter()
        result["studies"][name] = measure_study(scales, device, max_seconds, rounds)
        for priced in (n for n in result["studies"] if n in known):  # a unit of one study may price another
            result["studies"][priced]["projection"] = projection(priced, known[priced], device, out, result)
        write(result, out)  # after each study: a long measurement interrupted keeps what it measured
        p = result["studies"][name]["projection"]
        progress(f"{name}: {p['hours']:,.2f} h ({p['train_hours']:,.2f} training, {p['eval_hours']:,.2f} evaluation; "
                 f"{p['runs']} runs read, {p['left_out']} left out, {p['stacks']} stack(s), priced from their drawn "
                 f"schedules); measured in {time.perf_counter() - t0:.0f} s")
    return result


PROJECTION_KEYS = ("hours", "train_hours", "eval_hours", "runs", "left_out", "rounds", "stacks", "source")


def projection(name: str, scales: tuple[Scale, ...], device: str, out: Path, result: dict[str, Any]) -> dict[str, Any]:
    """Study ``name``'s projection as the file keeps it: fedbench.study.costs.study_cost's figure on ``result``'s
    units (the one ``fedbench paper list`` prints for this folder)."""
    c = study_cost(name, scales, device, out, table=result)
    return {k: c[k] for k in PROJECTION_KEYS}


def write(result: dict[str, Any], out: Path) -> None:
    """paper-cost.json and paper-cost.md in ``out``, each written whole (a temporary file renamed)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, text in ((FILE, json.dumps(result, indent=2, sort_keys=True) + "\n"), (TABLE, markdown(result))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text)
        tmp.replace(out / name)


def markdown(result: dict[str, Any]) -> str:
    unit = "GPU-h" if result["device"] == "cuda" else "CPU-h"
    lines = [f"# Paper studies: measured cost ({result['device']})", "",
             f"Measured by `fedbench paper cost --device {result['device']}` on {result['device_name']}; torch "
             f"{result['torch']}, CUDA {result['cuda'] or 'none'}; {result['date']}; load average "
             f"{', '.join(map(str, result['load_average']))} at the end; at most {result['max_seconds']:g} s a study, "
             f"{result['timed_rounds']} timed round(s) a run after a warm-up round; generated data of each study's "
             "real shapes. Hours project each study's runs that its claims read as the study runner stacks them, "
             "priced chain by chain from their drawn schedules at the clients' sizes on the unit costs below "
             "(fedbench.study.costs.study_cost: the figure `fedbench paper list` and every other place quote).", "",
             f"| study | runs read | left out | rounds | training {unit} | evaluation {unit} | evaluation share | "
             f"total {unit} | stacks | measured at (load) | scaled up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for name, st in sorted(result["studies"].items()):
        p = st["projection"]
        if "stacks" not in p or "source" not in p:  # a study kept from an older file, its scales not known here
            continue
        share = p["eval_hours"] / p["hours"] if p["hours"] else 0.0
        notes = "; ".join(f"{k}: {n}" for k, u in st["units"].items() for n in u["notes"]) or "-"
        lines.append(f"| {name} | {p['runs']} | {p['left_out']} | {p['rounds']:,} | {p['train_hours']:,.2f} | "
                     f"{p['eval_hours']:,.2f} | {share:.0%} | {p['hours']:,.2f} | {p['stacks']} | {st['measured_at']} "
                     f"({', '.join(map(str, st['load_average']))}) | {notes} |")
    lines += ["", "Unit costs (seconds): step_s a local step, round_s a round's fixed cost, eval_s an evaluation's "
              "fixed cost, eval_sample_s a sample evaluated, grad_sample_s a sample's gradient (dissimilarity); stacks "
              "timed: the runs of each stack timed, with its step_s a row (a client-step of one of its runs), and "
              "the most runs a stack fits in the device's memory.", "",
              "| study | unit | step_s | round_s | eval_s | eval_sample_s | grad_sample_s | timed with | stacks timed |",
              "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for name, st in sorted(result["studies"].items()):
        for key, u in st["units"].items():
            w = u["measured_with"]
            lines.append(f"| {name} | {key} | {u['step_s']:.4g} | {u['round_s']:.4g} | {u['eval_s']:.4g} | "
                         f"{u['eval_sample_s']:.4g} | {u['grad_sample_s']:.4g} | K'={w['clients']}, n={w['client_samples']}, "
                         f"{w['steps']} steps, eval {w['eval_samples'][0]}/{w['eval_samples'][1]} | {_stacks(u)} |")
    return "\n".join(lines) + "\n"


__all__ = ["TABLE", "markdown", "measure_study", "measure_unit", "run", "validate", "write"]

"""A study priced from its drawn schedule, chain by chain (issue 49, item 1; the review's D0): the projection every
place quotes for a study (fedbench.study.costs.study_cost: ``fedbench paper list``, ``paper cost``, ``paper run
--dry-run``, the not-run claim entries, the README).

Projecting from equal-sized clients at the mean size understates: a round cannot end before its largest client's
steps, and the papers' client sizes are heavy-tailed. Here each stack the runner would run is priced from the rounds
it would draw (the engine's own round plan, fedbench.engine.sampling, at the clients' sizes):

    t = sum over rounds r of (chain_r x a + row_steps_r x b) + rounds x round(R) + evaluation + cohort signal

- chain_r: the stack's chain in round r, the largest client's local steps over every run of the stack (lockstep);
- row_steps_r: the local steps of every client of every run of the stack in round r;
- a, b: a chain step's fixed latency and a row-step's cost, read per unit (model@batch) off the measured chain steps
  of ``fedbench paper cost`` (``paper-cost.json``: step_s x rows at each timed stack of R runs of K' rows; the secant
  of the two points that bracket the stack's rows). An arm with few rows (FedLaAvg's sequential SGD: 1 row a run) is
  so priced at its own rows: its chain pays a every step. A unit not measured for the study takes the per-model
  table's step (fedbench/bench/measured_costs.json, fedbench.study.costs.table_unit): a = 0, b = its step_s;
- round(R): the round's fixed cost of a stack of R runs, linear between the timed stacks (the host work per run
  that the review found);
- evaluation: the unit's evaluation costs at the largest timed stack not above R (eval_s + R x samples x
  eval_sample_s an evaluation); the dissimilarity, in the runs that compute it (a per-run setting:
  fedbench.study.stacks.Stack), at the run-alone grad_sample_s;
- cohort signal: the forward pass over the cohort's own samples a round (a study whose protocol skips the training
  loss), at eval_sample_s a sample, from the drawn cohorts.

Client sizes (:func:`client_sizes`): the prepared dataset's own (``data/real/<variant>``: its stored offsets) where
it is built; else, for the FedProx datasets, sizes drawn once (seed 0) from a lognormal with the published mean and
standard deviation per device (FedProx Table 1), times the train fraction; else equal sizes at the scale's mean.
Where every client takes a fixed number of steps (``local_steps``), the chain and row-steps are exact without a
draw. Stragglers do their full local work (an upper bound, as fedbench.study.scale counts them). Runs of a stack take
seeds 0, 1, ... 4, 0, ... (the FedProx studies' 5 seeds, each at several straggler levels: one seed's cohorts are
the same draws).

Arms of different algorithm classes run in separate stacks (fedbench.engine.simulation.stack_key) unless one trains
as the other's form: FedAvg as FedProx with mu = 0 dropping its stragglers (``FedAvg.stacks_as``, the review's D1),
so a FedProx study's group is one stack. A Scale records no algorithm, so :data:`ARM_CLASSES` says into how many
stacks a study's group is split; ``merged=True`` prices one stack per group whatever it says.

Imports no torch and no benchmark (fedbench.bench.drawn_cost prices the profile on the H200 calibration with it).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.study.scale import Scale
from fedbench.study.stacks import stack_groups, unit_key

# FedProx Table 1: devices, samples, mean and standard deviation of samples per device
PUBLISHED = {"mnist": (1000, 69035, 69, 106), "femnist": (200, 18345, 92, 159),
             "shakespeare": (143, 517106, 3616, 6808), "sent140": (772, 40783, 53, 32)}
SIZES_OF = {**{f"fedprox_{k}": k for k in PUBLISHED}, **{f"fedprox_{k}_e1": k for k in PUBLISHED}}
TRAIN_FRACTION = {"mnist": 0.9, "femnist": 0.9, "shakespeare": 0.8, "sent140": 0.8}
ARM_CLASSES = {name: 1 for name in SIZES_OF}  # FedAvg stacks with FedProx (D1); 2 before FedAvg.stacks_as
SEEDS = 5
TRAINING_PARTS = ("steps", "round_fixed", "cohort_signal")  # the rest (evaluation, dissimilarity) is evaluation


@dataclasses.dataclass(frozen=True)
class Unit:
    """A unit's timed points (seconds): ``steps`` (rows, a chain step's seconds at that many rows), ``rounds`` (runs,
    the round's fixed cost of a stack of that many runs), ``evals`` (runs, eval_s, eval_sample_s), and the run-alone
    grad_sample_s."""

    steps: tuple[tuple[float, float], ...]
    rounds: tuple[tuple[float, float], ...]
    evals: tuple[tuple[int, float, float], ...]
    grad_sample_s: float

    def step_line(self, rows: float) -> tuple[float, float]:
        """(a, b): a chain step of a stack of ``rows`` rows costs a + b x (its active rows). The secant of the timed
        points that bracket ``rows`` (the nearest pair beyond them); where the time falls with rows (a kernel
        chosen by cohort changes between points), the step is latency: a = its time at ``rows``, b = 0."""
        pts = sorted(self.steps)
        if len(pts) == 1:
            return 0.0, pts[0][1] / pts[0][0]
        j = next((i for i in range(1, len(pts)) if rows <= pts[i][0]), len(pts) - 1)
        (x0, t0), (x1, t1) = pts[j - 1], pts[j]
        slope = (t1 - t0) / (x1 - x0)
        if slope < 0:
            return float(np.interp(rows, [x0, x1], [t0, t1])), 0.0
        a = t0 - slope * x0
        return (a, slope) if a >= 0 else (0.0, t0 / x0)

    def round_at(self, runs: int) -> float:
        """The round's fixed cost of a stack of ``runs`` runs: linear between the timed stacks, along the last
        segment beyond them."""
        pts = sorted(self.rounds)
        if len(pts) == 1:
            return pts[0][1]
        j = next((i for i in range(1, len(pts)) if runs <= pts[i][0]), len(pts) - 1)
        (x0, t0), (x1, t1) = pts[j - 1], pts[j]
        return max(0.0, t0 + (runs - x0) * (t1 - t0) / (x1 - x0))

    def eval_at(self, runs: int) -> tuple[float, float]:
        point = max((p for p in self.evals if p[0] <= runs), key=lambda p: p[0])
        return point[1], point[2]


def fit_unit(u: dict[str, Any]) -> Unit:
    """A unit of ``paper-cost.json`` read as points (module docstring). One that does not say the rows it was timed
    at (``measured_with.clients``) is one point, a run alone: every row-step at its step_s (a = 0)."""
    if not isinstance((u.get("measured_with") or {}).get("clients"), int):
        return Unit(steps=((1.0, u["step_s"]),), rounds=((1.0, u["round_s"]),), evals=((1, u["eval_s"],
                    u["eval_sample_s"]),), grad_sample_s=float(u["grad_sample_s"]))
    k = float(u["measured_with"]["clients"])
    points = [(1, u)] + [(p["runs"], p) for p in u.get("stacked") or ()]
    return Unit(steps=tuple((r * k, p["step_s"] * r * k) for r, p in points),
                rounds=tuple((float(r), p["round_s"]) for r, p in points),
                evals=tuple((r, p["eval_s"], p["eval_sample_s"]) for r, p in points),
                grad_sample_s=float(u["grad_sample_s"]))


def client_sizes(study: str, scale: Scale, data_root: Path = Path("data")) -> tuple[np.ndarray, str]:
    """The training samples of every client of ``study``'s data, and where they come from (module docstring)."""
    from fedbench.study.paper_profile import STUDIES

    variant = STUDIES[study].variant if study in STUDIES else None
    folder = data_root / "real" / variant if variant else None  # fedbench.data.stages.partition's folder
    if folder is not None and (folder / "arrays.npz").exists():
        from fedbench.data.format import read_train_sizes

        return read_train_sizes(folder), f"the prepared data ({folder})"
    if study in SIZES_OF:
        name = SIZES_OF[study]
        devices, _, mean, sd = PUBLISHED[name]
        sigma2 = math.log(1 + (sd / mean) ** 2)
        g = np.random.default_rng(0)
        sizes = g.lognormal(math.log(mean) - sigma2 / 2, math.sqrt(sigma2), devices)
        train = np.maximum(1, np.round(sizes * TRAIN_FRACTION[name])).astype(np.int64)
        return train, f"lognormal of FedProx Table 1's mean {mean} and sd {sd} a device (not built here)"
    n = max(1, int(round(scale.client_samples)))
    return np.full(max(scale.clients_per_round, 1) * 10, n, np.int64), f"equal, {n} a client (the scale's mean)"


@dataclasses.dataclass(frozen=True)
class Drawn:
    """A stack's drawn work: per round its chain, its row-steps and the samples its cohorts hold."""

    chain: np.ndarray
    row_steps: np.ndarray
    cohort_samples: np.ndarray


def draw_stack(scale: Scale, runs: int, sizes: np.ndarray) -> Drawn:
    """The lockstep work of a stack of ``runs`` runs of ``scale`` (seeds i mod SEEDS) on clients of ``sizes``: each
    run's cohorts as the engine selects them (fedbench.engine.sampling.select_clients, every client available, no
    stragglers), each client E epochs of ceil(n_k / B) steps, or ``local_steps``."""
    k, b, rounds = scale.clients_per_round, scale.batch_size, scale.rounds
    if scale.local_steps is not None or len(set(sizes.tolist())) == 1:
        # every client of a round takes the same steps: exact without a draw
        steps = scale.local_steps if scale.local_steps is not None else scale.local_epochs * -(-int(sizes[0]) // b)
        kk = min(k, len(sizes))
        return Drawn(chain=np.full(rounds, steps, np.int64), row_steps=np.full(rounds, runs * kk * steps, np.int64),
                     cohort_samples=np.full(rounds, runs * kk * float(np.mean(sizes))))
    chain, rows, samples = np.zeros(rounds, np.int64), np.zeros(rounds, np.int64), np.zeros(rounds, np.float64)
    for i in range(runs):
        clients = _selections(i % SEEDS, rounds, k, sizes.tobytes())  # [rounds, K]
        n = sizes[clients]
        steps = scale.local_epochs * -(-n // b)
        chain = np.maximum(chain, steps.max(1))
        rows += steps.sum(1)
        samples += n.sum(1)
    return Drawn(chain=chain, row_steps=rows, cohort_samples=samples)


@functools.lru_cache(maxsize=64)
def _selections(seed: int, rounds: int, k: int, sizes: bytes) -> np.ndarray:
    """[rounds, K] the clients run ``seed`` selects in rounds 0..rounds-1 (the engine's draw, "uniform")."""
    from fedbench.engine.sampling import select_clients

    n = np.frombuffer(sizes, np.int64)
    return np.stack([select_clients(seed, r, n, k, "uniform")[0] for r in range(rounds)])


def stack_seconds(scale: Scale, runs: int, drawn: Drawn, unit: Unit, dissimilarity_runs: int) -> dict[str, float]:
    """The seconds of one stack of ``runs`` runs, ``dissimilarity_runs`` of them computing the dissimilarity, by
    part (module docstring's formula)."""
    eval_s, eval_sample_s = unit.eval_at(runs)
    a, b = unit.step_line(runs * scale.clients_per_round)
    steps = float(a * drawn.chain.sum() + b * drawn.row_steps.sum())
    fixed = scale.rounds * unit.round_at(runs)
    evaluation = scale.evaluations() * (eval_s + runs * scale.eval_samples * eval_sample_s)
    dissimilarity = dissimilarity_runs * scale.dissimilarities() * scale.dissimilarity_samples * unit.grad_sample_s
    signal = float(drawn.cohort_samples.sum()) * eval_sample_s if scale.cohort_signal else 0.0
    return {"steps": steps, "round_fixed": fixed, "evaluation": evaluation, "dissimilarity": dissimilarity,
            "cohort_signal": signal, "chain": int(drawn.chain.sum()), "row_steps": int(drawn.row_steps.sum())}


def price_study(name: str, scales: tuple[Scale, ...] | list[Scale], table: dict[str, Any] | None,
                merged: bool = False, data_root: Path = Path("data"),
                fallback: Callable[[Scale], Unit] | None = None) -> dict[str, Any] | None:
    """Study ``name``'s read runs as the runner stacks them (fedbench.study.costs.stack_groups, cut to the unit's
    ``stack_fit``; split into ARM_CLASSES stacks unless ``merged``), priced chain by chain on ``table``'s units (the
    study's own, else those of the study that prices it, fedbench.study.paper_profile.UNIT_COSTS_OF).

    A unit the table has not measured is priced by ``fallback(scale)`` (fedbench.study.costs.study_cost: the
    per-model table's); without ``fallback``, the study is not priced (None). ``source`` says
    where the units came from: "measured", "partly measured" or "projected" (none measured)."""
    from fedbench.study.paper_profile import UNIT_COSTS_OF

    studies = (table or {}).get("studies") or {}
    own = (studies.get(name) or studies.get(UNIT_COSTS_OF.get(name, "")) or {}).get("units") or {}
    read = [s for s in scales if s.read]
    if fallback is None and any(unit_key(s) not in own for s in read):
        return None
    fitted = {k: fit_unit(u) for k, u in own.items()}
    classes = 1 if merged else ARM_CLASSES.get(name, 1)
    parts = dict.fromkeys(("steps", "round_fixed", "evaluation", "dissimilarity", "cohort_signal", "chain",
                           "row_steps"), 0.0)
    sources, stacks = set(), 0
    for stack in stack_groups(read, lambda s: (own.get(unit_key(s)) or {}).get("stack_fit")):
        sizes, source = client_sizes(name, stack.scale, data_root)
        sources.add(source)
        unit = fitted.get(unit_key(stack.scale)) or fallback(stack.scale)
        runs = _split(stack.runs, classes)
        for piece, dissimilarity_runs in zip(runs, _fill(stack.dissimilarity_runs, runs)):
            stacks += 1
            got = stack_seconds(stack.scale, piece, draw_stack(stack.scale, piece, sizes), unit, dissimilarity_runs)
            for key, v in got.items():
                parts[key] += v
    hits = sum(unit_key(s) in own for s in read)
    seconds = sum(v for k, v in parts.items() if k not in ("chain", "row_steps"))
    train = sum(parts[k] for k in TRAINING_PARTS)
    return {"hours": seconds / 3600, "seconds": seconds, "train_hours": train / 3600,
            "eval_hours": (seconds - train) / 3600, "stacks": stacks, "sizes": sorted(sources),
            "parts_hours": {k: v / 3600 for k, v in parts.items() if k not in ("chain", "row_steps")},
            "chain": int(parts["chain"]), "row_steps": int(parts["row_steps"]),
            "source": "measured" if read and hits == len(read) else ("partly measured" if hits else "projected")}


def _split(runs: int, pieces: int) -> list[int]:
    return [len(p) for p in np.array_split(np.arange(runs), min(pieces, runs)) if len(p)]


def _fill(count: int, sizes: list[int]) -> list[int]:
    """``count`` runs placed into stacks of ``sizes``, the first stacks first (a run's dissimilarity is priced per
    run, so where they go does not change the sum)."""
    out = []
    for size in sizes:
        out.append(min(size, count))
        count -= out[-1]
    return out

"""A study priced from its drawn schedule, chain by chain (issue 49, item 1; the review's D0).

``fedbench.study.costs`` projects a study from equal-sized clients at the mean size. A round cannot end before its
largest client's steps, and the papers' client sizes are heavy-tailed, so that projection understates. Here each
stack the runner would run is priced from the rounds it would draw (the engine's own round plan,
fedbench.engine.sampling.plan_round, at the clients' sizes):

    t = sum over rounds r of (chain_r x a + row_steps_r x b) + rounds x round(R) + evaluation + cohort signal

- chain_r: the stack's chain in round r, the largest client's local steps over every run of the stack (lockstep);
- row_steps_r: the local steps of every client of every run of the stack in round r;
- a, b: a chain step's fixed latency and a row-step's cost, fitted per unit (model@batch) on the measured chain
  steps of ``fedbench paper cost`` (``paper-cost.json``: step_s x rows at each timed stack of R runs of K' rows,
  T(rows) = a + b rows, least squares with a, b >= 0). An arm with few rows (FedLaAvg's sequential SGD: 1 row a
  run) is so priced at its own rows: its chain pays a every step;
- round(R): the round's fixed cost of a stack of R runs, fitted the same way on the timed stacks' round_s
  (c0 + c1 R: the host work per run that the review found);
- evaluation: the unit's evaluation costs at the largest timed stack not above R (eval_s + R x samples x
  eval_sample_s an evaluation), the dissimilarity per run at the run-alone grad_sample_s;
- cohort signal: the forward pass over the cohort's own samples a round (a study whose protocol skips the training
  loss), at eval_sample_s a sample, from the drawn cohorts.

Client sizes (:func:`client_sizes`): the prepared dataset's own (``data/real/<variant>``: its stored offsets)
where it is built; else, for
the FedProx datasets, sizes drawn once (seed 0) from a lognormal with the published mean and standard deviation per
device (FedProx Table 1), times the train fraction; else equal sizes at the scale's mean. Where every client takes
a fixed number of steps (``local_steps``), the chain and row-steps are exact without a draw. Stragglers do their
full local work (an upper bound, as fedbench.study.scale counts them). Runs of a stack take seeds 0, 1, ... 4, 0, ...
(the FedProx studies' 5 seeds, each at several straggler levels: one seed's cohorts are the same draws).

Arms of different algorithm classes run in separate stacks (fedbench.engine.simulation.stack_key) unless one
trains as the other's form: FedAvg as FedProx with mu = 0 dropping its stragglers (``FedAvg.stacks_as``, the
review's D1), so a FedProx study's group is one stack. A Scale records no algorithm, so :data:`ARM_CLASSES` says
into how many stacks a study's group is split; ``merged=True`` prices one stack per group whatever it says.

Imports no torch: ``fedbench paper list`` quotes it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.study.costs import Scale, stack_groups, unit_key

# FedProx Table 1: devices, samples, mean and standard deviation of samples per device
PUBLISHED = {"mnist": (1000, 69035, 69, 106), "femnist": (200, 18345, 92, 159),
             "shakespeare": (143, 517106, 3616, 6808), "sent140": (772, 40783, 53, 32)}
SIZES_OF = {**{f"fedprox_{k}": k for k in PUBLISHED}, **{f"fedprox_{k}_e1": k for k in PUBLISHED}}
TRAIN_FRACTION = {"mnist": 0.9, "femnist": 0.9, "shakespeare": 0.8, "sent140": 0.8}
ARM_CLASSES = {name: 1 for name in SIZES_OF}  # FedAvg stacks with FedProx (D1); 2 before FedAvg.stacks_as
SEEDS = 5
PROFILE_BASELINE_H = 61.3  # the H200 projection from mean sizes (reports/bench-gpu/paper-cost.json, 51c981a)


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
    """A unit of ``paper-cost.json`` read as points (module docstring)."""
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


def stack_seconds(scale: Scale, runs: int, drawn: Drawn, unit: Unit) -> dict[str, float]:
    """The seconds of one stack, by part (module docstring's formula)."""
    eval_s, eval_sample_s = unit.eval_at(runs)
    a, b = unit.step_line(runs * scale.clients_per_round)
    steps = float(a * drawn.chain.sum() + b * drawn.row_steps.sum())
    fixed = scale.rounds * unit.round_at(runs)
    evaluation = scale.evaluations() * (eval_s + runs * scale.eval_samples * eval_sample_s)
    dissimilarity = runs * scale.dissimilarities() * scale.dissimilarity_samples * unit.grad_sample_s
    signal = float(drawn.cohort_samples.sum()) * eval_sample_s if scale.cohort_signal else 0.0
    return {"steps": steps, "round_fixed": fixed, "evaluation": evaluation, "dissimilarity": dissimilarity,
            "cohort_signal": signal, "chain": int(drawn.chain.sum()), "row_steps": int(drawn.row_steps.sum())}


def price_study(name: str, scales: tuple[Scale, ...] | list[Scale], table: dict[str, Any], merged: bool = False,
                data_root: Path = Path("data")) -> dict[str, Any] | None:
    """Study ``name``'s read runs as the runner stacks them (fedbench.study.costs.stack_groups, cut to the unit's
    ``stack_fit``; split into ARM_CLASSES stacks today unless ``merged``), priced chain by chain on ``table``'s
    units (the study's own, else those of the study that prices it); None where the table has no unit for it."""
    from fedbench.study.paper_profile import UNIT_COSTS_OF

    studies = table["studies"]
    own = studies.get(name) or studies.get(UNIT_COSTS_OF.get(name, ""))
    if own is None:
        return None
    if any(not isinstance((own["units"].get(unit_key(s)) or {}).get("measured_with", {}).get("clients"), int)
           for s in scales if s.read):
        return None  # a unit not measured, or without the rows it was timed at
    fitted = {k: fit_unit(u) for k, u in own["units"].items() if "clients" in u.get("measured_with", {})}
    classes = 1 if merged else ARM_CLASSES.get(name, 1)
    parts: dict[str, float] = {}
    sources = set()
    stacks = 0
    for scale, runs in stack_groups(scales, lambda s: own["units"][unit_key(s)].get("stack_fit")):
        sizes, source = client_sizes(name, scale, data_root)
        sources.add(source)
        for piece in _split(runs, classes):
            stacks += 1
            got = stack_seconds(scale, piece, draw_stack(scale, piece, sizes), fitted[unit_key(scale)])
            for key, v in got.items():
                parts[key] = parts.get(key, 0.0) + v
    seconds = sum(v for k, v in parts.items() if k not in ("chain", "row_steps"))
    return {"hours": seconds / 3600, "seconds": seconds, "stacks": stacks, "sizes": sorted(sources),
            "parts_hours": {k: v / 3600 for k, v in parts.items() if k not in ("chain", "row_steps")},
            "chain": int(parts.get("chain", 0)), "row_steps": int(parts.get("row_steps", 0))}


def _split(runs: int, pieces: int) -> list[int]:
    return [len(p) for p in np.array_split(np.arange(runs), min(pieces, runs)) if len(p)]


def load_table(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


H200_TABLE = Path("reports/bench-gpu/paper-cost.json")
H200_WORKLOAD = Path("reports/bench-gpu/workload.json")


def profile_names() -> list[str]:
    """The paper profile: FedProx's four studies and the other papers' paper-scale claim studies."""
    from fedbench.study.paper_profile import PAPER
    from fedbench.study.registry import PAPER_CLAIM_STUDIES

    return list(PAPER) + list(PAPER_CLAIM_STUDIES)


def price_profile(table: dict[str, Any], seeds: int = SEEDS, merged: bool = False, names: list[str] | None = None,
                  log=lambda _: None) -> dict[str, Any]:
    """Every study of the paper profile priced from its drawn schedule; ``total`` their sum (hours)."""
    from fedbench.study.paper_profile import study_scales

    scales = study_scales(seeds)
    out: dict[str, Any] = {}
    for name in names if names is not None else profile_names():
        log(f"    {name}")
        got = price_study(name, scales[name], table, merged)
        if got is not None:
            out[name] = got
    out_hours = {k: round(v["hours"], 3) for k, v in out.items()}
    return {"studies": out, "hours": out_hours, "total": round(sum(out_hours.values()), 2)}


def synthetic_seconds(workload: dict[str, Any], chain: int) -> float:
    """FedProx's synthetic study on the workload measurement's calibration (reports/bench-gpu/workload.json, all 140
    runs stacked as today): a chain step at the stacked runs' measured seconds per chain step (training seconds over
    the measured rounds' chain; the step's time did not grow with its rows: 180 us at 10 rows alone, 158 us at 500
    and 900, so it is latency, b = 0), plus the measured evaluation of all runs projected to the study's rounds."""
    whole = workload["subsets"]["all"]
    return whole["stacked_s_per_chain_step"] * chain + whole["stacked"]["projected_eval_s"]


def price_proxies(studies: tuple[str, ...] | None = None, chain: dict[str, Any] | None = None,
                  log=lambda _: None) -> dict[str, Any]:
    """The figures ``fedbench bench --parts proxies`` prints: the profile's GPU-hours from drawn schedules on the
    committed H200 table (``studies``: which; None: the profile), the synthetic study's seconds from its chain
    (``chain``: fedbench.bench.proxies.synthetic_chain's dict), and the calibration they were fitted on."""
    table = load_table(H200_TABLE)
    priced = price_profile(table, names=None if studies is None else list(studies), log=log)
    merged = price_profile(table, names=None if studies is None else list(studies), merged=True)
    workload = next(w for w in load_table(H200_WORKLOAD)["workloads"] if w["name"] == "fedprox_synthetic")
    synthetic = None
    if chain is not None and chain.get("rounds") == workload["rounds"]:
        synthetic = {"stacked_as_today": round(synthetic_seconds(workload, chain["chain"]), 1),
                     "one_stack": round(synthetic_seconds(workload, chain["one_stack_chain"]), 1)}
    return {"gpu_hours": priced["hours"] | {"total": priced["total"]},
            "gpu_hours_one_stack_a_study": merged["hours"] | {"total": merged["total"]}, "synthetic_s": synthetic,
            "calibration": {"table": str(H200_TABLE), "device": table["device_name"], "date": table["date"],
                            "torch": table["torch"], "workload": str(H200_WORKLOAD),
                            "synthetic_s_per_chain_step": workload["subsets"]["all"]["stacked_s_per_chain_step"],
                            "baseline_profile_hours": PROFILE_BASELINE_H}}

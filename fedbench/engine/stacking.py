"""Which runs share a stack, and how a study's stacks are spread over worker processes.

Runs that can share a stack (fedbench.engine.simulation.stack_key) are grouped; each group is then cut into
pieces so that the pieces, packed onto ``workers`` processes longest first, keep every process about equally
busy. A piece pays a fixed cost per local step (the stack's longest client chain, whatever the number of
runs in it) and a cost per row-step (one client's minibatch step); cutting a group into more pieces balances
the load but pays the per-step cost once more per piece, so a group is cut only while that pays.

The cost model (:func:`run_cost`) counts work, not seconds: its two constants are the per-step and per-row
costs of the mclr kernel measured on 2 CPU cores (``fedbench bench``); only their ratio matters here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STEP_COST = 20.0  # microseconds per local step of a stack (operation overhead, independent of its rows)
ROW_COST = 2.0  # microseconds per client minibatch step (arithmetic), mclr on the synthetic data


@dataclass(frozen=True)
class RunCost:
    steps: float  # expected local steps per round of the run's longest client chain
    rows: float  # expected client minibatch steps per round


def run_cost(spec) -> RunCost:
    """Expected per-round work of one run (a fedbench.engine.simulation.RunSpec) from its data sizes and settings:
    K of the N clients with training data train, each ceil(n_k / B) steps an epoch for E epochs (or exactly
    local_steps); stragglers do about half their epochs (U{1..E-1}) when their work is kept, none otherwise."""
    cfg = spec.cfg
    sizes = spec.dataset.train.sizes
    sizes = sizes[sizes > 0]
    per_epoch = -(-sizes // cfg.batch_size)
    steps = np.full(len(sizes), cfg.local_steps) if cfg.local_steps else per_epoch * cfg.local_epochs
    k = min(cfg.clients_per_round, len(sizes))
    f = cfg.straggler_fraction
    kept = 0.5 if getattr(spec.algorithm, "keeps_partial_work", True) else 0.0
    rows = k * float(steps.mean()) * ((1 - f) + f * kept)
    return RunCost(steps=float(steps.max()), rows=rows)


def piece_cost(costs: Sequence[RunCost]) -> float:
    return STEP_COST * max(c.steps for c in costs) + ROW_COST * sum(c.rows for c in costs)


MAX_PIECES = 4  # a group is cut into at most this many stacks
EXHAUSTIVE_PLANS = 4096  # up to this many ways of cutting the groups, every way is tried; beyond, a greedy search


def plan_stacks(specs: Sequence, workers: int, key=None) -> list[list[int]]:
    """Indices of ``specs`` grouped into stacks, cut and ordered for ``workers`` processes (costliest first).

    Runs are grouped by ``key`` (default: fedbench.engine.simulation.stack_key; every spec here must use the
    same model). Each group is cut into 1..MAX_PIECES stacks of about equal cost (runs dealt out by cost);
    the cuts chosen are those whose pieces, packed longest first, give the smallest largest load, and among
    equal loads the fewest pieces. With one worker every group stays whole. Where the ways of cutting exceed
    EXHAUSTIVE_PLANS (a study of many small groups: the SCAFFOLD quadratics' 66 groups of 3 have 3^66), the
    cuts grow greedily from every group whole, one cut at a time, the one that lowers that score most, until
    none does (the plan decides only how busy the workers are; a run's numbers never depend on it)."""
    if key is None:
        from fedbench.engine.simulation import stack_key as key
    groups: dict = {}
    for i, spec in enumerate(specs):
        groups.setdefault(key(spec), []).append(i)
    costs = [run_cost(s) for s in specs]
    groups_list = [sorted(g, key=lambda i: -costs[i].rows) for g in groups.values()]
    workers = max(1, workers)
    limits = [min(MAX_PIECES, len(g)) if workers > 1 else 1 for g in groups_list]

    def plan(cuts) -> tuple[list[list[int]], tuple[float, int]]:
        pieces = [g[j::n] for g, n in zip(groups_list, cuts) for j in range(n)]
        return pieces, (max(_pack(pieces, costs, workers)), len(pieces))

    if math.prod(limits) <= EXHAUSTIVE_PLANS:
        best, _ = min((plan(cuts) for cuts in itertools.product(*(range(1, n + 1) for n in limits))),
                      key=lambda p: p[1])
    else:
        cuts = [1] * len(groups_list)
        best, score = plan(cuts)
        while True:
            trials = [(plan(c), c) for c in (cuts[:i] + [cuts[i] + 1] + cuts[i + 1:] for i in range(len(cuts))
                                             if cuts[i] < limits[i])]
            better = [(s, c, p) for (p, s), c in trials if s < score]
            if not better:
                break
            score, cuts, best = min(better, key=lambda t: t[0])
    return sorted(best, key=lambda p: -piece_cost([costs[i] for i in p]))


def _pack(pieces: list[list[int]], costs: list[RunCost], workers: int) -> list[float]:
    """Loads of ``workers`` processes taking the pieces longest first, each to the least loaded process."""
    loads = [0.0] * workers
    for c in sorted((piece_cost([costs[i] for i in p]) for p in pieces), reverse=True):
        loads[loads.index(min(loads))] += c
    return loads

"""Step-size selection that float noise cannot flip, and a grid widened until the choice is interior (issue 32,
item 5). Pure functions over the tuning runs' readings; the studies run the runs.

Why: Mime Fashion chose its step on one tuning seed; on CUDA the run at lr = 0.1 ended at 81.4% against 76.7% on
the CPU (same seed, same code), so CUDA chose 0.1 and the CPU 0.01. A choice that a few points of run-to-run noise
can move is no finding, and neither is a choice at the end of the grid (the best step may lie beyond it: SCAFFOLD
Fashion's step sat at an edge in 6 of 6 cells).

The rule, stated once (:func:`choose`):

1. Each step of the grid has one reading per tuning seed (two or more tuning seeds; the same seeds for every step).
   ``higher_is_better`` says which way the reading points (accuracy: higher; rounds to a target: lower). A
   diverged run must be given as the reading's worst finite value (accuracy 0, the rounds run): NaN and
   infinities are refused.
2. The spread of a step is the range (max - min) of its readings over the tuning seeds: what the seed alone moves.
3. The leader is the step with the best mean. Another step is tied with it when the leader's mean beats it by no
   more than the larger of their two spreads. The leader is chosen only if no other step is tied with it (it
   beats the next by more than the spread between tuning seeds); otherwise the tie-break picks the smallest step
   of the tied set (the smaller step: slower, but the one a noisy reading cannot push into divergence). The rule
   holds for any knob read this way: :func:`choose` takes the tie-break's side (``tie_break="larger"``: the largest
   value tied) and the knob's name (deltafl_iambic chooses Delta-FL's conformity level theta, a tie going to the
   higher theta, the level closest to FedAvg; it calls :func:`choose` alone, its grid is the paper's three levels).
4. The choice is at an edge when the chosen step or the leader is the smallest or the largest step of the grid:
   the best step may lie beyond it. :func:`select` then widens the grid on that side by the grid's own ratio
   (:func:`extend`: the next step continues the geometric spacing of the two end steps), runs the new step's
   tuning runs, and chooses again, until the choice is interior or ``max_extensions`` steps were added on a side;
   then it says the choice could not be made interior.

Where it plugs in: fedbench/studies/mime_fashion.py (per arm, the mean test accuracy of the last 5 evaluations)
and fedbench/studies/scaffold_tables.py (per cell of scaffold_fashion's and scaffold_emnist's tables: rounds to the
target, lower is better, or the best accuracy) call :func:`select_all`, which widens the grids of every cell at
once so that the new steps' tuning runs go to the engine in one batch a widening; their rules quote
:func:`rule_text`, their entries :meth:`Selection.record` (the chosen step, the grid, the per-seed tuning readings).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

SIDES = ("smaller", "larger")
MAX_EXTENSIONS = 2  # steps added on a side before the choice is said to stay at the edge
K = TypeVar("K", bound=Hashable)


def rule_text(seeds: Sequence[int], reading: str, higher_is_better: bool = True,
              max_extensions: int = MAX_EXTENSIONS) -> str:
    """The selection rule as a claim's rule states it: ``reading`` (what a tuning run is read by) on tuning seeds
    ``seeds``."""
    better = "higher" if higher_is_better else "lower"
    return (f"selected on tuning seeds {', '.join(map(str, seeds))} by {reading} ({better} is better): the step with "
            "the best mean wins only if it beats every other step by more than the larger of the two steps' spreads (max "
            "- min over the tuning seeds), else the smallest step tied with it; a choice at an end of the grid adds a step beyond "
            f"it (the grid's ratio) and chooses again, at most {max_extensions} a side, else the entry says it stays "
            "at the edge")


@dataclass(frozen=True)
class Choice:
    """One choice on one grid: the ``step`` chosen, the ``leader`` (best mean), the steps ``tied`` with it, each
    step's ``mean`` and ``spread``, why (``reason``) and the sides on which the choice is at the grid's ``edge``."""

    step: float
    leader: float
    tied: tuple[float, ...]
    means: dict[float, float]
    spreads: dict[float, float]
    reason: str
    edge: tuple[str, ...]


@dataclass(frozen=True)
class Selection:
    """The outcome of :func:`select`: the last ``choice``, the ``grid`` it was made on, the steps ``added`` (in
    order), whether the choice is ``interior``, the sentence an entry states (``text``) and the tuning
    ``readings`` it was made from (step -> one reading per tuning seed)."""

    choice: Choice
    grid: tuple[float, ...]
    added: tuple[float, ...]
    interior: bool
    text: str
    readings: dict[float, tuple[float, ...]]
    higher_is_better: bool = True

    @property
    def step(self) -> float:
        return self.choice.step

    def record(self, digits: int = 4) -> dict[str, Any]:
        """What an entry records of the selection: the step chosen, the grid it was chosen on (the steps added
        too), whether the choice is interior, the per-seed tuning readings by step and the sentence saying why."""
        return {"step": self.step, "grid": list(self.grid), "added": list(self.added), "interior": self.interior,
                "better": "higher" if self.higher_is_better else "lower",
                "tuning": {f"{s:g}": [round(v, digits) for v in self.readings[s]] for s in self.grid},
                "why": self.text}


def _check(grid: Sequence[float], readings: Mapping[float, Sequence[float]], knob: str, tie_break: str) -> None:
    if len(grid) < 2 or any(s <= 0 for s in grid) or list(grid) != sorted(set(grid)):
        raise ValueError(f"{knob} grid {list(grid)}: needs two or more distinct positive values, ascending")
    if tie_break not in SIDES:
        raise ValueError(f"tie_break {tie_break!r}; allowed: {', '.join(SIDES)}")
    if set(readings) != set(grid):
        raise ValueError(f"tuning readings for {knob} {sorted(readings)}, grid {list(grid)}: every {knob} needs readings")
    n = {len(readings[s]) for s in grid}
    if len(n) != 1 or min(n) < 2:
        raise ValueError(f"tuning readings: every {knob} needs the same two or more tuning seeds, got counts {sorted(n)}")
    bad = [s for s in grid if not all(math.isfinite(float(x)) for x in readings[s])]
    if bad:
        raise ValueError(f"tuning readings at {knob} {bad}: not finite (give a diverged run the reading's worst "
                         "finite value)")


def choose(grid: Sequence[float], readings: Mapping[float, Sequence[float]], higher_is_better: bool = True,
           tie_break: str = "smaller", knob: str = "step") -> Choice:
    """The value of ``grid`` chosen from ``readings`` (value -> one reading per tuning seed) by the module's rule.
    ``tie_break`` ("smaller" or "larger") is the end of the tied set the rule takes (step sizes: the smaller);
    ``knob`` names the values in the reason (any knob: a step size, Delta-FL's conformity level theta)."""
    _check(grid, readings, knob, tie_break)
    sign = 1.0 if higher_is_better else -1.0
    toward = -1.0 if tie_break == "smaller" else 1.0
    means = {s: sum(map(float, readings[s])) / len(readings[s]) for s in grid}
    spreads = {s: max(map(float, readings[s])) - min(map(float, readings[s])) for s in grid}
    leader = max(grid, key=lambda s: (sign * means[s], toward * s))  # an exact tie of means: the tie-break's leads
    tied = tuple(s for s in grid if sign * (means[leader] - means[s]) <= max(spreads[leader], spreads[s]))
    step = min(tied) if tie_break == "smaller" else max(tied)
    if tied == (leader,):
        nxt = max((s for s in grid if s != leader), key=lambda s: sign * means[s])
        reason = (f"{leader:g} beats the next ({nxt:g}) by {abs(means[leader] - means[nxt]):.4g}, more than the "
                  f"spread between tuning seeds ({max(spreads[leader], spreads[nxt]):.4g})")
    else:
        others = ", ".join(f"{s:g}" for s in tied if s != leader)
        reason = (f"{leader:g} has the best mean but does not beat {others} by more than the spread between tuning "
                  f"seeds: the tie-break takes the {'smallest' if tie_break == 'smaller' else 'largest'} {knob}, "
                  f"{step:g}")
    edge = tuple(side for side, end in zip(SIDES, (grid[0], grid[-1])) if end in (step, leader))
    return Choice(step=step, leader=leader, tied=tied, means=means, spreads=spreads, reason=reason, edge=edge)


def extend(grid: Sequence[float], side: str) -> tuple[float, ...]:
    """``grid`` with one step added on ``side`` ("smaller" or "larger"), continuing the spacing of the two end
    steps on that side geometrically (0.01, 0.03, 0.1 -> 0.00333333 or 0.333333), kept to 6 significant digits (a
    step a run's config can state: 0.9, not 0.8999999999999999)."""
    if side not in SIDES:
        raise ValueError(f"grid side {side!r}; allowed: {', '.join(SIDES)}")
    g = sorted(grid)
    if len(g) < 2:
        raise ValueError(f"step-size grid {list(grid)}: needs two steps to continue its spacing")
    new = float(f"{(g[0] * g[0] / g[1] if side == 'smaller' else g[-1] * g[-1] / g[-2]):.6g}")
    return tuple([new, *g] if side == "smaller" else [*g, new])


def select_all(grids: Mapping[K, Sequence[float]],
               read: Callable[[K, tuple[float, ...]], tuple[Mapping[float, Sequence[float]], bool]],
               evaluate: Callable[[list[tuple[K, float]]], None] | None = None,
               max_extensions: int = MAX_EXTENSIONS) -> dict[K, Selection]:
    """:func:`select` for many grids at once (one per key: an arm, a table cell). ``read(key, grid)`` gives the
    key's tuning readings on ``grid`` (step -> one reading per tuning seed) and whether higher is better;
    ``evaluate(jobs)`` runs the tuning runs of the new (key, step) pairs of one widening, all in one call, so that
    ``read`` can read them next. ``evaluate`` None: no widening, only the statement of where it should go."""
    grids = {k: tuple(sorted(g)) for k, g in grids.items()}
    added: dict[K, list[float]] = {k: [] for k in grids}
    per_side = {k: dict.fromkeys(SIDES, 0) for k in grids}

    def decide(k: K) -> tuple[Choice, Mapping[float, Sequence[float]], bool]:
        r, higher = read(k, grids[k])
        return choose(grids[k], r, higher), r, higher

    done = {k: decide(k) for k in grids}
    while evaluate is not None:
        jobs = []
        for k, (choice, _, _) in done.items():
            for side in choice.edge:
                if per_side[k][side] < max_extensions:
                    grids[k] = extend(grids[k], side)
                    new = grids[k][0] if side == "smaller" else grids[k][-1]
                    jobs.append((k, new))
                    added[k].append(new)
                    per_side[k][side] += 1
        if not jobs:
            break
        evaluate(jobs)
        for k in {k for k, _ in jobs}:
            done[k] = decide(k)
    return {k: _selection(c, grids[k], tuple(added[k]), r, higher, evaluate is not None, max_extensions)
            for k, (c, r, higher) in done.items()}


def select(grid: Sequence[float], readings: Mapping[float, Sequence[float]],
           evaluate: Callable[[float], Sequence[float]] | None = None, higher_is_better: bool = True,
           max_extensions: int = MAX_EXTENSIONS) -> Selection:
    """Choose a step (:func:`choose`); while the choice is at an edge of the grid, add a step on that side
    (:func:`extend`), read it with ``evaluate(step)`` (its tuning runs: one reading per tuning seed, the seeds of
    ``readings``) and choose again, at most ``max_extensions`` steps a side. ``evaluate`` None: no extension,
    only the statement of where the grid should be extended."""
    r = {s: list(v) for s, v in readings.items()}

    def run(jobs: list[tuple[None, float]]) -> None:
        r.update({step: list(evaluate(step)) for _, step in jobs})

    return select_all({None: grid}, lambda _, g: ({s: r[s] for s in g}, higher_is_better),
                      run if evaluate is not None else None, max_extensions)[None]


def _selection(choice: Choice, grid: tuple[float, ...], added: tuple[float, ...],
               readings: Mapping[float, Sequence[float]], higher_is_better: bool, extended: bool,
               max_extensions: int) -> Selection:
    steps = ", ".join(f"{s:g}" for s in grid)
    if not choice.edge:
        text = f"step {choice.step:g} on the grid {steps}: {choice.reason}"
    elif not extended:
        text = (f"step {choice.step:g} on the grid {steps}: {choice.reason}; at the grid's edge: extend the grid "
                f"towards {' and '.join(f'{side} steps' for side in choice.edge)}")
    else:
        text = (f"step {choice.step:g} on the grid {steps}: {choice.reason}; still at the grid's edge "
                f"({' and '.join(choice.edge)} steps) after {max_extensions} added step(s) a side: the choice could "
                "not be made interior")
    return Selection(choice=choice, grid=grid, added=added, interior=not choice.edge, text=text,
                     readings={s: tuple(float(v) for v in readings[s]) for s in grid},
                     higher_is_better=higher_is_better)

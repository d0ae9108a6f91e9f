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
   of the tied set (the smaller step: slower, but the one a noisy reading cannot push into divergence).
4. The choice is at an edge when the chosen step or the leader is the smallest or the largest step of the grid:
   the best step may lie beyond it. :func:`select` then widens the grid on that side by the grid's own ratio
   (:func:`extend`: the next step continues the geometric spacing of the two end steps), runs the new step's
   tuning runs, and chooses again, until the choice is interior or ``max_extensions`` steps were added on a side;
   then it says the choice could not be made interior.

Where it plugs in (a later step, not wired here): fedbench/studies/mime_fashion.py ``tune`` (per arm: the grid
``Budget.lr_grid``, the readings ``accuracy(outcome, "tail", rounds)`` on ``Budget.tuning_seeds``, which needs a
second tuning seed; ``run`` would call :func:`select` with an ``evaluate`` that runs the new step's tuning jobs)
and ``run``'s "Step at an end of the grid" note (from ``Selection.text``); fedbench/studies/scaffold_tables.py
``select``/``selected_steps`` (per cell, rounds to the target with ``higher_is_better=False``, used by
scaffold_fashion.py and scaffold_emnist.py) and the ``selected_at_grid_edge`` list of its entries; the same for
fedbench/studies/scaffold_fashion.py's budgets, whose ``tuning_seeds`` (one) would need a second seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

SIDES = ("smaller", "larger")


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
    order), whether the choice is ``interior`` and the sentence an entry states (``text``)."""

    choice: Choice
    grid: tuple[float, ...]
    added: tuple[float, ...]
    interior: bool
    text: str


def _check(grid: Sequence[float], readings: Mapping[float, Sequence[float]]) -> None:
    if len(grid) < 2 or any(s <= 0 for s in grid) or list(grid) != sorted(set(grid)):
        raise ValueError(f"step-size grid {list(grid)}: needs two or more distinct positive steps, ascending")
    if set(readings) != set(grid):
        raise ValueError(f"tuning readings for steps {sorted(readings)}, grid {list(grid)}: every step needs readings")
    n = {len(readings[s]) for s in grid}
    if len(n) != 1 or min(n) < 2:
        raise ValueError(f"tuning readings: every step needs the same two or more tuning seeds, got counts {sorted(n)}")
    bad = [s for s in grid if not all(math.isfinite(float(x)) for x in readings[s])]
    if bad:
        raise ValueError(f"tuning readings at steps {bad}: not finite (give a diverged run the reading's worst "
                         "finite value)")


def choose(grid: Sequence[float], readings: Mapping[float, Sequence[float]], higher_is_better: bool = True) -> Choice:
    """The step of ``grid`` chosen from ``readings`` (step -> one reading per tuning seed) by the module's rule."""
    _check(grid, readings)
    sign = 1.0 if higher_is_better else -1.0
    means = {s: sum(map(float, readings[s])) / len(readings[s]) for s in grid}
    spreads = {s: max(map(float, readings[s])) - min(map(float, readings[s])) for s in grid}
    leader = max(grid, key=lambda s: (sign * means[s], -s))  # an exact tie of means: the smaller step leads
    tied = tuple(s for s in grid if sign * (means[leader] - means[s]) <= max(spreads[leader], spreads[s]))
    step = min(tied)
    if tied == (leader,):
        nxt = max((s for s in grid if s != leader), key=lambda s: sign * means[s])
        reason = (f"{leader:g} beats the next ({nxt:g}) by {abs(means[leader] - means[nxt]):.4g}, more than the "
                  f"spread between tuning seeds ({max(spreads[leader], spreads[nxt]):.4g})")
    else:
        others = ", ".join(f"{s:g}" for s in tied if s != leader)
        reason = (f"{leader:g} has the best mean but does not beat {others} by more than the spread between tuning "
                  f"seeds: the tie-break takes the smallest step, {step:g}")
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


def select(grid: Sequence[float], readings: Mapping[float, Sequence[float]],
           evaluate: Callable[[float], Sequence[float]] | None = None, higher_is_better: bool = True,
           max_extensions: int = 2) -> Selection:
    """Choose a step (:func:`choose`); while the choice is at an edge of the grid, add a step on that side
    (:func:`extend`), read it with ``evaluate(step)`` (its tuning runs: one reading per tuning seed, the seeds of
    ``readings``) and choose again, at most ``max_extensions`` steps a side. ``evaluate`` None: no extension,
    only the statement of where the grid should be extended."""
    g, r, added = tuple(sorted(grid)), dict(readings), []
    per_side = dict.fromkeys(SIDES, 0)
    choice = choose(g, r, higher_is_better)
    while choice.edge and evaluate is not None:
        open_sides = [side for side in choice.edge if per_side[side] < max_extensions]
        if not open_sides:
            break
        for side in open_sides:
            g = extend(g, side)
            new = g[0] if side == "smaller" else g[-1]
            r[new] = list(evaluate(new))
            added.append(new)
            per_side[side] += 1
        choice = choose(g, r, higher_is_better)
    steps = ", ".join(f"{s:g}" for s in g)
    if not choice.edge:
        text = f"step {choice.step:g} on the grid {steps}: {choice.reason}"
    elif evaluate is None:
        text = (f"step {choice.step:g} on the grid {steps}: {choice.reason}; at the grid's edge: extend the grid "
                f"towards {' and '.join(f'{side} steps' for side in choice.edge)}")
    else:
        text = (f"step {choice.step:g} on the grid {steps}: {choice.reason}; still at the grid's edge "
                f"({' and '.join(choice.edge)} steps) after {max_extensions} added step(s) a side: the choice could "
                "not be made interior")
    return Selection(choice=choice, grid=g, added=tuple(added), interior=not choice.edge, text=text)

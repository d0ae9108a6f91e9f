"""Reading one number off a run's per-round curve: the reading rules the claims use and compare.

A curve holds one value per evaluation, round 0 (the initial model) to round R (after the last round); a run
that diverged stops early, at the first non-finite training loss. Cutting a curve at a budget fraction b keeps
the evaluations of rounds 0..round(b R), so every claim can also be judged as if the runs had stopped earlier.

Readings (``READINGS``):
    tail     mean of the last TAIL evaluations (the default of fedbench's rules: one noisy round does not decide)
    final    the last evaluation
    best     the lowest loss / the highest accuracy over the evaluations
    paper    FedProx appendix C.3.2: the value at the first round that has converged (|f_t - f_t-1| < 1e-4) or
             started to diverge (f_t - f_t-10 > 1), else at the last round (fedbench.engine.metrics.reporting_round)

A diverged run (its loss non-finite, or its curve stopping before the cut) reads as an infinite loss and, from
the round it diverged, as accuracy 0: a model that has diverged predicts nothing usable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedbench.divergence import reporting_round

TAIL = 5
READINGS = ("tail", "final", "best", "paper")
NAMES = {"tail": f"mean of last {TAIL} rounds", "final": "final round", "best": "best round",
         "paper": "paper's rule (C.3.2)"}


def cut_round(rounds: int, budget: float) -> int:
    """The last round kept when ``rounds`` rounds are cut at ``budget`` (a fraction in (0, 1])."""
    if not 0 < budget <= 1:
        raise ValueError(f"budget {budget} must be in (0, 1]")
    return max(1, int(round(budget * rounds)))


def _cut(values: Sequence[float], rounds: int, budget: float) -> tuple[np.ndarray, bool]:
    """The curve up to the cut, and whether the run diverged by then (stopped early or non-finite)."""
    last = cut_round(rounds, budget)
    v = np.asarray(values, dtype=float)[: last + 1]
    return v, len(v) < last + 1


def read_loss(loss: Sequence[float], reading: str, rounds: int, budget: float = 1.0) -> float:
    """The training loss of one run under ``reading``, cut at ``budget`` of ``rounds`` (inf if it diverged)."""
    v, stopped = _cut(loss, rounds, budget)
    if stopped or len(v) == 0 or not np.all(np.isfinite(v)):
        if reading == "best" and len(v) and np.any(np.isfinite(v)):
            return float(np.nanmin(np.where(np.isfinite(v), v, np.nan)))
        return math.inf
    if reading == "tail":
        return float(v[-TAIL:].mean())
    if reading in ("final", "paper"):  # the paper reads its loss figures at their last round
        return float(v[-1])
    if reading == "best":
        return float(v.min())
    raise ValueError(f"reading {reading!r}; allowed: {', '.join(READINGS)}")


def read_accuracy(loss: Sequence[float], accuracy: Sequence[float], reading: str, rounds: int,
                  budget: float = 1.0) -> float:
    """The test accuracy of one run under ``reading`` (``loss`` locates divergence and the C.3.2 round)."""
    lv, stopped = _cut(loss, rounds, budget)
    av = np.asarray(accuracy, dtype=float)[: len(lv)]
    finite = np.isfinite(lv)
    dead = len(lv) if finite.all() else int(np.argmin(finite))  # first non-finite evaluation
    acc = np.where(np.arange(len(av)) < dead, av, 0.0)
    if stopped:
        last = cut_round(rounds, budget)
        acc = np.concatenate([acc, np.zeros(last + 1 - len(acc))])  # diverged before the cut: 0 from there on
    if reading == "tail":
        return float(acc[-TAIL:].mean())
    if reading == "final":
        return float(acc[-1])
    if reading == "best":
        return float(acc.max())
    if reading == "paper":
        at, reason = reporting_round(lv)
        if reason == "diverged":  # the model at a non-finite loss predicts nothing: read the last finite round
            at = max(0, at - 1)
        return float(acc[at])
    raise ValueError(f"reading {reading!r}; allowed: {', '.join(READINGS)}")


def upward_variation(loss: Sequence[float], rounds: int, budget: float = 1.0) -> float:
    """Sum of the rises of the training loss from one round to the next (0 for a monotone decrease): how much
    a curve goes the wrong way, the instability FedProx's figures show. Infinite for a diverged run."""
    v, stopped = _cut(loss, rounds, budget)
    if stopped or not np.all(np.isfinite(v)):
        return math.inf
    return float(np.clip(np.diff(v), 0.0, None).sum())


def rising_rounds(loss: Sequence[float], rounds: int, budget: float = 1.0) -> float:
    """Number of rounds whose training loss is above the previous round's; a diverged run counts every round
    from its divergence on."""
    v, _ = _cut(loss, rounds, budget)
    last = cut_round(rounds, budget)
    finite = np.isfinite(v)
    good = v[: int(np.argmin(finite))] if not finite.all() else v
    return float(np.sum(np.diff(good) > 0) + (last + 1 - len(good)))

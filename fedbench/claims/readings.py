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


# Readings of a per-round (or per-evaluation) curve that the paper-scale studies name; each was written in a study
# first (the study keeps its old name as an alias) and is tested on hand-made curves in tests/claims/test_readings.py.

def rounds_to_target(values: Sequence[float], target: float, rounds: int, hold: int = 1) -> int:
    """Rounds until a curve (one value per round 0..rounds) reaches ``target``: the first r with values[r..r+hold-1]
    all >= target ("first" for hold 1, "held" otherwise; a window cut short by the end counts on the values it has);
    ``rounds`` if never (a NaN, or a diverged run's missing rounds, never reaches it)."""
    v = [float(a) for a in values[: rounds + 1]]
    for r in range(len(v)):
        if all(a >= target for a in v[r: r + hold]):  # NaN compares False
            return r
    return rounds


def rounds_to_smoothed(curve: Sequence[float], target: float, smooth: int = 1,
                       rounds: Sequence[int] | None = None) -> int:
    """The first evaluated round (``rounds``, default 0, 1, 2, ...) at which the curve, or the running mean of its
    last ``smooth`` evaluations (fewer at the start), is at least ``target``; the curve's last round when it never
    gets there."""
    c = np.asarray(curve, dtype=float)
    t = np.arange(len(c)) if rounds is None else np.asarray(rounds)
    if smooth > 1:
        sums = np.cumsum(np.concatenate([[0.0], c]))
        width = np.minimum(np.arange(1, len(c) + 1), smooth)
        c = (sums[1:] - sums[np.arange(1, len(c) + 1) - width]) / width
    hit = np.flatnonzero(c >= target)
    return int(t[hit[0]]) if len(hit) else int(t[-1])


def best_of(values: Sequence[float], rounds: int) -> float:
    """The highest finite value over rounds 0..rounds (0 if none is finite): the best accuracy of a curve."""
    return max((float(a) for a in values[: rounds + 1] if math.isfinite(float(a))), default=0.0)


def tail_of(values: Sequence[float], rounds: int) -> float:
    """The mean of the last TAIL values within rounds 0..rounds, a missing (diverged) or non-finite one counting as
    0: the tail accuracy of a curve."""
    v = [float(a) for a in values[: rounds + 1]]
    v += [0.0] * (rounds + 1 - len(v))
    tail = [a if math.isfinite(a) else 0.0 for a in v[-TAIL:]]
    return sum(tail) / len(tail)


def device_percentile(values: Sequence[float], q: float = 90.0) -> float:
    """The q-th percentile over devices of a per-device value (e.g. test error), unweighted, numpy's linear
    interpolation (Delta-FL's authors' np.percentile): p90 over devices for q = 90."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


# --- a protocol that evaluates at some rounds only (every k rounds, listed rounds, the final model), read by round,
# not by list position, and the oscillation of such a curve (issue 19.3: read by the FedLaAvg, Mime and Delta-FL
# studies, written there first; each tested on hand-made curves in tests/claims/test_readings.py) ---

def evaluation_rounds(rounds: int, every: int, budget: float = 1.0) -> np.ndarray:
    """The rounds a protocol evaluating every ``every`` rounds and the final model reads, up to the cut
    (:func:`cut_round`): 0, every, 2 every, ..., and the final model (round ``rounds``) when the cut is the whole run."""
    last = cut_round(rounds, budget)
    t = list(range(0, last + 1, every))
    if last == rounds and t[-1] != last:
        t.append(last)
    return np.array(t)


def accuracy_at(accuracy: dict[int, float], rounds: Sequence[int], diverged_at: int | None = None) -> np.ndarray:
    """Accuracy in points (%) at the evaluated ``rounds`` (:func:`evaluation_rounds`), from a run's {round: accuracy
    as a fraction}; 0 from the round a run diverged on (``diverged_at``) and at the rounds it did not reach."""
    return np.array([100 * accuracy[t] if t in accuracy and (diverged_at is None or t < diverged_at) else 0.0
                     for t in map(int, rounds)])


CURVE_READINGS = ("best", "tail", "final")


def read_curve(curve: Sequence[float], reading: str) -> float:
    """``best`` (the highest), ``tail`` (the mean of the last TAIL) or ``final`` value of a curve at its evaluated
    rounds (one whose diverged rounds already read 0, as :func:`accuracy_at` gives it)."""
    c = np.asarray(curve, dtype=float)
    if reading == "best":
        return float(c.max())
    if reading == "tail":
        return float(c[-TAIL:].mean())
    if reading == "final":
        return float(c[-1])
    raise ValueError(f"reading {reading!r}; allowed: {', '.join(CURVE_READINGS)}")


def period_power(curve: Sequence[float], period: int, whole: bool = False,
                 rounds: Sequence[int] | None = None) -> float:
    """Oscillation power: a^2 / 2 of the period-``period`` sinusoid a cos(2 pi t / period + phi) in the least-squares
    fit of a line plus that sinusoid to ``curve`` evaluated at ``rounds`` t (default 0, 1, 2, ...), over the second
    half of the rounds (a whole number of periods ending at the last evaluated round), or over all of them
    (``whole``). NaN when that window holds less than one period or no evaluation."""
    c = np.asarray(curve, dtype=float)
    t = np.arange(len(c)) if rounds is None else np.asarray(rounds)
    last = int(t[-1])
    span = last + 1 if whole else (last + 1) // 2
    n = (span // period) * period
    inside = t > last - n
    if n < period or not inside.any():
        return math.nan
    tt = (t[inside] - (last - n + 1)).astype(float)
    angle = 2 * np.pi * tt / period
    design = np.column_stack([np.ones(len(tt)), tt / n, np.cos(angle), np.sin(angle)])
    coef = np.linalg.lstsq(design, c[inside], rcond=None)[0]
    return float((coef[2] ** 2 + coef[3] ** 2) / 2)


def peak_to_trough(curve: Sequence[float], window: int) -> float:
    """Oscillation amplitude: the highest minus the lowest of the last ``window`` values of a curve."""
    return float(np.ptp(np.asarray(curve, dtype=float)[-window:]))


def read_at_cut(values: dict[int, float], rounds: int, reading: str, budget: float = 1.0, *,
                diverged_at: int | None, diverged: float) -> float:
    """A run's {round: value} at its evaluations, read up to the round cut at ``budget`` of ``rounds``: "final" the
    last evaluation at or before the cut, "tail" the mean of the last TAIL of them; ``diverged`` (what a diverged run
    reads as: error 1, ...) when the run diverged at or before the cut (``diverged_at``: the round it stopped on) or
    evaluated nothing by then."""
    last = cut_round(rounds, budget)
    if diverged_at is not None and last >= diverged_at:
        return diverged
    kept = [v for r, v in values.items() if r <= last]
    if not kept:
        return diverged
    if reading == "final":
        return kept[-1]
    if reading == "tail":
        return float(np.mean(kept[-TAIL:]))
    raise ValueError(f"reading {reading!r}; allowed: final, tail")


# Readings of a decaying curve (a loss or suboptimality f - f*, one value per round), first written in
# fedbench.studies.scaffold_quadratics; tested in tests/claims/test_readings.py.

def rounds_per_decade(curve: Sequence[float], rounds: int, start: float = 1e-2, end: float = 1e-8) -> float:
    """Rounds the curve takes per decade in its converging phase: from the first round after its peak at or below
    ``start`` x peak to the first at or below ``end`` x peak, within rounds 0..rounds; 0 when both are the same
    round (a step landing on the optimum), inf if a value is non-finite or the curve does not get there."""
    g = np.asarray(curve, dtype=float)[: rounds + 1]
    if not np.all(np.isfinite(g)):
        return math.inf
    top = int(np.argmax(g))
    peak = g[top]
    if peak <= 0:
        return math.inf
    after = g[top:]
    first = np.flatnonzero(after <= start * peak)
    last = np.flatnonzero(after <= end * peak)
    if len(first) == 0 or len(last) == 0:
        return math.inf
    t1, t2 = int(first[0]), int(last[0])
    if t2 == t1:
        return 0.0
    decades = math.log10(max(after[t1], 1e-300) / max(after[t2], 1e-300))
    return (t2 - t1) / decades if decades > 0 else math.inf


def rounds_to_loss(curve: Sequence[float], target: float) -> int | None:
    """The first round at which a decaying curve is at or below ``target`` (a loss reaching a target); None if it
    never is (a NaN never is)."""
    hit = np.flatnonzero(np.asarray(curve, dtype=float) <= target)
    return int(hit[0]) if len(hit) else None


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho of ``x`` and ``y``: the Pearson correlation of their average ranks (ties share a rank; an
    infinite value ranks above every finite one). Undefined (NaN: a missing value, left out of every statistic,
    fedbench.claims.stats) when either has no spread: all-tied values order nothing, and reading them as 0 ("no
    correlation") would put a [0, 0] interval on seeds that measured nothing (issue 51, item 3)."""
    from scipy.stats import rankdata

    rx, ry = rankdata(x), rankdata(y)
    if np.ptp(rx) == 0 or np.ptp(ry) == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def loss_ratio(method: Sequence[float], baseline: Sequence[float], reading: str, rounds: int,
               budget: float = 1.0) -> float:
    """100 (a method's training loss / a baseline's - 1), read per round over ``budget`` of ``rounds`` rounds and
    summarised: the median over the second half of the rounds kept ("median": one chaotic round cannot move it), the
    final round ("final"), or the median over all rounds ("all"). A round after the method diverged (non-finite, or
    its run stopped) counts as infinite; NaN where the baseline itself failed (no comparison). FedDane against
    FedProx (fedbench.studies.feddane_synthetic, feddane_mu1)."""
    last = cut_round(rounds, budget)
    d = np.full(last + 1, np.inf)
    got = np.asarray(method[: last + 1], dtype=float)
    d[: len(got)] = np.where(np.isfinite(got), got, np.inf)
    p = np.asarray(baseline[: last + 1], dtype=float)
    if len(p) < last + 1 or not np.all(np.isfinite(p)):
        return float("nan")
    with np.errstate(invalid="ignore", over="ignore"):
        ratio = d / p
    windows = {"median": ratio[last // 2:], "final": ratio[-1:], "all": ratio}
    if reading not in windows:
        raise ValueError(f"reading {reading!r}; allowed: {', '.join(windows)}")
    return float(100 * (np.median(windows[reading]) - 1))


def loss_jumps(loss: Sequence[float]) -> int:
    """Rounds whose training loss is more than 1.5 times the previous round's, or turns non-finite."""
    x = np.asarray(loss, dtype=float)
    with np.errstate(invalid="ignore"):
        return int(np.sum((x[1:] > 1.5 * x[:-1]) | (~np.isfinite(x[1:]) & np.isfinite(x[:-1]))))

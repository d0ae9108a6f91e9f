"""Paired effects over seeds: the estimate, its 95% confidence interval, the per-seed values and a test.

Two methods run with the same seed see the same clients, stragglers, minibatches and initial model
(fedbench.seeding), so a comparison is made per seed and the per-seed differences are what varies. Given those
differences (already oriented so that a positive value is the paper's direction, or in whatever unit the claim
states):

- all finite, two or more seeds, some spread: the mean, the Student-t 95% interval mean +- t_{0.975, n-1} sd /
  sqrt(n) and the two-sided one-sample (= paired) t-test of a zero mean. The interval excludes zero exactly when
  p < 0.05.
- all finite and all equal (no spread: a discrete reading that came out the same on every seed), or a spread so
  small that the t interval, kept to DIGITS significant digits, would read zero width: a t interval of zero
  width and p = 0 is something no data of n seeds can support, so none is reported. The estimate is
  the common value, the interval the order-statistic interval of the median below ([x, x], with its coverage
  1 - 2 / 2^n stated: 93.75% for 5 seeds) and the test the exact sign test (p = 2 / 2^n: 0.0625 for 5 seeds).
- some value infinite (a diverged run: its loss counts as infinite, so a difference can be +-inf): the t
  interval is undefined. The estimate is then the median, the interval the distribution-free order-statistic
  interval for the median [x_(k), x_(n+1-k)] with the largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1)
  is still >= 95% (with fewer than 6 seeds no k reaches 95%: k = 1, [min, max], and the coverage is stated,
  e.g. 93.75% for 5 seeds), and the test the exact two-sided sign test (zero differences dropped).
- a deterministic setting (no seed randomness: one run per arm): the value itself, an interval of zero width
  and no test.
- one seed of a random setting: the value, no interval, no test.

A share (a reading that counts, per seed, in how many of a fixed number of cases something held: bounded
and discrete) is checked to be one (:class:`Share`) and then read as every other per-seed value: the seed is the
unit (issue 51, item 3). The fixed cases of one seed are no independent trials (the same data, clients and
minibatches run through all of them), so pooling them over seeds as binomial trials (the Clopper-Pearson interval
used until issue 51) overstated the evidence: 5 seeds each scoring 5 of 6 cases read as 25 of 30 trials, p = 0.0003,
where with the seed as the unit the sign test gives p = 0.0625 and the order-statistic interval covers 93.75%.

Level: an interval carries its ``coverage``; a rule stated at 95% cannot be met by an interval that covers less
(:func:`meets_level`; fedbench.claims.verdict.Rule.verdict: inconclusive, more seeds needed). With fewer than 6
seeds an order-statistic interval never reaches 95% (:func:`order_statistic_interval`), nor can the sign test fall
below 0.05.

Seeds of a confirmation (:func:`seeds_for_power`): the number of seeds whose t interval's expected half-width, with
the exploratory seeds' spread, falls below a declared target (half the published effect, or half the exploratory
one where the paper publishes no number), at least :data:`MIN_SEEDS` (the fewest whose order-statistic interval and
sign test can reach 95%), at most :data:`MAX_SEEDS`; stated before the confirmation runs.

Multiplicity (:func:`holm`): Holm's step-down adjustment of a family's p-values (fedbench.claims.verdict.holm_family
reads it over the headline entries).

NaN marks a missing value (a run that did not produce the quantity) and is left out of every statistic but
kept, as None, in the per-seed list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dataclasses import dataclass

import numpy as np


class _LazyScipyStats:
    """scipy.stats, imported at its first use: importing this module for its formatters (`fedbench show
    --claims` formats effects with fmt_effect) costs no scipy import, seconds on a loaded 2-core machine."""

    def __getattr__(self, name: str) -> Any:
        from scipy import stats

        return getattr(stats, name)


scipy_stats = _LazyScipyStats()  # the one way the claims modules reach scipy.stats

CONFIDENCE = 0.95
DIGITS = 6  # significant digits kept in the JSON


def _round(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    if math.isinf(x):
        return x  # json.dumps writes Infinity; fedbench.report.build writes claims with allow_nan
    return float(f"{x:.{DIGITS}g}")


def order_statistic_interval(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """(k, coverage): [x_(k), x_(n+1-k)] (1-based order statistics) is the narrowest symmetric interval for the
    median whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1) is at least ``confidence``; k = 1 when none is."""
    if n < 1:
        raise ValueError("order_statistic_interval needs n >= 1")
    best = (1, 1.0 - 2.0 * 0.5**n)
    for k in range(1, (n + 1) // 2 + 1):
        coverage = 1.0 - 2.0 * float(scipy_stats.binom.cdf(k - 1, n, 0.5))
        if coverage >= confidence:
            best = (k, coverage)
    return best


def sign_test(values: Sequence[float]) -> float:
    """Exact two-sided sign test of a zero median (zeros dropped); 1.0 when nothing is left."""
    v = np.asarray(values, dtype=float)
    pos, neg = int(np.sum(v > 0)), int(np.sum(v < 0))
    n = pos + neg
    if n == 0:
        return 1.0
    return min(1.0, 2.0 * float(scipy_stats.binom.cdf(min(pos, neg), n, 0.5)))


def paired_effect(values: Sequence[float | None], unit: str, deterministic: bool = False) -> dict[str, Any]:
    """The effect of a claim from its per-seed paired values (see the module docstring): a JSON-ready dict with
    ``estimate``, ``ci95`` ([low, high] or None), ``per_seed``, ``n``, ``test``, ``p_value``, ``coverage`` (of the
    interval) and ``unit``."""
    raw = [float("nan") if x is None else float(x) for x in values]
    v = np.asarray([x for x in raw if not math.isnan(x)], dtype=float)
    out: dict[str, Any] = {"estimate": None, "ci95": None, "per_seed": [_round(x) for x in raw], "n": int(len(v)),
                           "test": "none", "p_value": None, "coverage": None, "unit": unit}
    if len(v) == 0:
        out["test"] = "none (no values)"
        return out
    if deterministic:
        if len(v) != 1:
            raise ValueError(f"a deterministic setting has one value per arm, got {len(v)}")
        x = float(v[0])
        return out | {"estimate": _round(x), "ci95": [_round(x), _round(x)],
                      "test": "none (deterministic: no seed randomness, one run per arm)"}
    if len(v) == 1:
        return out | {"estimate": _round(float(v[0])), "test": "none (one seed: no interval)"}
    # spread = the values differ by more than rounding: 1e-12 relative is ~4,500 float64 ulps (2.2e-16), above the
    # rounding of a difference of two readings, and far below the 6 significant digits the JSON keeps
    narrow = False
    if np.all(np.isfinite(v)) and float(v.max() - v.min()) > 1e-12 * max(1.0, float(np.abs(v).max())):
        mean, sd, n = float(v.mean()), float(v.std(ddof=1)), len(v)
        half = float(scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * sd / math.sqrt(n)
        p = float(2 * scipy_stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))  # the paired t-test
        ci = [_round(mean - half), _round(mean + half)]
        if ci[0] != ci[1]:
            return out | {"estimate": _round(mean), "ci95": ci, "test": "paired t-test, two-sided",
                          "p_value": _round(p), "coverage": CONFIDENCE}
        narrow = True  # a spread below the DIGITS reported: the t interval would read zero width, so none is
    s = np.sort(v)
    k, coverage = order_statistic_interval(len(s))
    why = ("a run diverged: no t interval" if not np.all(np.isfinite(v)) else
           f"all {len(s)} values equal to the {DIGITS} significant digits reported: no t interval" if narrow else
           f"all {len(s)} values equal: no spread, so no t interval")
    return out | {"estimate": _round(float(np.median(s))), "ci95": [_round(float(s[k - 1])), _round(float(s[-k]))],
                  "test": f"sign test, two-sided ({why}); interval = order statistics of the median",
                  "p_value": _round(sign_test(s)), "coverage": _round(coverage)}


@dataclass(frozen=True)
class Share:
    """A per-seed reading that is a share: ``100 * k / cases - minus`` for k of ``cases`` cases (e.g. the share of
    six comparisons in which mu > 0 helped, minus 50 for "most cases"). The seed is the unit: the per-seed shares
    are read as any per-seed value (:func:`share_effect`), never pooled as trials."""

    cases: int
    minus: float = 0.0

    def __post_init__(self) -> None:
        if self.cases < 1 or not 0.0 <= self.minus <= 100.0:
            raise ValueError(f"a share needs cases >= 1 and 0 <= minus <= 100, got {self.cases}, {self.minus}")

    def text(self) -> str:
        return (f"interval: the seed is the unit: the 95% interval of the per-seed shares of the {self.cases} cases, "
                f"minus {self.minus:g} (a t interval, or the sign test and the median's order-statistic interval "
                f"where the seeds' shares have no spread); the cases of one seed are not independent trials")


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion with ``k`` successes in ``n`` trials."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"clopper_pearson needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    a = (1 - confidence) / 2
    lo = 0.0 if k == 0 else float(scipy_stats.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(scipy_stats.beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def share_effect(values: Sequence[float | None], share: Share, unit: str) -> dict[str, Any]:
    """The effect of a share reading (per seed ``100 * k / share.cases - share.minus``), the seed as the unit: each
    value checked to be a whole number of cases (a ValueError otherwise: the reading is not the share the rule
    declares), then :func:`paired_effect` of the per-seed values, its test saying how many cases each seed had."""
    raw = [float("nan") if x is None else float(x) for x in values]
    for x in raw:
        if math.isnan(x):
            continue
        k = (x + share.minus) * share.cases / 100.0
        # k is whole up to rounding: a value kept to 6 significant digits (the JSON's) is off by at most 5e-5 (it is
        # at most 100), i.e. 5e-7 x cases in k; 1e-3 covers up to 2,000 cases and is far below the 1 between shares
        if abs(k - round(k)) > 1e-3 or not 0 <= round(k) <= share.cases:
            raise ValueError(f"share reading {x!r} is not 100 * k / {share.cases} - {share.minus:g} for a whole k")
    out = paired_effect(raw, unit)
    if out["n"] >= 2:
        out["test"] = f"{out['test']}; the seed is the unit ({out['n']} seeds, each a share of {share.cases} cases)"
    return out


def meets_level(effect: dict[str, Any], level: float = CONFIDENCE) -> bool:
    """Whether ``effect``'s interval is at ``level`` at least: a deterministic value (no seed randomness: exact), or an
    interval whose stated ``coverage`` reaches ``level``. An interval that states no coverage does not."""
    if str(effect.get("test", "")).startswith("none (deterministic"):
        return True
    coverage = effect.get("coverage")
    return coverage is not None and float(coverage) >= level - 1e-12


MIN_SEEDS = 6  # the fewest seeds whose order-statistic interval (and sign test) can reach 95%: 1 - 2 / 2^6 = 96.9%
MAX_SEEDS = 20  # the most a confirmation's power rule asks for; beyond it the confirmation runs at 20 and says so
POWER_FRACTION = 0.5  # the target half-width: half the published effect (or the exploratory one without a number)


def seeds_for_power(per_seed: Sequence[float | None], target: float, confidence: float = CONFIDENCE,
                    least: int = MIN_SEEDS, most: int = MAX_SEEDS) -> dict[str, Any]:
    """The power rule of a confirmation, stated before it runs: the fewest seeds n (``least`` <= n <= ``most``) for
    which the t interval's half-width t_{(1+confidence)/2, n-1} sd / sqrt(n), with sd the exploratory ``per_seed``
    values' standard deviation, is below ``target`` (> 0). Returns {"seeds", "sd", "target", "reached", "text"};
    where no spread is known (fewer than 2 finite values, or none: a discrete reading), ``least`` seeds."""
    if not target > 0 or not math.isfinite(target):
        raise ValueError(f"a power rule needs a finite target half-width > 0, got {target!r}")
    if least < 2 or most < least:
        raise ValueError(f"a power rule needs 2 <= least <= most, got {least}, {most}")
    v = np.asarray([float(x) for x in per_seed if x is not None and math.isfinite(float(x))], dtype=float)
    sd = float(v.std(ddof=1)) if len(v) >= 2 else 0.0
    n, reached = least, True
    if sd > 0:
        while float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n) >= target:
            if n == most:
                reached = False
                break
            n += 1
    said = (f"{n} seeds: the fewest (at least {least}) whose {confidence:.0%} t interval's half-width, at the exploratory "
            f"seeds' sd {fmt_number(sd)}, is below {fmt_number(target)}" if reached and sd > 0 else
            f"{n} seeds: no spread known from the exploratory seeds; the fewest whose order-statistic interval reaches "
            f"{confidence:.0%}" if reached else
            f"{n} seeds (the most the rule allows): the half-width stays at or above {fmt_number(target)} at the "
            f"exploratory seeds' sd {fmt_number(sd)}; the confirmation may be inconclusive by design")
    return {"seeds": n, "sd": _round(sd), "target": _round(target), "reached": reached, "text": said}


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: with the p-values sorted p_(1) <= ... <= p_(m), the
    adjusted p_(i) is max_{j <= i} min(1, (m - j + 1) p_(j)). A hypothesis is rejected at family-wise level alpha
    exactly when its adjusted p-value is below alpha."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * float(p_values[i])))
        out[i] = running
    return out


def fmt_number(x: float | None, signed: bool = False, digits: int = 3) -> str:
    """A number for the report: 3 significant digits (more for large values), '+' when ``signed``, 'inf'."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if math.isinf(x):
        return ("+" if signed and x > 0 else "-" if x < 0 else "") + "inf"
    mag = abs(x)
    if mag != 0 and (mag >= 1e5 or mag < 1e-3):
        text = f"{x:.{digits - 1}e}"
    else:
        places = max(0, digits - 1 - int(math.floor(math.log10(mag)))) if mag else 0
        text = f"{x:.{places}f}"
    return ("+" + text) if signed and x > 0 else text


def fmt_effect(effect: dict[str, Any]) -> str:
    """'+16.4 [-12.9, +45.7] accuracy points' (the estimate with its interval and unit), or 'n/a'."""
    if effect is None or effect.get("estimate") is None:
        return "n/a"
    text = fmt_number(effect["estimate"], signed=True)
    if effect.get("ci95") is not None:
        lo, hi = effect["ci95"]
        if str(effect.get("test", "")).startswith("none (deterministic"):
            text += " (deterministic)"
        else:
            text += f" [{fmt_number(lo, signed=True)}, {fmt_number(hi, signed=True)}]"
    else:
        text += " (no interval)"
    return f"{text} {effect['unit']}"

"""Paired effects over seeds: the estimate, its 95% confidence interval, the per-seed values and a test.

Two methods run with the same seed see the same clients, stragglers, minibatches and initial model
(fedbench.seeding), so a comparison is made per seed and the per-seed differences are what varies. Given those
differences (already oriented so that a positive value is the paper's direction, or in whatever unit the claim
states):

- all finite, two or more seeds: the mean, the Student-t 95% interval mean +- t_{0.975, n-1} sd / sqrt(n) and
  the two-sided one-sample (= paired) t-test of a zero mean. The interval excludes zero exactly when p < 0.05.
- some value infinite (a diverged run: its loss counts as infinite, so a difference can be +-inf): the t
  interval is undefined. The estimate is then the median, the interval the distribution-free order-statistic
  interval for the median [x_(k), x_(n+1-k)] with the largest k whose coverage 1 - 2 P(Bin(n, 1/2) <= k - 1)
  is still >= 95% (with fewer than 6 seeds no k reaches 95%: k = 1, [min, max], and the coverage is stated,
  e.g. 93.75% for 5 seeds), and the test the exact two-sided sign test (zero differences dropped).
- a deterministic setting (no seed randomness: one run per arm): the value itself, an interval of zero width
  and no test.
- one seed of a random setting: the value, no interval, no test.

NaN marks a missing value (a run that did not produce the quantity) and is left out of every statistic but
kept, as None, in the per-seed list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as _scipy_stats

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
        coverage = 1.0 - 2.0 * float(_scipy_stats.binom.cdf(k - 1, n, 0.5))
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
    return min(1.0, 2.0 * float(_scipy_stats.binom.cdf(min(pos, neg), n, 0.5)))


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
    if np.all(np.isfinite(v)):
        mean, sd, n = float(v.mean()), float(v.std(ddof=1)), len(v)
        half = float(_scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * sd / math.sqrt(n)
        if sd <= 1e-12 * max(1.0, abs(mean)):  # no spread (up to rounding): the mean is exact
            sd, half = 0.0, 0.0
            p = 1.0 if abs(mean) <= 1e-12 else 0.0
        else:  # the one-sample t-test of the differences, i.e. the paired t-test
            p = float(2 * _scipy_stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))
        return out | {"estimate": _round(mean), "ci95": [_round(mean - half), _round(mean + half)],
                      "test": "paired t-test, two-sided", "p_value": _round(p), "coverage": CONFIDENCE}
    s = np.sort(v)
    k, coverage = order_statistic_interval(len(s))
    return out | {"estimate": _round(float(np.median(s))), "ci95": [_round(float(s[k - 1])), _round(float(s[-k]))],
                  "test": "sign test, two-sided (a run diverged: no t interval); interval = order statistics of "
                          "the median",
                  "p_value": _round(sign_test(s)), "coverage": _round(coverage)}


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

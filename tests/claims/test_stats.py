"""Paired effects: the t interval and p-value against scipy and a hand computation, the sign test and the
order-statistic interval when a run diverged, deterministic and one-seed settings, and the report's number
formats."""

import math

import numpy as np
import pytest
from scipy import stats

from fedbench.claims.stats import (MIN_SEEDS, Share, fmt_effect, fmt_number, holm, meets_level,
                                   order_statistic_interval, paired_effect, seeds_for_power, share_effect, sign_test)


def test_t_interval_and_p_value_by_hand():
    e = paired_effect([1.0, 2.0, 3.0, 4.0, 5.0], "points")
    # mean 3, sd sqrt(2.5), se sqrt(2.5/5) = 0.70711; t_{0.975, 4} = 2.776445; t = 3 / 0.70711 = 4.24264
    half = 2.7764451051977987 * math.sqrt(0.5)
    assert e["estimate"] == 3.0 and e["n"] == 5
    assert e["ci95"] == [pytest.approx(3 - half, rel=1e-5), pytest.approx(3 + half, rel=1e-5)]
    assert e["ci95"][0] == pytest.approx(1.03676, abs=1e-5)
    assert e["p_value"] == pytest.approx(2 * stats.t.sf(3 / math.sqrt(0.5), 4), rel=1e-5)
    assert e["p_value"] == pytest.approx(0.013236, abs=1e-6)
    assert e["test"] == "paired t-test, two-sided" and e["coverage"] == 0.95 and e["unit"] == "points"


def test_paired_values_match_scipy_paired_test():
    g = np.random.default_rng(3)
    a, b = g.normal(1.0, 1.0, 7), g.normal(0.5, 1.0, 7)
    e = paired_effect(list(a - b), "loss")
    ref = stats.ttest_rel(a, b)
    lo, hi = ref.confidence_interval(0.95)
    assert e["p_value"] == pytest.approx(ref.pvalue, rel=1e-5)
    assert e["ci95"] == [pytest.approx(lo, rel=1e-5), pytest.approx(hi, rel=1e-5)]
    assert e["estimate"] == pytest.approx(float(np.mean(a - b)), rel=1e-5)


def test_interval_excludes_zero_exactly_when_p_below_five_percent():
    for values in ([0.1, 0.2, 0.15, 0.3, 0.05], [0.1, -0.2, 0.15, 0.3, 0.05], [-1, -2, -1.5, -1.2, -0.9]):
        e = paired_effect(values, "")
        lo, hi = e["ci95"]
        assert (lo > 0 or hi < 0) == (e["p_value"] < 0.05)


def test_no_spread_reports_no_t_interval_but_the_sign_test():
    # five equal differences: a t interval would be [2, 2] with p = 0; the honest statement is the sign test,
    # 5 of 5 positive: p = 2 / 2^5 = 0.0625, and the median's order-statistic interval [x_(1), x_(5)] at 93.75%
    e = paired_effect([2.0, 2.0, 2.0, 2.0, 2.0], "x")
    assert e["estimate"] == 2.0 and e["ci95"] == [2.0, 2.0]
    assert e["p_value"] == 0.0625 and e["coverage"] == 0.9375
    assert e["test"] == ("sign test, two-sided (all 5 values equal: no spread, so no t interval); interval = order "
                         "statistics of the median")
    assert paired_effect([0.0, 0.0], "x")["p_value"] == 1.0  # no non-zero difference: nothing to test
    assert paired_effect([1.0, 1.0 + 1e-15], "x")["test"].startswith("sign test")  # rounding is no spread
    # a spread of 1e-9: mean 1 + 5e-10, half-width t_{.975,1} sd / sqrt(2) = 12.706 * 5e-10 = 6.4e-9, so the t
    # interval kept to 6 significant digits reads [1.0, 1.0] with p = 0.032: never reported; the sign test instead
    narrow = paired_effect([1.0, 1.0 + 1e-9], "x")
    assert narrow["ci95"] == [1.0, 1.0] and narrow["test"] == (
        "sign test, two-sided (all 2 values equal to the 6 significant digits reported: no t interval); interval = "
        "order statistics of the median") and narrow["p_value"] == 0.5
    small = paired_effect([1.0, 1.001], "x")  # a spread the digits show: the t interval, of non-zero width
    assert small["test"] == "paired t-test, two-sided" and small["ci95"][0] < small["ci95"][1]


def test_a_share_takes_the_seed_as_its_unit():
    # mu-increases-accuracy's reading: per seed 100 * k / 6 - 50; every one of 5 seeds scores 5 of 6. Pooled as 30
    # Clopper-Pearson trials (until issue 51) that read +33.3 [+15.3, +44.4], p = 0.0003; the seed as the unit: five
    # equal values, the sign test p = 2 / 2^5 = 0.0625 and the median's order-statistic interval at 93.75%
    share = Share(cases=6, minus=50.0)
    e = share_effect([100 * 5 / 6 - 50] * 5, share, "% of cases")
    assert e["estimate"] == pytest.approx(33.3333, abs=1e-4) and e["ci95"] == [33.3333, 33.3333]
    assert e["p_value"] == 0.0625 and e["coverage"] == 0.9375 and e["n"] == 5
    assert e["test"].endswith("the seed is the unit (5 seeds, each a share of 6 cases)")
    assert not meets_level(e)  # a 95% rule cannot be met by it
    spread = share_effect([100 * k / 6 - 50 for k in (3, 4, 5, 5, 6)], share, "% of cases")  # a t interval
    v = np.array([0.0, 100 / 6, 100 / 3, 100 / 3, 50.0])
    half = stats.t.ppf(0.975, 4) * v.std(ddof=1) / math.sqrt(5)
    assert spread["ci95"] == [pytest.approx(v.mean() - half, rel=1e-5), pytest.approx(v.mean() + half, rel=1e-5)]
    assert meets_level(spread) and spread["coverage"] == 0.95
    with pytest.raises(ValueError, match="whole k"):
        share_effect([10.0], share, "%")  # 60% of 6 cases is no whole number of cases
    with pytest.raises(ValueError, match="cases >= 1"):
        Share(cases=0)


def test_meets_level_reads_the_actual_coverage():
    assert meets_level(paired_effect([1.0, 2.0, 3.0], "x"))  # a t interval: 95%
    assert not meets_level(paired_effect([1.0, 2.0, math.inf, 4.0, 5.0], "x"))  # order statistics of 5: 93.75%
    assert meets_level(paired_effect([1.0, 2.0, math.inf, 4.0, 5.0, 6.0], "x"))  # of 6: 96.9%
    assert meets_level(paired_effect([0.5], "x", deterministic=True))  # exact
    assert not meets_level({"ci95": [1.0, 2.0], "test": "paired t-test, two-sided"})  # no coverage stated
    assert not meets_level(paired_effect([2.0] * 5, "x"), 0.95) and meets_level(paired_effect([2.0] * 5, "x"), 0.9)


def test_power_rule_gives_the_seeds_whose_half_width_is_below_the_target():
    # sd 2 (values 1..5 scaled: sd of [0, 2, 4, 6, 8]/sqrt(2.5)...): take values with sd exactly 2: [-2, 0, 2, 0, 0]
    # has sd sqrt(8/4) = 1.414; use [1, 3, 5, 7, 9]: sd sqrt(10) = 3.1623; target 2: n with t_{.975,n-1} 3.1623 /
    # sqrt(n) < 2: n = 12 gives 2.201 x 0.9129 = 2.009 (no), n = 13 gives 2.179 x 0.8771 = 1.911 (yes)
    r = seeds_for_power([1.0, 3.0, 5.0, 7.0, 9.0], target=2.0)
    assert r["seeds"] == 13 and r["reached"] and r["sd"] == pytest.approx(math.sqrt(10), rel=1e-5)
    assert stats.t.ppf(0.975, 11) * math.sqrt(10 / 12) >= 2.0 > stats.t.ppf(0.975, 12) * math.sqrt(10 / 13)
    assert seeds_for_power([1.0, 3.0, 5.0, 7.0, 9.0], target=100.0)["seeds"] == MIN_SEEDS == 6  # at least 6
    assert seeds_for_power([2.0] * 5, target=1.0)["seeds"] == 6  # no spread known: the fewest that can reach 95%
    capped = seeds_for_power([1.0, 3.0, 5.0, 7.0, 9.0], target=0.1)
    assert capped["seeds"] == 20 and not capped["reached"] and "inconclusive by design" in capped["text"]
    with pytest.raises(ValueError, match="target"):
        seeds_for_power([1.0, 2.0], target=0.0)


def test_holm_step_down_by_hand():
    # m = 4: sorted 0.01, 0.02, 0.03, 0.04 -> 4 x 0.01 = 0.04, 3 x 0.02 = 0.06, 2 x 0.03 = 0.06, 1 x 0.04 -> 0.06
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # 2 x 0.8 capped at 1
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])  # 1 x 0.04 stays at the earlier 0.06
    assert holm([]) == []


def test_diverged_run_uses_median_order_statistics_and_sign_test():
    e = paired_effect([1.0, 2.0, math.inf, 4.0, 5.0], "loss")
    assert e["estimate"] == 4.0  # the median
    assert e["ci95"] == [1.0, math.inf]  # [x_(1), x_(5)]: no k reaches 95% with 5 seeds
    assert e["coverage"] == pytest.approx(1 - 2 * 0.5**5)  # 93.75%
    assert e["p_value"] == pytest.approx(2 * 0.5**5)  # all five positive: 0.0625
    assert e["test"].startswith("sign test")


def test_order_statistic_interval_reaches_95_percent_from_six_seeds():
    assert order_statistic_interval(5) == (1, pytest.approx(0.9375))
    k, cov = order_statistic_interval(6)
    assert k == 1 and cov == pytest.approx(1 - 2 / 64)
    k, cov = order_statistic_interval(10)
    assert k == 2 and cov == pytest.approx(1 - 2 * stats.binom.cdf(1, 10, 0.5))  # 97.85%; k = 3 gives 89%


def test_sign_test_by_hand():
    assert sign_test([1, 2, -3, 4, 5]) == pytest.approx(2 * (1 + 5) / 32)  # 2 P(Bin(5, 1/2) <= 1) = 0.375
    assert sign_test([0, 0]) == 1.0
    assert sign_test([1, 0, 2]) == pytest.approx(0.5)  # zero dropped: n = 2, both positive


def test_missing_values_deterministic_and_one_seed():
    e = paired_effect([1.0, None, 3.0], "x")
    assert e["n"] == 2 and e["per_seed"] == [1.0, None, 3.0] and e["estimate"] == 2.0
    d = paired_effect([0.5], "x", deterministic=True)
    assert d["ci95"] == [0.5, 0.5] and d["p_value"] is None and d["test"].startswith("none (deterministic")
    one = paired_effect([0.5], "x")
    assert one["ci95"] is None and one["test"] == "none (one seed: no interval)"
    with pytest.raises(ValueError, match="one value per arm"):
        paired_effect([1.0, 2.0], "x", deterministic=True)
    assert paired_effect([], "x")["estimate"] is None


def test_formats():
    assert fmt_number(16.4123, signed=True) == "+16.4"
    assert fmt_number(-0.01234, signed=True) == "-0.0123"
    assert fmt_number(1.5e-9) == "1.50e-09" and fmt_number(math.inf, signed=True) == "+inf"
    assert fmt_number(None) == "n/a" and fmt_number(0.0) == "0"
    assert fmt_effect(paired_effect([1.0, 2.0, 3.0, 4.0, 5.0], "points")) == "+3.00 [+1.04, +4.96] points"
    assert fmt_effect(paired_effect([0.2], "x", deterministic=True)) == "+0.200 (deterministic) x"
    assert fmt_effect(None) == "n/a"

"""Weighted quantile and superquantile weights: exact numbers, the authors' replicate-and-sort quantile, and
strong duality of the superquantile's primal (max over capped mixtures) and dual (min over eta) forms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from fedbench.quantile import superquantile, superquantile_weights, weighted_quantile


def authors_quantile(p: Fraction, values, weights) -> float:
    """simplicial-fl models/server.py: repeat each value w_i times, sort, take ceil(n p) - 1 (p = 0: first),
    with p an exact fraction (the level the user meant, without floating-point error)."""
    v = np.sort(np.repeat(np.asarray(values, float), np.asarray(weights, int)))
    if p == 0:
        return float(v[0])
    return float(v[math.ceil(len(v) * p) - 1])


def dual_value(values, weights, theta) -> float:
    """min over eta of eta + (1/theta) sum alpha_i (F_i - eta)_+; the minimum of this convex piecewise-linear
    function of eta is at one of the F_i."""
    values = np.asarray(values, float)
    alpha = np.asarray(weights, float) / np.sum(weights)
    return min(eta + (alpha * np.maximum(values - eta, 0.0)).sum() / theta for eta in values)


def test_weighted_quantile_exact_numbers():
    values, weights = [3.0, 1.0, 2.0, 5.0], [1, 2, 3, 4]  # sorted: 1 (w 2), 2 (w 3), 3 (w 1), 5 (w 4); total 10
    assert weighted_quantile(values, weights, 0.0) == 1.0  # p = 0: the smallest value (keep everyone)
    assert weighted_quantile(values, weights, 0.2) == 1.0  # cumulative 2 >= 2
    assert weighted_quantile(values, weights, 0.21) == 2.0
    assert weighted_quantile(values, weights, 0.5) == 2.0  # cumulative 5 >= 5
    assert weighted_quantile(values, weights, 0.6) == 3.0  # cumulative 6 >= 6
    assert weighted_quantile(values, weights, 0.61) == 5.0
    assert weighted_quantile(values, weights, 1.0) == 5.0


@pytest.mark.parametrize("theta", [1.0, 0.9, 0.8, 0.7, 0.5, 0.3, 0.2, 0.1, 1 / 3, 2 / 3])
def test_weighted_quantile_is_the_authors_quantile(theta):
    g = np.random.default_rng(0)
    for _ in range(50):
        k = int(g.integers(1, 8))
        values = np.round(g.normal(size=k), 1)  # rounded: ties happen
        weights = g.integers(1, 12, size=k)
        p = 1.0 - theta  # computed as Delta-FL computes it, with its floating-point error
        expected = authors_quantile(1 - Fraction(theta).limit_denominator(100), values, weights)
        assert weighted_quantile(values, weights, p) == expected


def test_zero_weights_are_ignored_and_bad_input_rejected():
    assert weighted_quantile([0.0, 5.0, 7.0], [0, 1, 1], 0.0) == 5.0
    with pytest.raises(ValueError, match="quantile level"):
        weighted_quantile([1.0], [1.0], 1.5)
    with pytest.raises(ValueError, match="weights"):
        weighted_quantile([1.0, 2.0], [0.0, 0.0], 0.5)
    with pytest.raises(ValueError, match="matching"):
        weighted_quantile([1.0, 2.0], [1.0], 0.5)
    with pytest.raises(ValueError, match="conformity"):
        superquantile_weights([1.0], [1.0], 0.0)


def test_superquantile_weights_exact_numbers():
    values, n = [4.0, 1.0, 3.0, 2.0], [10.0, 20.0, 30.0, 40.0]  # total 100
    # theta = 0.5: caps 2 n = 20, 40, 60, 80. Descending: 4.0 (cap 20), 3.0 (cap 60), then 2.0 gets 100 - 80.
    np.testing.assert_array_equal(superquantile_weights(values, n, 0.5), [20.0, 0.0, 60.0, 20.0])
    assert superquantile(values, n, 0.5) == pytest.approx((20 * 4 + 60 * 3 + 20 * 2) / 100)
    # theta = 1: everyone keeps exactly its weight (bit for bit).
    np.testing.assert_array_equal(superquantile_weights(values, n, 1.0), n)
    # theta -> small: all the mass on the largest value (the max)
    np.testing.assert_array_equal(superquantile_weights(values, n, 0.05), [100.0, 0.0, 0.0, 0.0])
    assert superquantile(values, n, 0.05) == 4.0


@pytest.mark.parametrize("theta", [1.0, 0.8, 2 / 3, 0.5, 1 / 3, 0.1])
def test_superquantile_primal_equals_dual_and_weights_are_feasible(theta):
    g = np.random.default_rng(1)
    for _ in range(50):
        k = int(g.integers(1, 9))
        values = g.normal(size=k)
        weights = g.integers(1, 50, size=k).astype(float)
        pi = superquantile_weights(values, weights, theta)
        assert pi.sum() == pytest.approx(weights.sum())
        assert np.all(pi >= 0) and np.all(pi <= weights / theta * (1 + 1e-12))
        assert superquantile(values, weights, theta) == pytest.approx(dual_value(values, weights, theta), abs=1e-12)
        # the boundary: everything above the (1 - theta)-quantile is at its cap, everything below is 0
        q = weighted_quantile(values, weights, 1 - theta)
        above, below = values > q, values < q
        np.testing.assert_allclose(pi[above], weights[above] / theta)
        assert np.all(pi[below] == 0)


def test_superquantile_is_between_mean_and_max():
    values, weights = np.array([0.5, 2.0, 1.0]), np.array([1.0, 1.0, 2.0])
    assert superquantile(values, weights, 1.0) == pytest.approx(np.average(values, weights=weights))
    assert superquantile(values, weights, 0.25) == 2.0
    assert not math.isnan(superquantile(values, weights, 0.6))

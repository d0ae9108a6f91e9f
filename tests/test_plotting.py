"""fedbench.plotting.median_curve: the per-round median over seeds that the FedDane studies draw, exact on a
hand-made stack (a short curve and a non-finite value drop their seed from those rounds only)."""

import math

import numpy as np

from fedbench.plotting import median_curve


def test_median_curve_is_the_per_round_median_of_the_seeds_that_have_the_round():
    curves = [[1.0, 2.0, 3.0, 4.0], [3.0, 4.0, float("inf"), 8.0], [2.0, 9.0]]  # seed 2 stopped after round 1
    got = median_curve(curves, rounds=3)
    assert got.tolist() == [2.0, 4.0, 3.0, 6.0]  # round 2: only 3.0 is finite; round 3: median of 4 and 8


def test_a_round_no_seed_reached_is_nan_and_the_length_is_rounds_plus_one():
    got = median_curve([[1.0], [5.0]], rounds=2)
    assert len(got) == 3 and got[0] == 3.0 and all(math.isnan(v) for v in got[1:])
    assert np.array_equal(median_curve([[7.0, 6.0]], rounds=1), np.array([7.0, 6.0]))

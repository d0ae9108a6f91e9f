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


def test_an_algorithm_s_colour_is_one_everywhere():
    """The report (by label, PALETTE / palette()) and `fedbench compare` (by variant) draw an algorithm alike; any
    other name gets a colour of its own, the same in every process (a hash of the name, not Python's salted hash)."""
    import subprocess
    import sys

    from fedbench.plotting import LABELS, OTHER_COLORS, PALETTE, algorithm_color, palette

    assert {algorithm_color(v) for v in LABELS} == set(PALETTE.values())
    assert palette(["fedavg", "scaffold"]) == {"FedAvg": PALETTE["FedAvg"], "scaffold": algorithm_color("scaffold")}
    assert algorithm_color("scaffold") in OTHER_COLORS
    probe = "from fedbench.plotting import algorithm_color; print(algorithm_color('scaffold'))"
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120).stdout.strip()
    assert other == algorithm_color("scaffold")


def test_run_curves_ticks_whole_rounds(tmp_path):
    from fedbench import plotting

    drawn = {}
    real = plotting.save_figure
    plotting.save_figure = lambda fig, path, dpi=110: drawn.setdefault("fig", fig) and path
    try:
        plotting.run_curves([{"round": r, "train/loss": 1.0 / (r + 1)} for r in range(3)], tmp_path / "x.png")
    finally:
        plotting.save_figure = real
    ticks = [t for t in drawn["fig"].axes[0].get_xticks() if 0 <= t <= 2]  # the panel with data
    assert ticks and all(float(t).is_integer() for t in ticks)

"""Reading rules on hand-made curves: tail, final, best, the paper's C.3.2 rule, budget cuts and diverged runs."""

import math

import numpy as np
import pytest

from fedbench.claims.readings import (
    cut_round,
    read_accuracy,
    read_loss,
    rising_rounds,
    spearman,
    upward_variation,
)

LOSS = [2.0, 1.5, 1.2, 1.3, 1.0, 0.9, 0.95, 0.8, 0.7, 0.75, 0.6]  # rounds 0..10
ACC = [0.1, 0.3, 0.4, 0.38, 0.5, 0.55, 0.52, 0.6, 0.62, 0.61, 0.66]


def test_cut_round():
    assert cut_round(40, 0.25) == 10 and cut_round(40, 0.5) == 20 and cut_round(40, 1.0) == 40
    assert cut_round(3, 0.25) == 1  # at least one round
    with pytest.raises(ValueError):
        cut_round(10, 0.0)


def test_loss_readings():
    assert read_loss(LOSS, "tail", 10) == pytest.approx((0.95 + 0.8 + 0.7 + 0.75 + 0.6) / 5)
    assert read_loss(LOSS, "final", 10) == 0.6 == read_loss(LOSS, "paper", 10)
    assert read_loss(LOSS, "best", 10) == 0.6
    assert read_loss(LOSS, "final", 10, budget=0.5) == 0.9  # rounds 0..5
    assert read_loss(LOSS, "tail", 10, budget=0.5) == pytest.approx((1.5 + 1.2 + 1.3 + 1.0 + 0.9) / 5)


def test_accuracy_readings_and_the_paper_rule():
    assert read_accuracy(LOSS, ACC, "final", 10) == 0.66
    assert read_accuracy(LOSS, ACC, "best", 10) == 0.66
    assert read_accuracy(LOSS, ACC, "tail", 10) == pytest.approx((0.52 + 0.6 + 0.62 + 0.61 + 0.66) / 5)
    assert read_accuracy(LOSS, ACC, "paper", 10) == 0.66  # no round converged or diverged: the last one
    converging = [2.0, 1.0, 0.5, 0.49995, 0.4, 0.3]
    assert read_accuracy(converging, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "paper", 5) == 0.4  # |f3 - f2| < 1e-4
    rising = [2.0 - 0.1 * t for t in range(11)] + [3.5, 3.6]  # f_11 - f_1 = 3.5 - 1.9 > 1: diverging at round 11
    assert read_accuracy(rising, [0.5] * 11 + [0.2, 0.1], "paper", 12) == 0.2


def test_diverged_runs():
    stopped = [2.0, 1.5, math.nan]  # the engine stops at the first non-finite loss (round 2 of 10)
    assert read_loss(stopped, "tail", 10) == math.inf
    assert read_loss(stopped, "best", 10) == 1.5
    assert read_accuracy(stopped, [0.1, 0.3, 0.2], "final", 10) == 0.0  # from divergence on: accuracy 0
    assert read_accuracy(stopped, [0.1, 0.3, 0.2], "best", 10) == 0.3
    assert read_accuracy(stopped, [0.1, 0.3, 0.2], "paper", 10) == 0.3  # C.3.2: the last finite round
    assert read_loss(stopped, "final", 10, budget=0.1) == 1.5  # cut before it diverged


def test_instability_measures():
    assert upward_variation(LOSS, 10) == pytest.approx(0.1 + 0.05 + 0.05)
    assert rising_rounds(LOSS, 10) == 3
    assert upward_variation([1.0, math.inf], 10) == math.inf
    assert rising_rounds([2.0, 1.0, 1.5, math.nan], 5) == 1 + 3  # one rise, then 3 rounds diverged (2..5 of 0..5)


def test_rounds_to_target_first_and_held():
    from fedbench.claims.readings import rounds_to_target

    curve = [0.1, 0.5, 0.4, 0.6, 0.7, float("nan"), 0.8]
    assert rounds_to_target(curve, 0.5, 6) == 1  # first
    assert rounds_to_target(curve, 0.5, 6, hold=2) == 3  # held two evaluations: 0.6, 0.7
    assert rounds_to_target(curve, 0.5, 6, hold=3) == 6  # the NaN breaks 3..5; round 6's window is cut short
    assert rounds_to_target(curve, 0.9, 6) == 6 and rounds_to_target(curve[:3], 0.6, 6) == 6  # never; diverged


def test_rounds_to_smoothed():
    from fedbench.claims.readings import rounds_to_smoothed

    curve = [10.0, 50.0, 30.0, 60.0, 70.0]
    assert rounds_to_smoothed(curve, 50.0) == 1
    assert rounds_to_smoothed(curve, 50.0, smooth=2) == 4  # running means 10, 30, 40, 45, 65: first >= 50 at 4
    assert rounds_to_smoothed(curve, 50.0, smooth=2, rounds=[0, 20, 40, 60, 80]) == 80
    assert rounds_to_smoothed(curve, 99.0, rounds=[0, 20, 40, 60, 80]) == 80  # never: the last evaluated round


def test_best_and_tail_of_a_curve():
    from fedbench.claims.readings import best_of, tail_of

    curve = [0.1, 0.5, float("nan"), 0.4, 0.3, 0.2, 0.45]
    assert best_of(curve, 6) == 0.5 and best_of(curve, 0) == 0.1 and best_of([float("nan")], 0) == 0.0
    assert tail_of(curve, 6) == pytest.approx((0.0 + 0.4 + 0.3 + 0.2 + 0.45) / 5)
    assert tail_of([0.5, 0.6], 6) == pytest.approx((0.0 * 5) / 5)  # rounds 2..6 missing: diverged, 0
    assert tail_of([0.5, 0.6, 0.7], 3) == pytest.approx((0.5 + 0.6 + 0.7 + 0.0) / 4)


def test_device_percentile():
    from fedbench.claims.readings import device_percentile

    errors = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    assert device_percentile(errors) == pytest.approx(0.9)  # index 9 of 10 exactly
    assert device_percentile([0.0, 1.0]) == pytest.approx(0.9)  # linear interpolation
    assert device_percentile([0.2, 0.4, 0.1], 50) == pytest.approx(0.2)


# --- curves of a protocol that evaluates at some rounds only, read by round, and their oscillation (the FedLaAvg,
# Mime and Delta-FL studies' readings) ---

def test_evaluation_rounds():
    from fedbench.claims.readings import evaluation_rounds

    t = evaluation_rounds(70000, 20)
    assert (t[:3].tolist(), t[-1], len(t)) == ([0, 20, 40], 70000, 3501)  # every 20th round; 70,000 is one of them
    half = evaluation_rounds(70000, 20, 0.5)
    assert (half[-1], len(half)) == (35000, 1751)
    assert evaluation_rounds(20, 5).tolist() == [0, 5, 10, 15, 20] and evaluation_rounds(20, 5, 0.5).tolist() == [0, 5, 10]
    assert evaluation_rounds(12, 5).tolist() == [0, 5, 10, 12] and evaluation_rounds(12, 5, 0.5).tolist() == [0, 5]


def test_accuracy_at():
    import numpy as np

    from fedbench.claims.readings import accuracy_at

    acc = {0: 0.1, 2: 0.2, 4: 0.15}
    # a run that diverged at round 4: 0 from there on, and at the rounds it never reached
    np.testing.assert_allclose(accuracy_at(acc, np.array([0, 2, 4, 6, 8]), diverged_at=4), [10, 20, 0, 0, 0])
    np.testing.assert_allclose(accuracy_at(acc, [0, 2, 4]), [10, 20, 15])


def test_read_curve():
    from fedbench.claims.readings import read_curve

    curve = [10.0, 40.0, 35.0, 20.0, 30.0, 25.0]
    assert read_curve(curve, "best") == 40.0
    assert read_curve(curve, "tail") == pytest.approx(30.0)  # 40, 35, 20, 30, 25
    assert read_curve(curve, "final") == 25.0
    with pytest.raises(ValueError, match="allowed: best, tail, final"):
        read_curve(curve, "median")


def test_period_power():
    import numpy as np

    from fedbench.claims.readings import period_power

    t = np.arange(300)
    wave = 2.0 * np.sin(2 * np.pi * t / 15 + 0.3)
    assert period_power(50.0 + wave, 15) == pytest.approx(2.0, abs=1e-9)  # amplitude 2: power 2^2 / 2
    assert period_power(50.0 + 0.1 * t + wave, 15) == pytest.approx(2.0, abs=1e-9)  # on a trend
    assert period_power(50.0 + 0.1 * t, 15) == pytest.approx(0.0, abs=1e-12)  # a trend has none
    assert period_power(50.0 + 2.0 * np.sin(2 * np.pi * t / 10), 15) < 1e-3  # another period: (almost) none
    # the second half only: an oscillation that died out halfway has none there, the whole curve still some
    fading = 50.0 + np.where(t < 150, wave, 0.0)
    assert period_power(fading, 15) == pytest.approx(0.0, abs=1e-12)
    assert period_power(fading, 15, whole=True) == pytest.approx(0.5, abs=0.05)  # half as wide: a = 1
    assert math.isnan(period_power(np.ones(20), 15))  # under one period in the second half
    # evaluated every 20 rounds: a period of 15 rounds is seen at three phases, and the fit recovers its power
    rounds = np.arange(0, 6001, 20)
    sampled = 50.0 + 0.001 * rounds + 2.0 * np.sin(2 * np.pi * rounds / 15 + 0.3)
    assert period_power(sampled, 15, rounds=rounds) == pytest.approx(2.0, abs=1e-9)
    assert period_power(50.0 + 0.001 * rounds, 15, rounds=rounds) == pytest.approx(0.0, abs=1e-12)


def test_peak_to_trough():
    from fedbench.claims.readings import peak_to_trough

    curve = [90.0, 10.0, 40.0, 55.0, 35.0, 50.0]
    assert peak_to_trough(curve, 4) == 20.0  # 55 - 35 over the last four
    assert peak_to_trough(curve, 6) == 80.0 and peak_to_trough(curve, 1) == 0.0


def test_read_at_cut():
    from fedbench.claims.readings import read_at_cut

    p90 = dict(zip([0, 5, 10, 15, 20, 30], [0.9, 0.7, 0.6, 0.5, 0.4, 0.2]))  # evaluated every 5 and at the final 30
    alive = {"diverged_at": None, "diverged": 1.0}
    assert read_at_cut(p90, 30, "final", **alive) == 0.2
    assert read_at_cut(p90, 30, "final", 0.6, **alive) == 0.5  # cut at 18: round 15's
    assert read_at_cut(p90, 30, "tail", 0.6, **alive) == pytest.approx((0.9 + 0.7 + 0.6 + 0.5) / 4)
    assert read_at_cut(p90, 30, "tail", **alive) == pytest.approx((0.7 + 0.6 + 0.5 + 0.4 + 0.2) / 5)
    assert read_at_cut({0: 0.9, 1: 0.8}, 8, "final", diverged_at=2, diverged=1.0) == 1.0  # diverged on round 2
    assert read_at_cut({0: 0.9, 1: 0.8}, 8, "final", 0.125, diverged_at=2, diverged=1.0) == 0.8  # cut at 1: before it


def test_rounds_per_decade_of_a_decaying_curve():
    from fedbench.claims.readings import rounds_per_decade

    curve = [1.0, 100.0, 10.0, 1.0, 0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7]  # peak 100 at round 1, then 1/round
    assert rounds_per_decade(curve, 10, start=1e-2, end=1e-8) == pytest.approx(1.0)  # 1 at round 3 to 1e-6 at 9
    assert rounds_per_decade(curve[:4] + [0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4], 10, 1e-2, 1e-5) == pytest.approx(2.0)
    assert rounds_per_decade(curve, 8) == math.inf  # 1e-6 of the peak not reached by round 8
    assert rounds_per_decade([1.0, float("nan"), 0.0], 2) == math.inf
    assert rounds_per_decade([0.5, 0.0, 0.0], 2) == 0.0  # both thresholds at round 1: on the optimum in one step


def test_rounds_to_loss():
    from fedbench.claims.readings import rounds_to_loss

    curve = [0.5, 0.2, float("nan"), 1e-3, 1e-9, 1e-12]
    assert rounds_to_loss(curve, 0.2) == 1 and rounds_to_loss(curve, 1e-8) == 4 and rounds_to_loss(curve, 1e-13) is None


def test_spearman():
    assert spearman([200, 400, 600], [300, 200, 100]) == pytest.approx(-1.0)
    assert math.isnan(spearman([200, 400, 600, 800], [5, 5, 5, 5]))  # all tied: no ordering, undefined (not 0)
    assert math.isnan(spearman([1, 1, 1], [3, 2, 1]))
    # ties get average ranks: y ranks 1.5, 1.5, 3, 4 against 1, 2, 3, 4
    assert spearman([1, 2, 3, 4], [7, 7, 9, 10]) == pytest.approx(
        np.corrcoef([1, 2, 3, 4], [1.5, 1.5, 3, 4])[0, 1])


def test_loss_ratio_is_the_median_over_the_second_half():
    """FedDane's loss against FedProx's (fedbench.studies.feddane_synthetic, feddane_mu1), 10 rounds."""
    from fedbench.claims.readings import loss_ratio

    prox = [1.0] * 11
    dane = [1.0] * 5 + [1.5, 1.2, 9.0, 1.1, 1.3, 1.4]  # one chaotic round (9.0) in the second half
    assert loss_ratio(dane, prox, "median", 10) == pytest.approx(35.0)  # rounds 5..10: (1.3 + 1.4) / 2
    assert loss_ratio(dane, prox, "final", 10) == pytest.approx(40.0)
    assert loss_ratio(dane, prox, "all", 10) == pytest.approx(100 * (1.1 - 1))  # median of 11: six 1.0s, ...
    stopped = [1.0] * 6 + [math.nan]  # diverged at round 6: rounds 6..10 count as infinite
    assert loss_ratio(stopped, prox, "median", 10) == math.inf
    assert loss_ratio(dane, prox, "median", 10, budget=0.5) == pytest.approx(0.0)  # rounds 2..5: 1, 1, 1, 1.5
    assert math.isnan(loss_ratio(dane, [1.0, math.nan], "median", 10))  # FedProx failed: no comparison
    with pytest.raises(ValueError, match="reading 'best'; allowed: median, final, all"):
        loss_ratio(prox, prox, "best", 10)
    prox, dane = [1.0] * 201, [1.0] * 100 + [2.0] * 101  # FedDane doubles from round 100 on
    assert loss_ratio(dane, prox, "median", 200) == pytest.approx(100.0)  # rounds 100..200
    assert loss_ratio(dane, prox, "median", 200, budget=0.25) == pytest.approx(0.0)  # rounds 25..50


def test_loss_jumps():
    from fedbench.claims.readings import loss_jumps

    assert loss_jumps([1.0, 1.4, 2.2, 2.0, float("nan"), 1.0]) == 2  # 1.4 -> 2.2 and -> nan

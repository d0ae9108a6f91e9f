"""Independent random dropout: the rate is q within sampling error, and the masks are paired by seed."""

import numpy as np
import pytest

from fedbench.availability import RandomDropout


def test_rate_is_q_within_tolerance():
    model = RandomDropout(num_clients=50, probability=0.3)
    masks = np.array([model.mask(seed=4, round_=r) for r in range(400)])
    # 20,000 Bernoulli(0.3) draws: sd of the rate = sqrt(0.21 / 20000) ~ 0.0032; 5 sd = 0.016
    assert abs(masks.mean() - 0.3) < 0.016
    # every client and every round vary (independence across clients and rounds)
    per_client = masks.mean(0)  # sd ~ sqrt(0.21 / 400) ~ 0.023
    assert np.all(np.abs(per_client - 0.3) < 0.12)
    assert len({m.tobytes() for m in masks}) > 390


def test_same_seed_same_masks_different_seed_different():
    a, b = RandomDropout(20, 0.5), RandomDropout(20, 0.5)
    for r in range(5):
        np.testing.assert_array_equal(a.mask(3, r), b.mask(3, r))  # paired: another object, same stream
    assert any(not np.array_equal(a.mask(3, r), a.mask(4, r)) for r in range(5))
    # a round replays on its own: asking for round 4 first gives what asking in order gives
    np.testing.assert_array_equal(RandomDropout(20, 0.5).mask(3, 4), a.mask(3, 4))


def test_extreme_probabilities():
    assert RandomDropout(10, 1.0).mask(0, 0).all()
    assert not RandomDropout(10, 0.0).mask(0, 0).any()
    with pytest.raises(ValueError, match="probability"):
        RandomDropout(10, 1.5)

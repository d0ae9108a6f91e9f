"""FedLaAvg's diurnal two-group pattern: which group is available in each round, exactly, for given P and beta
(the authors' diurnal_available: group 0 while r mod (P + int(beta P)) < P)."""

import numpy as np
import pytest

from fedbench.availability import DiurnalAvailability, majority_label_groups
from fedbench.availability.diurnal import off_rounds
from fedbench.data.format import FederatedDataset, Split

GROUPS = np.array([0, 1, 1, 0, 1])


def _pattern(model, rounds):
    return [model.group_available(r) for r in range(rounds)]


def test_fedlaavg_defaults_p10_beta_half():
    # P = 10, beta = 0.5 (the authors' defaults): group 0 in rounds 0-9, group 1 in 10-14, repeat.
    model = DiurnalAvailability(groups=GROUPS, period=10, beta=0.5)
    assert _pattern(model, 30) == [0] * 10 + [1] * 5 + [0] * 10 + [1] * 5


def test_small_period_and_int_truncation():
    # P = 3, beta = 0.5: int(1.5) = 1 round for group 1, period 4.
    model = DiurnalAvailability(groups=GROUPS, period=3, beta=0.5)
    assert _pattern(model, 9) == [0, 0, 0, 1, 0, 0, 0, 1, 0]
    # beta > 1: group 1 is available longer. P = 2, beta = 1.5: 3 rounds.
    assert _pattern(DiurnalAvailability(GROUPS, 2, 1.5), 10) == [0, 0, 1, 1, 1, 0, 0, 1, 1, 1]
    # int() truncates as in the authors' code: int(0.29 * 100) = 28, not 29.
    assert off_rounds(100, 0.29) == 28


def test_masks_follow_the_groups_and_ignore_the_seed():
    model = DiurnalAvailability(groups=GROUPS, period=2, beta=0.5)  # period 3: 0, 0, 1
    group0, group1 = GROUPS == 0, GROUPS == 1
    for r, expected in zip(range(6), [group0, group0, group1] * 2):
        np.testing.assert_array_equal(model.mask(seed=0, round_=r), expected)
        np.testing.assert_array_equal(model.mask(seed=7, round_=r), expected)
    # exactly one group is available in every round
    assert all(model.mask(0, r).sum() in (2, 3) for r in range(12))


def test_int_caveat_is_an_error():
    # beta = 0.5 with P = 1: int(0.5) = 0, group 1 would never be available (setups 5.4).
    with pytest.raises(ValueError, match="never be available"):
        DiurnalAvailability(groups=GROUPS, period=1, beta=0.5)
    with pytest.raises(ValueError, match="period"):
        DiurnalAvailability(groups=GROUPS, period=0, beta=1.0)
    with pytest.raises(ValueError, match="0s and 1s"):
        DiurnalAvailability(groups=np.array([0, 2]), period=2, beta=1.0)


def test_majority_label_groups():
    # 10 classes: group 0 are the clients whose most frequent label is in 0-4 (FedLaAvg's classes 0-4).
    ys = [[0, 0, 7], [5, 5, 1], [4], [9, 9, 9, 2], [3, 6], []]  # ties go to the smaller label: [3, 6] -> 3
    xs = [np.zeros((len(y), 2), np.float32) for y in ys]
    split = Split.from_clients(xs, [np.array(y, np.int64) for y in ys], (2,))
    ds = FederatedDataset(name="t", client_ids=tuple("abcdef"), train=split, test=split, num_classes=10)
    np.testing.assert_array_equal(majority_label_groups(ds), [0, 1, 0, 1, 0, 0])

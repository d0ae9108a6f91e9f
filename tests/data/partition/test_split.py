import numpy as np
import pytest

from fedbench.data.partition import Partition, PartitionError
from fedbench.data.partition.split import shuffle_split


def test_shuffle_split_int_fraction_and_seeded():
    p = Partition("x", (np.arange(10), np.arange(10, 13), np.array([13])))
    train, test = shuffle_split(p, 0.9, seed=0)
    assert [len(t) for t in train] == [9, 2, 0] and [len(t) for t in test] == [1, 1, 1]
    assert sorted(np.concatenate(train + test).tolist()) == list(range(14))
    again, _ = shuffle_split(p, 0.9, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(train, again))
    with pytest.raises(PartitionError, match=r"train_fraction must be in \(0, 1\)"):
        shuffle_split(p, 1.0, seed=0)

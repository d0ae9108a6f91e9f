import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.shards import shards
from tests.data.partition.invariance import assert_row_order_invariant


def test_shards_give_at_most_k_classes_and_equal_sizes():
    labels = np.repeat(np.arange(10), 60)
    keys = np.arange(600)[::-1].copy()
    p = assert_row_order_invariant(lambda k, y: shards(k, y, 30, 2, seed=0), keys, labels)
    assert p.sizes.tolist() == [20] * 30
    assert max(len(np.unique(labels[c])) for c in p.clients) <= 2
    assert sorted(np.concatenate(p.clients).tolist()) == list(range(600))


def test_shards_refuse_more_shards_than_rows():
    with pytest.raises(PartitionError, match="shards: 12 clients but only 10 rows"):
        shards(np.arange(10), np.zeros(10), 6, 2, seed=0)

import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.similarity import similarity
from tests.data.partition.invariance import assert_row_order_invariant


def test_similarity_zero_sorts_by_label_hundred_is_iid():
    labels = np.repeat(np.arange(47), 20)  # EMNIST balanced has 47 classes
    keys = np.arange(len(labels))
    s0 = assert_row_order_invariant(lambda k, y: similarity(k, y, 100, 0, seed=0), keys, labels)
    assert max(len(np.unique(labels[c])) for c in s0.clients) <= 2  # contiguous runs of one or two labels
    s100 = similarity(keys, labels, 100, 100, seed=0)
    assert np.mean([len(np.unique(labels[c])) for c in s100.clients]) > 8
    s10 = assert_row_order_invariant(lambda k, y: similarity(k, y, 10, 10, seed=2), keys, labels)
    assert s10.sizes.sum() == len(labels) and s10.sizes.min() >= 93
    # client i holds chunk i of the iid pool (94 rows = int(10% of 940), 9 or 10 per client) then its sorted chunk
    assert [len(np.unique(labels[c[10:]])) <= 6 for c in s10.clients] == [True] * 10


def test_similarity_refusals():
    with pytest.raises(PartitionError, match=r"similarity_percent must be in \[0, 100\], got 110"):
        similarity(np.arange(10), np.zeros(10), 2, 110, seed=0)
    with pytest.raises(PartitionError, match="similarity: 2 of 12 clients would have no samples"):
        similarity(np.arange(10), np.zeros(10), 12, 0, seed=0)

import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.iid import iid
from tests.data.partition.invariance import assert_row_order_invariant


def test_iid_sizes_seed_and_row_order():
    keys, labels = np.arange(103) * 7, np.arange(103) % 5
    p = assert_row_order_invariant(lambda k, y: iid(k, 10, seed=3), keys, labels)
    assert p.sizes.tolist() == [10] * 7 + [11] * 3
    assert sorted(np.concatenate(p.clients).tolist()) == list(range(103))
    assert iid(keys, 10, seed=4).content_hash(keys) != p.content_hash(keys)


def test_iid_refuses_more_clients_than_rows():
    with pytest.raises(PartitionError, match="iid: 11 clients but only 10 rows"):
        iid(np.arange(10), 11, seed=0)
    with pytest.raises(ValueError, match="row keys must be unique; 3 appears more than once"):
        iid(np.array([1, 3, 3]), 2, seed=0)

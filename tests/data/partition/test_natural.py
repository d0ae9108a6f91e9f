import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.natural import natural
from tests.data.partition.invariance import assert_row_order_invariant


def test_one_client_per_id_sorted_rows_in_key_order():
    groups = np.array(["w2", "w1", "w2", "w3", "w1", "w2"])
    keys = np.arange(6)
    p = assert_row_order_invariant(lambda k, y: natural(k, y), keys, groups)
    assert p.client_ids == ("w1", "w2", "w3")
    assert [c.tolist() for c in p.clients] == [[1, 4], [0, 2, 5], [3]]
    assert natural(keys, groups, min_size=2).client_ids == ("w1", "w2")
    with pytest.raises(PartitionError, match="no id has min_size 4 rows"):
        natural(keys, groups, min_size=4)

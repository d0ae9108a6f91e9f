import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.quantity_skew import quantity_skew
from tests.data.partition.invariance import assert_row_order_invariant


@pytest.mark.parametrize("law", ["lognormal", "dirichlet"])
def test_quantity_skew_sizes_and_row_order(law):
    keys = np.array([f"img{i:04d}" for i in range(500)])
    labels = np.arange(500) % 10
    p = assert_row_order_invariant(lambda k, y: quantity_skew(k, 20, seed=1, distribution=law, sigma=1.5,
                                                              beta=0.3, min_size=5), keys, labels)
    assert p.sizes.sum() == 500 and p.sizes.min() >= 5
    assert p.sizes.max() > 3 * np.median(p.sizes)  # skewed, not equal
    assert sorted(np.concatenate(p.clients).tolist()) == list(range(500))


def test_quantity_skew_refuses_impossible_minimum():
    with pytest.raises(PartitionError, match="20 clients x min_size 30 = 600 rows but the source has 500"):
        quantity_skew(np.arange(500), 20, seed=0, min_size=30)
    with pytest.raises(PartitionError, match="distribution 'zipf' is not allowed; allowed: lognormal, dirichlet"):
        quantity_skew(np.arange(500), 20, seed=0, distribution="zipf")

import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.dirichlet import dirichlet
from tests.data.partition.invariance import assert_row_order_invariant


def test_small_alpha_concentrates_labels_large_alpha_spreads_them():
    labels = np.repeat(np.arange(10), 100)
    keys = np.arange(1000) * 3 + 1

    def classes_per_client(p):
        return np.mean([len(np.unique(labels[c])) for c in p.clients])

    skewed = assert_row_order_invariant(lambda k, y: dirichlet(k, y, 20, alpha=0.1, seed=0), keys, labels)
    spread = dirichlet(keys, labels, 20, alpha=100.0, seed=0)
    assert classes_per_client(skewed) < 5 < classes_per_client(spread)
    assert sorted(np.concatenate(skewed.clients).tolist()) == list(range(1000))


def test_dirichlet_min_size_refused_with_numbers():
    labels = np.repeat(np.arange(2), 10)
    with pytest.raises(PartitionError, match=r"dirichlet: after 5 draws some client still had \d+ < min_size 6 rows"):
        dirichlet(np.arange(20), labels, 3, alpha=0.01, seed=0, min_size=6, max_attempts=5)
    with pytest.raises(PartitionError, match="alpha must be > 0"):
        dirichlet(np.arange(20), labels, 3, alpha=0.0, seed=0)

"""FedLaAvg's CIFAR-10 partition reproduces the authors' client sizes for N = 1000."""

import numpy as np
import pytest

from fedbench.data.partition import PartitionError
from fedbench.data.partition.fedlaavg_cifar import client_classes, fedlaavg_cifar
from tests.data.partition.invariance import assert_row_order_invariant


def test_sizes_equal_the_authors_for_n_1000():
    labels = np.tile(np.arange(10), 5000)  # 50,000 training images, 5,000 per class
    keys = np.arange(50_000)
    p = fedlaavg_cifar(keys, labels)
    sizes = p.sizes
    assert sizes[:5].tolist() == [65, 44, 44, 39, 58]
    assert sizes.mean() == 50 and round(float(sizes.std(ddof=1)), 2) == 9.31
    assert sizes.min() == 29 and sizes.max() == 71 and sizes.sum() == 50_000
    assert all(set(labels[c]) == {client_classes(1000)[k]} for k, c in enumerate(p.clients))
    assert client_classes(1000)[[0, 99, 100, 999]].tolist() == [0, 0, 1, 9]


def test_row_order_invariant_and_refusals():
    labels = np.tile(np.arange(10), 30)
    assert_row_order_invariant(lambda k, y: fedlaavg_cifar(k, y, num_clients=20), np.arange(300) * 11, labels)
    with pytest.raises(PartitionError, match="num_clients must be a positive multiple of 10, got 15"):
        fedlaavg_cifar(np.arange(300), labels, num_clients=15)

"""The check every partitioner must pass: shuffling the source's rows changes nothing about the clients."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fedbench.data.partition import Partition


def client_keys(partition: Partition, keys: np.ndarray) -> list[list]:
    return [keys[rows].tolist() for rows in partition.clients]


def assert_row_order_invariant(make: Callable[[np.ndarray, np.ndarray], Partition], keys: np.ndarray,
                               labels: np.ndarray, shuffles: int = 3) -> Partition:
    """``make(keys, labels)`` gives the same clients (as keys, in order) for any permutation of the rows."""
    reference = make(keys, labels)
    expected = client_keys(reference, keys)
    for s in range(shuffles):
        perm = np.random.default_rng(1000 + s).permutation(len(keys))
        got = make(keys[perm], labels[perm])
        assert client_keys(got, keys[perm]) == expected
        assert got.content_hash(keys[perm]) == reference.content_hash(keys)
    return reference

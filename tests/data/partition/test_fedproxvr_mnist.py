import random

import numpy as np

from fedbench.data.partition.fedproxvr_mnist import fedproxvr_mnist
from tests.data.partition.invariance import assert_row_order_invariant

COUNTS = [6903, 7877, 6990, 7141, 6824, 6313, 6876, 7293, 6825, 6958]


def test_replays_the_authors_draws():
    labels = np.repeat(np.arange(10), COUNTS)
    keys = np.arange(len(labels))
    p = assert_row_order_invariant(lambda k, y: fedproxvr_mnist(k, y)[0], keys, labels, shuffles=1)
    # the authors' phase-2 count of user 0, slot 0, by their formula with their seeds
    rs, pr = np.random.RandomState(1), random.Random(1)
    props = rs.lognormal(0, 2.0, (10, 100, 3))
    props = np.array([[[c - 1000]] for c in COUNTS]) * props / props.sum((1, 2), keepdims=True)
    offset, factor = pr.randint(10, 200), pr.randint(1, 10)
    k = int(props[0, 0, 0]) * factor + offset
    assert 300 + k < COUNTS[0]  # so the authors' code takes these k images of digit 0 after phase 1's 300
    assert p.clients[0][:10].tolist() == list(range(10))  # phase 1: the first 10 images of digit 0
    assert p.clients[0][30:30 + k].tolist() == list(range(300, 300 + k))
    _, train, test = fedproxvr_mnist(keys, labels)
    for rows, tr, te in zip(p.clients, train, test):
        assert len(tr) == int(0.75 * len(rows)) and sorted(np.concatenate([tr, te]).tolist()) == sorted(rows.tolist())
    assert set(labels[p.clients[3]]) == {3, 4, 5}

import numpy as np

from fedbench.data.partition.fedprox_femnist import fedprox_femnist
from tests.data.partition.invariance import assert_row_order_invariant


def test_every_device_takes_the_first_images_of_its_three_classes():
    labels = np.repeat(np.arange(10), 300)
    keys = np.array([f"train_{61 + c:02x}_{i:05d}.png" for c in range(10) for i in range(300)])
    p = assert_row_order_invariant(lambda k, y: fedprox_femnist(k, y, seed=0), keys, labels)
    assert len(p.clients) == 200
    for u in (0, 5, 199):
        held = labels[p.clients[u]]
        assert set(held) == {u % 10, (u + 1) % 10, (u + 2) % 10}
        per_class = len(p.clients[u]) // 3
        assert per_class >= 2 and np.bincount(held).max() == per_class
    first = {c: p.clients[c][:1].tolist() for c in range(10)}
    # the pointer quirk: device u's images of class u % 10 start at that class's first shuffled image
    assert p.clients[10][:1].tolist() == first[0]
    assert len(np.concatenate(p.clients)) > len(np.unique(np.concatenate(p.clients)))  # images repeat

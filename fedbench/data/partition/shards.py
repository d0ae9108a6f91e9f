"""k classes per client: label-sorted shards dealt at random (McMahan et al.'s pathological non-IID).

McMahan, Moore, Ramage, Hampson, Aguera y Arcas, "Communication-Efficient Learning of Deep Networks from
Decentralized Data", AISTATS 2017, section 3: "sort the data by digit label, divide it into 200 shards of
size 300, and assign each of 100 clients 2 shards". Here: rows sorted by (label, key), cut into
``num_clients * shards_per_client`` contiguous shards of equal size (sizes differ by at most one when the
count does not divide), and a seeded permutation of the shards deals ``shards_per_client`` to each client.

Departures: within a label the rows are in key order (the paper's order is its data's). A client can get two
shards of one label, as in the paper; a shard straddles two labels when the label counts are not multiples of the
shard size (MNIST's are not either), so a client holds at most 2k classes, and k when they are.
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, canonical_order, check_num_clients, even_cut
from fedbench.seeding import rng


def shards(keys: np.ndarray, labels: np.ndarray, num_clients: int, shards_per_client: int, seed: int) -> Partition:
    labels = np.asarray(labels)
    order = canonical_order(keys)
    num_shards = num_clients * shards_per_client
    check_num_clients("shards", num_shards, len(order), what="rows (one per shard at least)")
    by_label = order[np.argsort(labels[order], kind="stable")]
    cuts = even_cut(len(by_label), num_shards)
    dealt = rng(seed, -1, "partition", 0).permutation(num_shards).reshape(num_clients, shards_per_client)
    clients = tuple(np.concatenate([by_label[cuts[s]:cuts[s + 1]] for s in mine]) for mine in dealt)
    return Partition("shards", clients, {"num_clients": num_clients, "shards_per_client": shards_per_client,
                                         "seed": seed})

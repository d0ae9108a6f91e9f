"""IID: a seeded shuffle cut into equal clients.

The baseline of every federated benchmark (McMahan et al., AISTATS 2017, section 3: "the data is shuffled,
and then partitioned into 100 clients each receiving 600 examples"). Sizes differ by at most one, the larger
clients last, as LEAF's util.iid_divide cuts (TalwalkarLab/leaf data/utils/util.py).

Departure: the shuffle is of the rows in key order (see fedbench.data.partition), so the clients do not
depend on the order the source lists its rows in.
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, canonical_order, check_num_clients, even_cut
from fedbench.seeding import rng


def iid(keys: np.ndarray, num_clients: int, seed: int) -> Partition:
    order = canonical_order(keys)
    check_num_clients("iid", num_clients, len(order))
    rows = order[rng(seed, -1, "partition", 0).permutation(len(order))]
    cuts = even_cut(len(rows), num_clients)
    return Partition("iid", tuple(rows[cuts[i]:cuts[i + 1]] for i in range(num_clients)),
                     {"num_clients": num_clients, "seed": seed})

"""SCAFFOLD's s%-similarity split (Karimireddy et al., ICML 2020, section 7.1).

"For s% similar data we allocate to each client s% i.i.d. data and the remaining (100 - s)% by sorting
according to label." Read as: a seeded shuffle of the rows; the first int(s / 100 * n) form the IID pool,
the rest are stably sorted by label; each pool is cut into ``num_clients`` contiguous chunks of equal size
(differing by at most one), and client i gets chunk i of both. s = 100 is IID; s = 0 gives each client a
contiguous run of labels (one or two classes when clients outnumber classes).

Departures: the paper gives one sentence, not code; this is one reading of it (real-data.md section 5). Rows
are shuffled in key order so the split does not depend on the source's row order.
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order, check_clients, even_cut
from fedbench.seeding import rng


def similarity(keys: np.ndarray, labels: np.ndarray, num_clients: int, similarity_percent: float,
               seed: int) -> Partition:
    if not 0 <= similarity_percent <= 100:
        raise PartitionError(f"similarity: similarity_percent must be in [0, 100], got {similarity_percent}")
    labels = np.asarray(labels)
    order = canonical_order(keys)
    rows = order[rng(seed, -1, "partition", 0).permutation(len(order))]
    n_iid = int(similarity_percent / 100 * len(rows))
    iid_pool = rows[:n_iid]
    rest = rows[n_iid:]
    sorted_pool = rest[np.argsort(labels[rest], kind="stable")]
    cut_iid, cut_sorted = even_cut(len(iid_pool), num_clients), even_cut(len(sorted_pool), num_clients)
    clients = tuple(np.concatenate([iid_pool[cut_iid[i]:cut_iid[i + 1]], sorted_pool[cut_sorted[i]:cut_sorted[i + 1]]])
                    for i in range(num_clients))
    check_clients("similarity", clients)
    return Partition("similarity", clients, {"num_clients": num_clients, "similarity_percent": similarity_percent,
                                             "seed": seed})

"""Natural clients: one per upstream id (FEMNIST writer, Sent140 user, Shakespeare play and character).

The partition LEAF is built on (Caldas et al., arXiv 1812.01097, section 3). Clients are ordered by id
(sorted, where LEAF follows os.listdir order and FedProx's trainers sort the ids: real-data.md section 4)
and keep their rows in key order (upstream order when the keys are upstream positions).

No randomness; ``min_size`` drops ids with fewer rows (LEAF's ``-k`` is applied by the LEAF steps, not here).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order


def natural(keys: np.ndarray, groups: np.ndarray, min_size: int = 1) -> Partition:
    groups = np.asarray(groups)
    order = canonical_order(keys)
    ids, inverse = np.unique(groups[order], return_inverse=True)
    by_group = np.argsort(inverse, kind="stable")
    cuts = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=len(ids)))])
    clients = [order[by_group[cuts[i]:cuts[i + 1]]] for i in range(len(ids))]
    kept = [i for i, c in enumerate(clients) if len(c) >= min_size]
    if not kept:
        raise PartitionError(f"natural: no id has min_size {min_size} rows (largest has {max(map(len, clients))})")
    return Partition("natural", tuple(clients[i] for i in kept), {"min_size": min_size},
                     client_ids=tuple(str(ids[i]) for i in kept))

"""Dirichlet(alpha) label skew: each class shared among clients by proportions drawn from Dir(alpha).

Hsu, Qi, Brown, "Measuring the Effects of Non-Identical Data Distribution for Federated Visual
Classification", arXiv 1909.06335, 2019, section 3 (client label mixtures q ~ Dir(alpha p)); the per-class
form used here (for each class c, p_c ~ Dir_N(alpha), class c's rows cut by the cumulative proportions) is the
one of Yurochkin et al. (ICML 2019) and NIID-Bench (Li et al., ICDE 2022, section 3.1). Small alpha: each
client holds few classes; large alpha: close to IID.

Rows of a class are dealt out of a seeded shuffle of the key-ordered rows. Like NIID-Bench, the draw is
repeated until every client has at least ``min_size`` rows (NIID-Bench: 10); after ``max_attempts`` draws
the partition is refused with the numbers. Attempt a uses the stream (seed, partition, a).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order, check_num_clients
from fedbench.seeding import rng


def dirichlet(keys: np.ndarray, labels: np.ndarray, num_clients: int, alpha: float, seed: int,
              min_size: int = 1, max_attempts: int = 100) -> Partition:
    if alpha <= 0:
        raise PartitionError(f"dirichlet: alpha must be > 0, got {alpha}")
    labels = np.asarray(labels)
    order = canonical_order(keys)
    check_num_clients("dirichlet", num_clients * min_size, len(order), what="rows (num_clients x min_size)")
    classes = np.unique(labels)
    smallest = 0
    for attempt in range(max_attempts):
        g = rng(seed, -1, "partition", attempt)
        parts: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for c in classes:
            rows = order[labels[order] == c]
            rows = rows[g.permutation(len(rows))]
            p = g.dirichlet(np.full(num_clients, alpha))
            cuts = (np.cumsum(p) * len(rows)).astype(np.int64)[:-1]
            for k, piece in enumerate(np.split(rows, cuts)):
                parts[k].append(piece)
        clients = tuple(np.concatenate(p) for p in parts)
        smallest = min(len(c) for c in clients)
        if smallest >= min_size:
            return Partition("dirichlet", clients, {"num_clients": num_clients, "alpha": alpha, "seed": seed,
                                                    "min_size": min_size, "attempts": attempt + 1})
    raise PartitionError(f"dirichlet: after {max_attempts} draws some client still had {smallest} < min_size "
                         f"{min_size} rows (alpha {alpha}, {num_clients} clients, {len(order)} rows); raise alpha "
                         "or lower num_clients or min_size")

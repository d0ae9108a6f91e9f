"""Quantity skew: IID labels, unequal client sizes.

Two laws for the sizes, each on top of ``min_size`` rows per client:
- ``lognormal``: proportions proportional to LogNormal(0, sigma) draws, the law of FedProx's synthetic client
  sizes (Li et al., MLSys 2020, appendix C.1: n_k ~ LogNormal(4, 2) + 50) with the scale fixed by the data;
- ``dirichlet``: proportions q ~ Dir(beta), NIID-Bench's quantity-based label-free skew (Li, Diao, Chen, He,
  "Federated Learning on Non-IID Data Silos: An Experimental Study", ICDE 2022, section 3.2).
The rows beyond the minimum are shared by floor(proportion * rest), the leftover rows going one each to the
clients with the largest fractional parts; rows are dealt out of a seeded shuffle of the key-ordered rows.

Departure: NIID-Bench redraws q until every client has 10 rows; here ``min_size`` rows are given first, so
no redraw is needed and the law of the remainder is exactly the one drawn.
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order, check_num_clients
from fedbench.seeding import rng

DISTRIBUTIONS = ("lognormal", "dirichlet")


def quantity_skew(keys: np.ndarray, num_clients: int, seed: int, distribution: str = "lognormal",
                  sigma: float = 1.0, beta: float = 0.5, min_size: int = 1) -> Partition:
    if distribution not in DISTRIBUTIONS:
        raise PartitionError(f"quantity_skew: distribution {distribution!r} is not allowed; "
                             f"allowed: {', '.join(DISTRIBUTIONS)}")
    if min_size < 1:
        raise PartitionError(f"quantity_skew: min_size must be >= 1, got {min_size}")
    order = canonical_order(keys)
    n = len(order)
    check_num_clients("quantity_skew", num_clients, n)
    if num_clients * min_size > n:
        raise PartitionError(f"quantity_skew: {num_clients} clients x min_size {min_size} = {num_clients * min_size} "
                             f"rows but the source has {n}")
    g = rng(seed, -1, "partition", 0)
    weights = g.lognormal(0.0, sigma, num_clients) if distribution == "lognormal" else g.dirichlet(
        np.full(num_clients, beta))
    share = weights / weights.sum() * (n - num_clients * min_size)
    extra = np.floor(share).astype(np.int64)
    leftover = n - num_clients * min_size - int(extra.sum())
    extra[np.argsort(-(share - extra), kind="stable")[:leftover]] += 1
    sizes = extra + min_size
    rows = order[g.permutation(n)]
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    params = {"num_clients": num_clients, "seed": seed, "distribution": distribution, "min_size": min_size,
              **({"sigma": sigma} if distribution == "lognormal" else {"beta": beta})}
    return Partition("quantity_skew", tuple(rows[cuts[i]:cuts[i + 1]] for i in range(num_clients)), params)

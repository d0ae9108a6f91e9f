"""FedLaAvg's CIFAR-10 partition: one class per client, N / 10 clients per class, sizes roughly normal.

Yan et al., "Distributed Non-Convex Optimization with Sublinear Speedup under Intermittent Client
Availability" (FedLaAvg), arXiv 2002.07399 v1, section 5.1; the authors' mikudehuane/FedLaAvg
utils/partition.py (real-data.md section 5, paper-setups.md 5.4), replayed exactly:
- seeds: Python's random and numpy's legacy generator both seeded with 1;
- per class, its training rows in source order (torchvision order: batches 1-5), shuffled with
  random.shuffle, class 0 first;
- per class c (in order), weights w = 5 + randn(N / 10), clipped to [3, 7], normalised, cumulative sums
  accumulated one by one with the last forced to 1.0, numpy-rounded times the class size, differenced;
- client ``worker + (N / 10) * c`` takes the next slice of class c.
N = 1000 gives sizes with mean 50, sd 9.31, min 29, max 71 (first clients 65, 44, 44, 39, 58).

Departure: the authors' ``num_iid`` option (IID rows mixed in, default 0) is not offered.
"""

from __future__ import annotations

import random

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order, check_clients


def fedlaavg_cifar(keys: np.ndarray, labels: np.ndarray, num_clients: int = 1000, seed: int = 1,
                   base: float = 5.0, clamp: float = 2.0, num_classes: int = 10) -> Partition:
    if num_clients < num_classes or num_clients % num_classes:
        raise PartitionError(f"fedlaavg_cifar: num_clients must be a positive multiple of {num_classes}, "
                             f"got {num_clients}")
    if base <= clamp:
        raise PartitionError(f"fedlaavg_cifar: base {base} must exceed clamp {clamp}")
    pr, rs = random.Random(seed), np.random.RandomState(seed)
    labels = np.asarray(labels)
    order = canonical_order(keys)
    per_class = [order[labels[order] == c].tolist() for c in range(num_classes)]
    for rows in per_class:
        pr.shuffle(rows)
    per = num_clients // num_classes
    clients: list[np.ndarray] = [np.zeros(0, np.int64)] * num_clients
    for c in range(num_classes):
        w = base + rs.randn(per)
        w[w < base - clamp] = base - clamp
        w[w > base + clamp] = base + clamp
        w /= w.sum()
        cumulative, total = [0.0], 0.0
        for value in w:
            total = total + value
            cumulative.append(total)
        cumulative[-1] = 1.0
        bounds = np.round(np.array(cumulative) * len(per_class[c])).astype(int)
        for worker in range(per):
            clients[worker + per * c] = np.array(per_class[c][bounds[worker]:bounds[worker + 1]], np.int64)
    check_clients("fedlaavg_cifar", clients)
    return Partition("fedlaavg_cifar", tuple(clients), {"num_clients": num_clients, "seed": seed, "base": base,
                                                        "clamp": clamp})


def client_classes(num_clients: int, num_classes: int = 10) -> np.ndarray:
    """The class of each client (client ``worker + (N / 10) * c`` holds class c)."""
    return np.arange(num_clients) // (num_clients // num_classes)

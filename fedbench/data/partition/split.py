"""Train/test split inside each client: a seeded shuffle, the first int(fraction * n) rows train.

What the FedProx authors' generators do after forming clients (litian96/FedProx data/mnist/generate_niid.py,
data/nist/data/my_sample.py: per-user random.shuffle, train_len = int(0.9 * num_samples)) and fedbench's
synthetic generator. Departure: the authors' shuffle is unseeded; here client k's shuffle is the stream
(seed, split, k). Clients keep their order; a client of n rows gets int(fraction * n) train rows (so n = 1
gives one test row and no training row, as in the authors' code).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError
from fedbench.seeding import rng


def shuffle_split(partition: Partition, train_fraction: float, seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if not 0.0 < train_fraction < 1.0:
        raise PartitionError(f"train_fraction must be in (0, 1), got {train_fraction}")
    train, test = [], []
    for k, rows in enumerate(partition.clients):
        perm = rng(seed, -1, "split", k).permutation(len(rows))
        n_train = int(train_fraction * len(rows))
        train.append(rows[perm[:n_train]])
        test.append(rows[perm[n_train:]])
    return train, test

"""FedProxVR's MNIST and Fashion-MNIST schemes: three (two) labels per user, 10 images each, then power law
times a random factor plus a random offset; 75/25 split.

Dinh et al., "Federated Learning with Proximal Stochastic Variance Reduced Gradient Algorithms", ICPP 2020;
the authors' CharlieDinh/FederatedLearningWithSVRG data/mnist/generate_niid_100users_updated.py (one of three
MNIST generators; which one the paper used is unknown) and data/fashion_mnist/generate_niid_100users_updated.py:
- per label, its images in source order; phase 1: user u takes 10 images of each label (u + j) % 10,
  j < labels_per_client (MNIST 3, Fashion 2);
- props = LogNormal(0, 2) of shape (10, U, labels_per_client), scaled so label l's entries sum to count_l - 1000
  (1000 as coded, whatever phase 1 took);
- user u, slot j: k = int(props[l, u // (U / 10), j]) * randint(1, 10) + randint(10, 200) (the offset is drawn
  first), doubled when U <= 20, taken only if pointer + k < count_l;
- each user's images shuffled (Python's random.shuffle), train = int(0.75 n).
The authors seed numpy and random with 1 (MNIST); Fashion seeds numpy with 0 and leaves random unseeded. This
partitioner replays those generators exactly: numpy's legacy RandomState(numpy_seed) and Python's
random.Random(python_seed), drawn in the authors' order (the one place fedbench's (seed, round, purpose)
streams are not used: the point is the authors' draws).

Departures: the per-label order is the source's (the authors read scikit-learn's 'MNIST original' file or
TensorFlow's Fashion reader, which keeps 5,000 training images apart as validation; see the dataset modules);
Fashion's unseeded Python draws are seeded with ``python_seed``.
"""

from __future__ import annotations

import random

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order


def fedproxvr_mnist(keys: np.ndarray, labels: np.ndarray, num_clients: int = 100, labels_per_client: int = 3,
                    phase1_per_label: int = 10, numpy_seed: int = 1, python_seed: int = 1,
                    train_fraction: float = 0.75, num_classes: int = 10) -> tuple[Partition, list[np.ndarray],
                                                                                    list[np.ndarray]]:
    """Returns (partition, train rows per client, test rows per client)."""
    if num_clients < num_classes or num_clients % num_classes:
        raise PartitionError(f"fedproxvr_mnist: num_clients must be a positive multiple of {num_classes}, "
                             f"got {num_clients}")
    rs, pr = np.random.RandomState(numpy_seed), random.Random(python_seed)
    labels = np.asarray(labels)
    order = canonical_order(keys)
    per_label = [order[labels[order] == d] for d in range(num_classes)]
    pointer = np.zeros(num_classes, np.int64)
    clients: list[list[int]] = [[] for _ in range(num_clients)]
    for u in range(num_clients):
        for j in range(labels_per_client):
            d = (u + j) % num_classes
            if pointer[d] + phase1_per_label > len(per_label[d]):
                raise PartitionError(f"fedproxvr_mnist: phase 1 needs {phase1_per_label} more images of label {d} "
                                     f"for client {u} but only {len(per_label[d]) - pointer[d]} are left")
            clients[u] += per_label[d][pointer[d]:pointer[d] + phase1_per_label].tolist()
            pointer[d] += phase1_per_label
    props = rs.lognormal(0, 2.0, (num_classes, num_clients, labels_per_client))
    counts = np.array([[[len(v) - 1000]] for v in per_label])
    props = counts * props / np.sum(props, (1, 2), keepdims=True)
    per_group = int(num_clients / num_classes)
    for u in range(num_clients):
        for j in range(labels_per_client):
            d = (u + j) % num_classes
            k = int(props[d, u // per_group, j])
            offset = pr.randint(10, 200)
            factor = pr.randint(1, 10)
            k = k * factor + offset
            if num_clients <= 20:
                k *= 2
            if pointer[d] + k < len(per_label[d]):
                clients[u] += per_label[d][pointer[d]:pointer[d] + k].tolist()
                pointer[d] += k
    train, test = [], []
    for mine in clients:
        rows = list(mine)
        pr.shuffle(rows)
        n_train = int(train_fraction * len(rows))
        train.append(np.array(rows[:n_train], np.int64))
        test.append(np.array(rows[n_train:], np.int64))
    partition = Partition("fedproxvr_mnist", tuple(np.array(c, np.int64) for c in clients), {
        "num_clients": num_clients, "labels_per_client": labels_per_client, "phase1_per_label": phase1_per_label,
        "numpy_seed": numpy_seed, "python_seed": python_seed, "train_fraction": train_fraction})
    return partition, train, test

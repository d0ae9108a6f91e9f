"""FedProx's MNIST scheme: two digits per device, 5 images of each, then power-law extra images.

Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020, section 5.1 and appendix C.1;
the authors' litian96/FedProx data/mnist/generate_niid.py (real-data.md section 4, paper-setups.md 1.3):
- per digit d, its images in source order (MNIST: training images of d in file order, then its test images);
- phase 1: device u takes ``phase1_per_label`` (5) images of each digit (u + j) % 10, j < ``labels_per_client``
  (2), from per-digit pointers;
- phase 2: props ~ LogNormal(0, 2) of shape (10, U / 10, labels_per_client), scaled so digit l's entries sum
  to count_l minus what phase 1 took of it (1000 for the paper's 1000 devices); device u, slot j then takes
  int(props[l, u // 10, j]) more images of digit l = (u + j) % 10, skipped unless pointer + k < count_l
  (strict, as coded), so the last images of a digit may stay unused.
With U = 1000 on all 70,000 images this is the paper's scheme (69,035 images in the paper's Table 1; the
authors' draws give 69,046-69,081). MNIST-5k (500 images per digit) uses U = 100: phase 1 takes 100 images per
digit, phase 2 shares the other 400 (real-data.md section 7).

Departures: the authors' lognormal draw is unseeded; here it is the stream (seed, partition). The per-digit
order is the source's (the authors' scikit-learn 'MNIST original' file may order images within a digit
differently). A device whose phase-1 images run out is refused (the authors' slice would silently be short).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order
from fedbench.seeding import rng


def fedprox_mnist(keys: np.ndarray, labels: np.ndarray, seed: int, num_clients: int = 1000,
                  labels_per_client: int = 2, phase1_per_label: int = 5, lognormal_sigma: float = 2.0,
                  num_classes: int = 10) -> Partition:
    if num_clients < num_classes or num_clients % num_classes:
        raise PartitionError(f"fedprox_mnist: num_clients must be a positive multiple of {num_classes}, "
                             f"got {num_clients}")
    labels = np.asarray(labels)
    order = canonical_order(keys)
    per_label = [order[labels[order] == d] for d in range(num_classes)]
    pointer = np.zeros(num_classes, np.int64)
    clients: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
    for u in range(num_clients):
        for j in range(labels_per_client):
            d = (u + j) % num_classes
            if pointer[d] + phase1_per_label > len(per_label[d]):
                raise PartitionError(f"fedprox_mnist: phase 1 needs {phase1_per_label} more images of label {d} for "
                                     f"client {u} but only {len(per_label[d]) - pointer[d]} are left "
                                     f"({len(per_label[d])} in all); use fewer clients")
            clients[u].append(per_label[d][pointer[d]:pointer[d] + phase1_per_label])
            pointer[d] += phase1_per_label
    props = rng(seed, -1, "partition", 0).lognormal(0.0, lognormal_sigma,
                                                     (num_classes, num_clients // num_classes, labels_per_client))
    remaining = np.array([[[len(per_label[d]) - pointer[d]]] for d in range(num_classes)], np.float64)
    props = remaining * props / props.sum(axis=(1, 2), keepdims=True)
    for u in range(num_clients):
        for j in range(labels_per_client):
            d = (u + j) % num_classes
            k = int(props[d, u // num_classes, j])
            if pointer[d] + k < len(per_label[d]):
                clients[u].append(per_label[d][pointer[d]:pointer[d] + k])
                pointer[d] += k
    return Partition("fedprox_mnist", tuple(np.concatenate(c) for c in clients), {
        "num_clients": num_clients, "labels_per_client": labels_per_client, "phase1_per_label": phase1_per_label,
        "lognormal_sigma": lognormal_sigma, "seed": seed})

"""FedProx's FEMNIST subset: 200 devices, 3 of the letters 'a'-'j' each, power-law sizes.

Li et al., MLSys 2020, appendix C.1 ("10 lowercase characters", "5 classes to each device"); the authors'
litian96/FedProx data/nist/data/my_sample.py at 3eed82e (real-data.md section 4, paper-setups.md 1.4):
- per class 'a'-'j' (labels 0-9), the files of by_class/<hex>/train_<hex>/ shuffled, the first 4,000 kept;
- n_u = LogNormal(4, 1) + 5 per device; per class max(2, int(n_u / 3)); classes (u + j) % 10, j < 3;
- the pointer quirk: the code resets a class's pointer to 0 whenever there is room (the test is inverted),
  so every device takes the first n images of each of its classes; images repeat across devices.
The code's CLASS_PER_USER = 3 is used (the paper says 5; ``classes_per_client`` changes it).

Departures: the authors shuffle the os.listdir order of each class folder and draw n_u without seeds; here
the files are in name order (keys), class c's shuffle is the stream (seed, partition, 1 + c) and n_u the
stream (seed, partition, 0). A slice that would run past a class's images is refused (the authors' list
would silently be short while its labels were not).
"""

from __future__ import annotations

import numpy as np

from fedbench.data.partition import Partition, PartitionError, canonical_order
from fedbench.seeding import rng


def fedprox_femnist(keys: np.ndarray, labels: np.ndarray, seed: int, num_clients: int = 200,
                    classes_per_client: int = 3, per_class_cap: int = 4000, lognormal_mean: float = 4.0,
                    lognormal_sigma: float = 1.0, num_classes: int = 10) -> Partition:
    labels = np.asarray(labels)
    order = canonical_order(keys)
    per_class = []
    for c in range(num_classes):
        rows = order[labels[order] == c]
        per_class.append(rows[rng(seed, -1, "partition", 1 + c).permutation(len(rows))][:per_class_cap])
    sizes = rng(seed, -1, "partition", 0).lognormal(lognormal_mean, lognormal_sigma, num_clients) + 5
    pointer = np.zeros(num_classes, np.int64)
    clients = []
    for u in range(num_clients):
        n = max(2, int(sizes[u] / classes_per_client))
        mine = []
        for j in range(classes_per_client):
            c = (u + j) % num_classes
            if pointer[c] + n < len(per_class[c]):
                pointer[c] = 0  # the authors' inverted test: reset whenever there is room
            if pointer[c] + n > len(per_class[c]):
                raise PartitionError(f"fedprox_femnist: client {u} needs {n} images of class {c} from position "
                                     f"{pointer[c]} but the class has {len(per_class[c])}")
            mine.append(per_class[c][pointer[c]:pointer[c] + n])
            pointer[c] += n
        clients.append(np.concatenate(mine))
    return Partition("fedprox_femnist", tuple(clients), {
        "num_clients": num_clients, "classes_per_client": classes_per_client, "per_class_cap": per_class_cap,
        "lognormal_mean": lognormal_mean, "lognormal_sigma": lognormal_sigma, "seed": seed})

"""Synthetic(alpha, beta) and Synthetic-IID, the FedProx paper's synthetic federated datasets.

Li et al., "Federated Optimization in Heterogeneous Networks", MLSys 2020, section 5.1 and appendix C.1;
the authors' generators are data/synthetic_*/generate_synthetic.py and data/synthetic_iid/generate_iid.py
of litian96/FedProx (see shared/reference/paper-setups.md, section 1.2). Per device k:

    n_k = int(LogNormal(4, 2)) + 50,   u_k ~ N(0, alpha),   B_k ~ N(0, beta)   (alpha, beta: std devs)
    W_k[i, j] ~ N(u_k, 1) (60 x 10),    b_k[j] ~ N(u_k, 1),  v_k[j] ~ N(B_k, 1)
    x ~ N(v_k, diag(j^-1.2)),           y = argmax(x W_k + b_k)

Synthetic-IID shares one W, b ~ N(0, 1) across devices and draws x ~ N(0, diag(j^-1.2)).

Deviations from the authors' code:
- Seeded: every draw comes from fedbench.seeding streams, so the data is reproducible. The authors'
  generators set no seed (their committed JSON files are one unrepeatable draw), so our datasets are
  draws from the same law, not their files.
- Each device's data is shuffled and split 90% train / 10% test as in the authors' code (the paper says
  80/20); train_fraction is a parameter.
- Draw order differs from the authors' global-numpy sequence (one independent stream per device), which
  changes nothing about the law.
"""

from __future__ import annotations

import functools

import numpy as np

from fedbench.data.format import FederatedDataset, Split
from fedbench.seeding import rng

DIMENSION = 60
NUM_CLASSES = 10


def covariance_diagonal(dimension: int = DIMENSION) -> np.ndarray:
    """Sigma_jj = j^-1.2 for j = 1..dimension (the inputs' diagonal covariance)."""
    return np.arange(1, dimension + 1, dtype=np.float64) ** -1.2


def synthetic_name(alpha: float, beta: float, iid: bool) -> str:
    return "synthetic_iid" if iid else f"synthetic_{alpha:g}_{beta:g}".replace(".", "p")


def generate_synthetic(
    alpha: float,
    beta: float,
    iid: bool = False,
    *,
    num_devices: int = 30,
    seed: int = 0,
    train_fraction: float = 0.9,
    lognormal_mean: float = 4.0,
    lognormal_sigma: float = 2.0,
    min_samples: int = 50,
) -> FederatedDataset:
    """Generate Synthetic(alpha, beta) (or Synthetic-IID with ``iid=True``) as a FederatedDataset."""
    if alpha < 0 or beta < 0:
        raise ValueError("alpha and beta are standard deviations and must be >= 0")
    name = synthetic_name(alpha, beta, iid)
    g = rng(seed, -1, "data", 0)
    sizes = g.lognormal(lognormal_mean, lognormal_sigma, num_devices).astype(np.int64) + min_samples
    u = g.normal(0.0, alpha, num_devices)  # mean of W_k and b_k (the code uses mean_b = mean_W)
    big_b = g.normal(0.0, beta, num_devices)  # mean of v_k
    sd = np.sqrt(covariance_diagonal())
    if iid:
        w_shared = g.normal(0.0, 1.0, (DIMENSION, NUM_CLASSES))
        b_shared = g.normal(0.0, 1.0, NUM_CLASSES)

    train_x, train_y, test_x, test_y = [], [], [], []
    for k in range(num_devices):
        gk = rng(seed, -1, "data", 1 + k)
        if iid:
            w_k, b_k, v_k = w_shared, b_shared, np.zeros(DIMENSION)
        else:
            w_k = gk.normal(u[k], 1.0, (DIMENSION, NUM_CLASSES))
            b_k = gk.normal(u[k], 1.0, NUM_CLASSES)
            v_k = gk.normal(big_b[k], 1.0, DIMENSION)
        x = v_k + gk.standard_normal((sizes[k], DIMENSION)) * sd
        y = np.argmax(x @ w_k + b_k, axis=1)
        order = rng(seed, -1, "split", k).permutation(sizes[k])
        n_train = int(train_fraction * sizes[k])
        train_x.append(x[order[:n_train]])
        train_y.append(y[order[:n_train]])
        test_x.append(x[order[n_train:]])
        test_y.append(y[order[n_train:]])

    return FederatedDataset(
        name=name,
        client_ids=tuple(f"f_{k:05d}" for k in range(num_devices)),
        train=Split.from_clients(train_x, train_y, (DIMENSION,)),
        test=Split.from_clients(test_x, test_y, (DIMENSION,)),
        num_classes=NUM_CLASSES,
        source={
            "generator": "fedbench.data.synthetic.generate_synthetic",
            "paper": "Li et al. MLSys 2020, sec. 5.1 / app. C.1",
            "params": {
                "alpha": alpha, "beta": beta, "iid": iid, "num_devices": num_devices, "seed": seed,
                "train_fraction": train_fraction, "lognormal_mean": lognormal_mean,
                "lognormal_sigma": lognormal_sigma, "min_samples": min_samples,
            },
        },
    )


# The four datasets of the paper's Figure 2, by the names used in params.yaml: (alpha, beta, iid).
SYNTHETIC_DATASETS: dict[str, tuple[float, float, bool]] = {
    "synthetic_iid": (0.0, 0.0, True),
    "synthetic_0_0": (0.0, 0.0, False),
    "synthetic_0p5_0p5": (0.5, 0.5, False),
    "synthetic_1_1": (1.0, 1.0, False),
}


@functools.lru_cache(maxsize=32)
def synthetic(name: str, seed: int = 0, num_devices: int = 30, train_fraction: float = 0.9) -> FederatedDataset:
    """The paper's synthetic set ``name`` (a key of :data:`SYNTHETIC_DATASETS`) drawn with data seed ``seed``: the one
    home of these datasets for every study (a study's run names the data seed it trains on: fedbench.study.contract
    .StudyRun.data_seed). Built once per process and arguments; the data stage writes the same draw to disk
    (fedbench.pipeline.generate). A name not in SYNTHETIC_DATASETS is a ValueError naming the allowed ones."""
    if name not in SYNTHETIC_DATASETS:
        raise ValueError(f"synthetic dataset {name!r}; allowed: {', '.join(SYNTHETIC_DATASETS)}")
    alpha, beta, iid = SYNTHETIC_DATASETS[name]
    return generate_synthetic(alpha, beta, iid, num_devices=num_devices, seed=seed, train_fraction=train_fraction)

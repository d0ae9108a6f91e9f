"""scikit-learn's digits (UCI optdigits test set, 1,797 8x8 images, pixel values 0-16): a real dataset small
enough for fast tests of the whole prepare -> partition -> train path, and for trying every generic partitioner
on real data.

Prepared source ``digits``: ``x`` uint8 [1797, 64], ``y`` int64, ``key`` (row in the file).
Variant ``digits_partitioned``: ``partitioner`` one of iid, quantity_skew, shards, dirichlet (default, alpha 0.5) and
similarity (fedbench.data.partition), over ``num_clients`` clients; seeded per-client shuffle and split;
input x / 16. No paper uses it; it has no writer ids, so its clients are not natural.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.partition import Partition
from fedbench.data.partition.dirichlet import dirichlet
from fedbench.data.partition.iid import iid
from fedbench.data.partition.quantity_skew import quantity_skew
from fedbench.data.partition.shards import shards
from fedbench.data.partition.similarity import similarity
from fedbench.data.partition.split import shuffle_split
from fedbench.data.pool import Pool
from fedbench.data.sources import verify_raw


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    provenance = verify_raw("digits", folder, verify)
    with gzip.open(folder / "digits.csv.gz", "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != 65:
        raise ValueError(f"{folder / 'digits.csv.gz'}: expected 65 columns (64 pixels, label), got {table.shape}")
    x, y = table[:, :64].astype(np.uint8), table[:, 64].astype(np.int64)
    return Pool("digits", {"x": x, "y": y, "key": np.arange(len(y), dtype=np.int64)}, {"sources": [provenance]},
                {"images": len(y)})


PARTITIONERS = ("iid", "quantity_skew", "shards", "dirichlet", "similarity")


def generic_partition(keys: np.ndarray, labels: np.ndarray, p: dict[str, Any], where: str) -> Partition:
    """The generic partitioner ``p["partitioner"]`` with its parameters from ``p``."""
    name, n, seed = p["partitioner"], p["num_clients"], p["seed"]
    if name == "iid":
        return iid(keys, n, seed)
    if name == "quantity_skew":
        return quantity_skew(keys, n, seed, distribution=p["distribution"], sigma=p["sigma"], beta=p["beta"],
                             min_size=p["min_size"])
    if name == "shards":
        return shards(keys, labels, n, p["shards_per_client"], seed)
    if name == "dirichlet":
        return dirichlet(keys, labels, n, p["alpha"], seed, min_size=p["min_size"])
    if name == "similarity":
        return similarity(keys, labels, n, p["similarity_percent"], seed)
    raise ValueError(f"{where}.partitioner: {name!r} is not allowed; allowed: {', '.join(PARTITIONERS)}")


def build_digits(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool, p = prepared("digits"), params
    partition = generic_partition(pool["key"], pool["y"], p, "data.variants.digits_partitioned")
    train, test = shuffle_split(partition, p["train_fraction"], p["seed"])
    spec = InputSpec(kind="features", transform="scale", transform_params={"divisor": 16.0}, image_shape=(1, 8, 8))
    return assemble("digits_partitioned", pool["x"], pool["y"], train, test, [f"d_{k:03d}" for k in range(p["num_clients"])], 10,
                    input=spec, partition=partition, keys=pool["key"], pools=[pool], params=p,
                    notes=["no paper uses it: a small real dataset for fast end-to-end checks"])

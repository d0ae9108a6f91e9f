"""EMNIST balanced (downloaded ``gzip.zip``): preparation and SCAFFOLD's s%-similarity splits.

Prepared source ``emnist``: the balanced split (47 classes; 112,800 training and 18,800 test images) read from
``gzip/emnist-balanced-{train,test}-{images-idx3,labels-idx1}-ubyte.gz`` inside the zip, without unpacking
it: ``x`` uint8 [n, 784], ``y``, ``key`` (position: training file then test file), ``origin``. Images are kept
as stored (transposed relative to MNIST's orientation, as torchvision's EMNIST also returns them); the
logistic and fully connected models SCAFFOLD trains do not care.

Variants ``emnist_scaffold_n{100,400}_s{0,10,100}``: SCAFFOLD's similarity split of the training images
(fedbench.data.partition.similarity) over N clients at s% similarity; the test images are a global test
set (the paper reports test accuracy, not per-client test data); input x / 255.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.partition.similarity import similarity
from fedbench.data.pool import Pool
from fedbench.data.sources import parse_idx, verify_raw

SPLIT = "balanced"
NUM_CLASSES = 47


def _member(z: zipfile.ZipFile, name: str) -> np.ndarray:
    path = f"gzip/emnist-{SPLIT}-{name}-ubyte.gz"
    try:
        raw = z.read(path)
    except KeyError:
        raise FileNotFoundError(f"{z.filename}: no member {path}; is it EMNIST's gzip.zip?") from None
    return parse_idx(raw, f"{z.filename}:{path}")


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    provenance = verify_raw("emnist", folder, verify)
    with zipfile.ZipFile(folder / "gzip.zip") as z:
        parts = [(_member(z, f"{s}-images-idx3").reshape(-1, 784), _member(z, f"{s}-labels-idx1").astype(np.int64))
                 for s in ("train", "test")]
    (x_train, y_train), (x_test, y_test) = parts
    x = np.concatenate([x_train, x_test]).astype(np.uint8)
    return Pool("emnist", {"x": x, "y": np.concatenate([y_train, y_test]), "key": np.arange(len(x), dtype=np.int64),
                           "origin": np.repeat(np.array([0, 1], np.int8), [len(x_train), len(x_test)])},
                {"sources": [provenance]}, {"split": SPLIT, "train_images": len(x_train), "test_images": len(x_test)})


def build_scaffold(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return scaffold_split(prepared, params, "emnist", NUM_CLASSES, [
        "SCAFFOLD (Karimireddy et al. ICML 2020) sec. 7.1 similarity split, one reading of one sentence",
        "EMNIST balanced test images as a global test set; clients have no test data"])


def scaffold_split(prepared: Any, params: dict[str, Any], source: str, num_classes: int,
                   notes: list[str]) -> FederatedDataset:
    """SCAFFOLD's s%-similarity split of an idx pool's training images (``origin`` 0) over ``num_clients``, its test
    images (``origin`` 1) the global test set, input x / 255; shared by EMNIST and the Fashion-MNIST stand-in."""
    variant, pool, p = prepared.variant, prepared(source), params
    train_rows = np.flatnonzero(pool["origin"] == 0)
    test_rows = np.flatnonzero(pool["origin"] == 1)
    keys, labels = pool["key"][train_rows], pool["y"][train_rows]
    partition = similarity(keys, labels, p["num_clients"], p["similarity_percent"], p["seed"])
    clients = [train_rows[c] for c in partition.clients]
    empty = [np.zeros(0, np.int64)] * len(clients)
    spec = InputSpec(kind="features", transform="scale", transform_params={"divisor": 255.0}, image_shape=(1, 28, 28))
    return assemble(variant, pool["x"], pool["y"], clients, empty, [f"c_{k:04d}" for k in range(len(clients))],
                    num_classes, input=spec, partition=partition, keys=keys, pools=[pool], params=p,
                    global_test=(pool["x"][test_rows], pool["y"][test_rows]), notes=notes)

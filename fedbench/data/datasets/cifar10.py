"""CIFAR-10 (downloaded python tar.gz): preparation and FedLaAvg's one-class-per-client partition.

Prepared source ``cifar10``: the pickled batches read from ``cifar-10-python.tar.gz`` without unpacking it
(each member's md5 checked against torchvision's list when verifying): ``x`` uint8 [60000, 3, 32, 32] (training
batches 1-5 then the test batch: torchvision's order), ``y``, ``key``, ``origin``. Pickles are read with an
unpickler that only builds dicts, lists, bytes and numpy arrays (an unverified file cannot run code).

Variant ``cifar10_fedlaavg``: FedLaAvg's partition of the 50,000 training images (N = 1000, one class per
client, the authors' sizes: fedbench.data.partition.fedlaavg_cifar); the 10,000 test images are the global
test set (no per-client test data); hierarchy ``class`` per client, which is what FedLaAvg's availability
groups are made of (classes 0-4 available for P rounds, then classes 5-9: :func:`availability_groups`);
input ToTensor + Normalize(0.5, 0.5).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble
from fedbench.data.download import ChecksumError
from fedbench.data.format import FederatedDataset, InputSpec
from fedbench.data.partition.fedlaavg_cifar import client_classes, fedlaavg_cifar
from fedbench.data.pool import Pool
from fedbench.data.sources import get_source, verify_raw

ARCHIVE = "cifar-10-python.tar.gz"
BATCHES = ("data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5", "test_batch")
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"), ("_codecs", "encode")}


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"CIFAR-10 batch refers to {module}.{name}; only numpy arrays are allowed")
        return super().find_class(module, name)


def _batch(data: bytes, label: str) -> tuple[np.ndarray, np.ndarray]:
    batch = _SafeUnpickler(io.BytesIO(data), encoding="bytes").load()
    x, y = np.asarray(batch[b"data"], np.uint8), np.asarray(batch[b"labels"], np.int64)
    if x.ndim != 2 or x.shape[1] != 3072 or len(x) != len(y):
        raise ValueError(f"{label}: expected data [n, 3072] and n labels, got {x.shape} and {len(y)}")
    return x.reshape(-1, 3, 32, 32), y


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    provenance = verify_raw("cifar10", folder, verify)
    members = {m.path.rsplit("/", 1)[-1]: m.md5 for m in get_source("cifar10").files[0].members}
    xs, ys = [], []
    with tarfile.open(folder / ARCHIVE) as t:
        for name in BATCHES:
            member = f"cifar-10-batches-py/{name}"
            try:
                data = t.extractfile(member).read()
            except KeyError:
                raise FileNotFoundError(f"{folder / ARCHIVE}: no member {member}") from None
            if verify and hashlib.md5(data).hexdigest() != members[name]:
                raise ChecksumError(f"{folder / ARCHIVE}:{member}: md5 {hashlib.md5(data).hexdigest()}, expected "
                                    f"{members[name]}")
            x, y = _batch(data, member)
            xs.append(x)
            ys.append(y)
    x = np.concatenate(xs)
    n_train = sum(len(v) for v in xs[:5])
    return Pool("cifar10", {"x": x, "y": np.concatenate(ys), "key": np.arange(len(x), dtype=np.int64),
                            "origin": np.repeat(np.array([0, 1], np.int8), [n_train, len(x) - n_train])},
                {"sources": [provenance]}, {"train_images": n_train, "test_images": len(x) - n_train})


def build_cifar10_fedlaavg(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    pool = prepared("cifar10")
    p = params
    train_rows, test_rows = np.flatnonzero(pool["origin"] == 0), np.flatnonzero(pool["origin"] == 1)
    keys, labels = pool["key"][train_rows], pool["y"][train_rows]
    partition = fedlaavg_cifar(keys, labels, num_clients=p["num_clients"], seed=p["seed"])
    clients = [train_rows[c] for c in partition.clients]
    spec = InputSpec(kind="image", transform="normalize", transform_params={"mean": [0.5] * 3, "std": [0.5] * 3})
    classes = client_classes(p["num_clients"])
    return assemble("cifar10_fedlaavg", pool["x"], pool["y"], clients, [np.zeros(0, np.int64)] * len(clients),
                    [str(k) for k in range(len(clients))], 10, input=spec, partition=partition, keys=keys,
                    pools=[pool], params=p, hierarchy={"class": tuple(str(c) for c in classes)},
                    global_test=(pool["x"][test_rows], pool["y"][test_rows]), notes=[
                        "FedLaAvg (Yan et al. arXiv 2002.07399 v1) utils/partition.py replayed with its seed 1",
                        "the 10,000 test images are a global test set; clients have no test data"])


def availability_groups(ds: FederatedDataset) -> np.ndarray:
    """FedLaAvg's two availability groups: 0 for clients of classes 0-4, 1 for classes 5-9 (for
    fedbench.availability.diurnal.DiurnalAvailability)."""
    if "class" not in ds.hierarchy:
        raise ValueError(f"{ds.name} has no 'class' hierarchy; FedLaAvg's groups need one class per client")
    return (np.array([int(c) for c in ds.hierarchy["class"]]) >= 5).astype(np.int64)

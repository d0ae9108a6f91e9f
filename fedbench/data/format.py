"""The on-disk federated-dataset format every fedbench dataset shares.

A dataset is a folder holding two files:

- ``arrays.npz``: ``train_x``, ``train_y``, ``train_offsets``, ``test_x``, ``test_y``, ``test_offsets``.
  Client k's training samples are ``train_x[train_offsets[k]:train_offsets[k + 1]]`` (same for test).
- ``meta.json``: name, client ids, number of classes, feature shape, where the data came from
  (generator and its parameters, or upstream URL and checksum), and ``content_hash``, the SHA-256 of
  the arrays and client ids. ``meta.json`` is written last, so a folder without it is incomplete.

Writes go to a temporary sibling folder that is renamed into place, so an interrupted write never
leaves a folder that looks complete. Loading checks the content hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

FORMAT_VERSION = 1
_ARRAYS = "arrays.npz"
_META = "meta.json"


@dataclass(frozen=True)
class Split:
    """One split (train or test) of every client, concatenated, with offsets."""

    x: np.ndarray
    y: np.ndarray
    offsets: np.ndarray

    def __post_init__(self) -> None:
        if self.offsets.ndim != 1 or self.offsets[0] != 0 or self.offsets[-1] != len(self.x):
            raise ValueError("offsets must start at 0 and end at the number of samples")
        if np.any(np.diff(self.offsets) < 0):
            raise ValueError("offsets must be non-decreasing")
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} samples but y has {len(self.y)}")

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def client(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.offsets[k], self.offsets[k + 1]
        return self.x[lo:hi], self.y[lo:hi]

    @staticmethod
    def from_clients(xs: list[np.ndarray], ys: list[np.ndarray], feature_shape: tuple[int, ...]) -> Split:
        sizes = [len(x) for x in xs]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        x = np.concatenate(xs).astype(np.float32) if xs else np.zeros((0, *feature_shape), np.float32)
        y = np.concatenate(ys).astype(np.int64) if ys else np.zeros(0, np.int64)
        return Split(x=x.reshape(-1, *feature_shape), y=y, offsets=offsets)


@dataclass(frozen=True)
class FederatedDataset:
    """Per-client train and test arrays plus their provenance."""

    name: str
    client_ids: tuple[str, ...]
    train: Split
    test: Split
    num_classes: int
    source: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.client_ids)
        for split_name, split in (("train", self.train), ("test", self.test)):
            if len(split.offsets) != n + 1:
                raise ValueError(f"{split_name} has {len(split.offsets) - 1} clients, expected {n}")

    @property
    def num_clients(self) -> int:
        return len(self.client_ids)

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.train.x.shape[1:])

    @property
    def content_hash(self) -> str:
        return content_hash(self)


def content_hash(ds: FederatedDataset) -> str:
    """SHA-256 over client ids, class count and every array (dtype, shape and bytes)."""
    h = hashlib.sha256()
    h.update(json.dumps([list(ds.client_ids), ds.num_classes]).encode())
    for split in (ds.train, ds.test):
        for a in (split.x, split.y, split.offsets):
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
    return h.hexdigest()


@contextmanager
def atomic_folder(dest: str | os.PathLike, suffix: str = "") -> Iterator[Path]:
    """Yield an empty temporary folder beside ``dest``; when the block ends it replaces ``dest`` (whatever was
    there is removed). If the block raises, the temporary folder is removed and ``dest`` is left as it was,
    so an interrupted write never leaves a folder that looks complete.

    The temporary folder is ``.<dest name>.<random><suffix>`` in ``dest``'s parent (created if missing).
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=suffix, dir=dest.parent))
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary folder
        yield tmp
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save_dataset(ds: FederatedDataset, folder: str | os.PathLike) -> Path:
    """Write ``ds`` into ``folder`` atomically (replacing what was there) and return the folder."""
    folder = Path(folder)
    with atomic_folder(folder, suffix=".partial") as tmp:
        np.savez(
            tmp / _ARRAYS,
            train_x=ds.train.x, train_y=ds.train.y, train_offsets=ds.train.offsets,
            test_x=ds.test.x, test_y=ds.test.y, test_offsets=ds.test.offsets,
        )
        meta = {
            "format_version": FORMAT_VERSION,
            "name": ds.name,
            "client_ids": list(ds.client_ids),
            "num_clients": ds.num_clients,
            "num_classes": ds.num_classes,
            "feature_shape": list(ds.feature_shape),
            "train_samples": int(ds.train.offsets[-1]),
            "test_samples": int(ds.test.offsets[-1]),
            "source": ds.source,
            "content_hash": content_hash(ds),
        }
        (tmp / _META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return folder


def read_meta(folder: str | os.PathLike) -> dict[str, Any]:
    path = Path(folder) / _META
    if not path.exists():
        raise FileNotFoundError(f"{folder} is not a complete fedbench dataset (no {_META}); regenerate it")
    return json.loads(path.read_text())


def load_dataset(folder: str | os.PathLike, verify: bool = True) -> FederatedDataset:
    """Read a dataset written by :func:`save_dataset`; with ``verify`` the content hash is checked."""
    meta = read_meta(folder)
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{folder}: format version {meta.get('format_version')}, expected {FORMAT_VERSION}")
    with np.load(Path(folder) / _ARRAYS) as z:
        train = Split(z["train_x"], z["train_y"], z["train_offsets"])
        test = Split(z["test_x"], z["test_y"], z["test_offsets"])
    ds = FederatedDataset(
        name=meta["name"], client_ids=tuple(meta["client_ids"]), train=train, test=test,
        num_classes=int(meta["num_classes"]), source=meta.get("source", {}),
    )
    if verify and content_hash(ds) != meta["content_hash"]:
        raise ValueError(f"{folder}: content hash mismatch (files changed or corrupt); regenerate the dataset")
    return ds

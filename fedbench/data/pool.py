"""Prepared sources: what a ``prepare`` stage makes of a source's raw files, before any partition.

A prepared source is a folder (``data/prepared/<source>/`` in the pipeline) holding ``arrays.npz`` (named
arrays, whatever the source needs: images and labels in upstream order, per-user texts, tweets grouped by
user) and ``meta.json`` (written last; ``name``, ``provenance`` of the raw files, ``info`` about the preparation,
``content_hash`` over every array). Partitioners read it and write datasets in the shared format
(:mod:`fedbench.data.format`). Strings are kept as UTF-8 bytes plus offsets (:func:`pack_strings`).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.format import atomic_folder

_ARRAYS = "arrays.npz"
_META = "meta.json"


@dataclass(frozen=True)
class Pool:
    """A prepared source: named arrays, provenance of the raw files, and what the preparation did."""

    name: str
    arrays: dict[str, np.ndarray]
    provenance: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.arrays:
            raise KeyError(f"prepared source {self.name!r} has no array {key!r}; it has {sorted(self.arrays)}")
        return self.arrays[key]

    @property
    def content_hash(self) -> str:
        h = hashlib.sha256(self.name.encode())
        for key in sorted(self.arrays):
            a = np.ascontiguousarray(self.arrays[key])
            h.update(f"{key}{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        return h.hexdigest()

    @property
    def verified(self) -> bool:
        """False when any raw file was used without checksum verification (``--no-verify``)."""
        return all(p.get("verified", False) for p in self.provenance.get("sources", [])) if self.provenance else False


def save_pool(pool: Pool, folder: str | os.PathLike) -> Path:
    """Write ``pool`` into ``folder`` atomically (replacing what was there)."""
    folder = Path(folder)
    with atomic_folder(folder, suffix=".partial") as tmp:
        np.savez(tmp / _ARRAYS, **pool.arrays)
        meta = {"name": pool.name, "provenance": pool.provenance, "info": pool.info,
                "arrays": {k: {"dtype": str(a.dtype), "shape": list(a.shape)} for k, a in pool.arrays.items()},
                "content_hash": pool.content_hash}
        (tmp / _META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return folder


def load_pool(folder: str | os.PathLike, verify: bool = True) -> Pool:
    folder = Path(folder)
    if not (folder / _META).exists():
        raise FileNotFoundError(f"{folder} is not a complete prepared source (no {_META}); run "
                                f"`fedbench data prepare {folder.name}`")
    meta = json.loads((folder / _META).read_text())
    with np.load(folder / _ARRAYS) as z:
        arrays = {k: z[k] for k in z.files}
    pool = Pool(meta["name"], arrays, meta.get("provenance", {}), meta.get("info", {}))
    if verify and pool.content_hash != meta["content_hash"]:
        raise ValueError(f"{folder}: content hash mismatch (files changed or corrupt); prepare it again")
    return pool


def pack_strings(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(uint8 UTF-8 bytes of all strings concatenated, int64 offsets [n + 1])."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), np.uint8).copy(), offsets


def unpack_strings(data: np.ndarray, offsets: np.ndarray) -> list[str]:
    raw = data.tobytes()
    return [raw[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]

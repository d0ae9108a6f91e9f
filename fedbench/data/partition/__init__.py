"""Partitioners: seeded, pure functions from (labels or client ids, parameters, seed) to clients.

Each partitioner lives in its own file, names where it comes from and how it departs from it, and returns a
:class:`Partition`: for every client, the indices of its rows in the source. Every partitioner is invariant
to the row order of the source: it first puts the rows in a canonical order given by ``keys`` (one unique,
sortable identifier per row: the row's position in the upstream files, a writer's file name, or
:func:`content_keys` of the row's bytes), draws on that order, and maps back. The same (keys, labels,
parameters, seed) therefore give the same clients, as sets of keys and in the same order, however the
source's rows are shuffled (tests/data/partition checks this for every partitioner).

Random draws come from :func:`fedbench.seeding.rng` with purpose "partition", except where a partitioner
reproduces an author's seeded code (FedLaAvg's seed 1, FedProxVR's seed 1), which it says.

A partition that would leave a client without samples, or ask for more clients than there are rows or
groups, is refused with the numbers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class PartitionError(ValueError):
    """A partition that cannot be made as asked (an empty client, more clients than rows); names the numbers."""


@dataclass(frozen=True)
class Partition:
    """Clients as row indices into the source (in client order), and how they were made."""

    name: str
    clients: tuple[np.ndarray, ...]
    params: dict[str, Any] = field(default_factory=dict)
    client_ids: tuple[str, ...] | None = None  # natural ids where clients have them (writer, user, ...)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([len(c) for c in self.clients], np.int64)

    def content_hash(self, keys: np.ndarray) -> str:
        """SHA-256 of which source rows (by key) each client holds, in order: the partition's identity."""
        keys = np.asarray(keys)
        h = hashlib.sha256(self.name.encode())
        if self.client_ids is not None:
            h.update("\x00".join(self.client_ids).encode())
        for rows in self.clients:
            h.update(len(rows).to_bytes(8, "little"))
            h.update(np.ascontiguousarray(_as_sortable(keys[rows])).tobytes())
        return h.hexdigest()

    def record(self, keys: np.ndarray) -> dict[str, Any]:
        """What a dataset's ``partition`` field holds."""
        return {"name": self.name, "params": self.params, "content_hash": self.content_hash(keys)}


def _as_sortable(keys: np.ndarray) -> np.ndarray:
    keys = np.asarray(keys)
    if keys.dtype.kind in "iu":
        return keys.astype(np.int64)
    if keys.dtype.kind in "US":
        return np.char.encode(keys.astype(str), "utf-8") if keys.dtype.kind == "U" else keys
    if keys.dtype.kind == "O":
        return np.array([str(k).encode("utf-8") for k in keys])
    raise TypeError(f"row keys must be integers or strings, got dtype {keys.dtype}")


def canonical_order(keys: np.ndarray) -> np.ndarray:
    """Row indices sorting ``keys`` (stable); refuses duplicate keys, which would make the order ambiguous."""
    keys = np.asarray(keys)
    if keys.ndim != 1:
        raise ValueError(f"row keys must be 1-D, got shape {keys.shape}")
    order = np.argsort(keys, kind="stable")
    if len(keys) > 1:
        ranked = keys[order]
        same = ranked[1:] == ranked[:-1]
        if np.any(same):
            raise ValueError(f"row keys must be unique; {ranked[1:][same][0].item()!r} appears more than once")
    return order


def content_keys(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """A key per row from its bytes and label (for sources without row ids): the hex blake2b digest, with a
    ``#k`` suffix numbering identical rows (identical rows are interchangeable, so the numbering cannot change
    what a client holds)."""
    digests = [hashlib.blake2b(np.ascontiguousarray(xi).tobytes() + int(yi).to_bytes(8, "little", signed=True),
                               digest_size=16).hexdigest() for xi, yi in zip(x, y)]
    seen: dict[str, int] = {}
    out = []
    for d in digests:
        k = seen.get(d, 0)
        seen[d] = k + 1
        out.append(f"{d}#{k}")
    return np.array(out)


def check_clients(name: str, clients: list[np.ndarray] | tuple[np.ndarray, ...], what: str = "samples") -> None:
    """Refuse a partition with an empty client, naming how many and the first."""
    sizes = np.array([len(c) for c in clients])
    empty = np.flatnonzero(sizes == 0)
    if len(empty):
        raise PartitionError(f"{name}: {len(empty)} of {len(sizes)} clients would have no {what} (first: client "
                             f"{empty[0]}); use fewer clients or more data")


def check_num_clients(name: str, num_clients: int, available: int, what: str = "rows") -> None:
    if num_clients < 1:
        raise PartitionError(f"{name}: num_clients must be >= 1, got {num_clients}")
    if num_clients > available:
        raise PartitionError(f"{name}: {num_clients} clients but only {available} {what}; every client needs at "
                             f"least one; allowed: num_clients <= {available}")


def even_cut(n: int, parts: int) -> np.ndarray:
    """Boundaries [parts + 1] cutting n items into ``parts`` contiguous groups whose sizes differ by at most
    one, the larger groups last (LEAF's util.iid_divide)."""
    small = n // parts
    big = n - parts * small
    sizes = np.array([small] * (parts - big) + [small + 1] * big, np.int64)
    return np.concatenate([[0], np.cumsum(sizes)])

"""Assembling a federated dataset from a prepared source and a partition (shared by every dataset module)."""

from __future__ import annotations

from typing import Any

import numpy as np

from fedbench.data.format import FederatedDataset, InputSpec, Split
from fedbench.data.partition import Partition, PartitionError
from fedbench.data.pool import Pool
from fedbench.data.transforms import check_transform


def _gather(x: np.ndarray, y: np.ndarray, rows: list[np.ndarray]) -> Split:
    sizes = np.array([len(r) for r in rows], np.int64)
    flat = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return Split(x=x[flat], y=np.asarray(y)[flat].astype(np.int64), offsets=offsets)


def assemble(
    name: str,
    x: np.ndarray,
    y: np.ndarray,
    train_rows: list[np.ndarray],
    test_rows: list[np.ndarray],
    client_ids: tuple[str, ...] | list[str],
    num_classes: int,
    *,
    input: InputSpec,
    partition: Partition,
    keys: np.ndarray,
    pools: list[Pool],
    params: dict[str, Any],
    label_kind: str = "class",
    hierarchy: dict[str, tuple[str, ...]] | None = None,
    global_test: tuple[np.ndarray, np.ndarray] | None = None,
    transform_arrays: dict[str, np.ndarray] | None = None,
    notes: list[str] | None = None,
) -> FederatedDataset:
    """The dataset whose client k holds ``train_rows[k]`` and ``test_rows[k]`` of the source arrays ``x``, ``y``.

    ``keys`` identify the source rows (the partition's content hash is over them); ``pools`` are the prepared
    sources read (their provenance becomes the dataset's); ``params`` the variant's parameters. Refuses a
    client with no sample."""
    transform_arrays = dict(transform_arrays or {})
    check_transform(input, transform_arrays)
    if not len(client_ids):
        raise PartitionError(f"{name}: no client is left (parameters {params}); every user was filtered out")
    train, test = _gather(x, y, train_rows), _gather(x, y, test_rows)
    ds = FederatedDataset(
        name=name, client_ids=tuple(client_ids), train=train, test=test, num_classes=int(num_classes),
        source={"prepared_from": [{"name": p.name, "content_hash": p.content_hash, **p.provenance} for p in pools],
                "verified": all(p.verified for p in pools), "variant_params": params, "notes": list(notes or [])},
        input=input, label_kind=label_kind, hierarchy=dict(hierarchy or {}),
        global_test=None if global_test is None else Split.single(*global_test),
        transform_arrays=transform_arrays, partition=partition.record(keys),
    )
    empty = ds.empty_clients()
    if len(empty):
        raise PartitionError(f"{name}: {len(empty)} of {ds.num_clients} clients would have no samples (first: "
                             f"{ds.client_ids[empty[0]]!r}); change the partition parameters")
    return ds


def leaf_clients(name: str, train_users: list, test_users: list, params: dict[str, Any]) -> tuple[
        list[str], list[np.ndarray], list[np.ndarray], tuple[str, ...] | None, Partition]:
    """Clients from LEAF's split users (fedbench.data.leafsteps.SplitUser), sorted by id as FedProx's trainers
    order them (``sorted(train_data.keys())``): ids, train rows, test rows, hierarchy (or None) and the
    partition record. Test-only users (by-user splits) become clients with no training rows."""
    users = sorted(train_users + test_users, key=lambda u: u.user)
    ids = [u.user for u in users]
    if len(set(ids)) != len(ids):
        raise PartitionError(f"{name}: a user is both a train and a test user")
    hierarchy = tuple(u.hierarchy for u in users) if users and all(u.hierarchy is not None for u in users) else None
    partition = Partition("leaf", tuple(np.concatenate([u.train, u.test]) for u in users), params,
                          client_ids=tuple(ids))
    return ids, [u.train for u in users], [u.test for u in users], hierarchy, partition

"""The on-disk federated-dataset format every fedbench dataset shares (format version 2).

A dataset is a folder holding two files, ``arrays.npz`` and ``meta.json`` (written last: a folder without it
is incomplete). Writes go to a temporary sibling folder renamed into place, so an interrupted write never
leaves a folder that looks complete; loading checks the content hash.

arrays.npz
    ``train_x``, ``train_y``, ``train_offsets``, ``test_x``, ``test_y``, ``test_offsets``: every client's
    samples concatenated in client order; client k's training samples are
    ``train_x[train_offsets[k]:train_offsets[k + 1]]`` (the same for test). ``y`` is int64 class ids.
    ``x`` keeps the dtype the data has upstream: float32 features, uint8 pixels (images C x H x W, or
    flat), int64 word ids, uint8 character ids. What a model consumes is ``x`` after the input transform
    (below); never feed the stored ``x`` to a model directly.
    Optional: ``global_test_x``, ``global_test_y``, a test set owned by no client (FedLaAvg evaluates on
    CIFAR-10's 10k test images; SCAFFOLD on EMNIST's test set); ``transform__<name>``, arrays the input
    transform needs (e.g. FedProx MNIST's per-pixel mean and std).

meta.json
    ``format_version`` (2), ``name``, ``client_ids``, ``num_clients``, ``num_classes``, ``feature_shape``
    (per-sample shape of the stored x), ``train_samples``, ``test_samples``, ``content_hash``, and:

    ``arrays``: ``{key: {"dtype": "uint8", "shape": [...]}}`` for every array in arrays.npz.

    ``input``: what a model needs to consume x:
        ``kind``: ``features`` (flat vector [d]), ``image`` ([C, H, W] pixels), ``tokens`` (word ids [T]) or
        ``chars`` (character ids [L]); ``shape`` and ``dtype`` of the stored x; ``image_shape``: for flat
        pixel features (MNIST, FEMNIST and EMNIST as the authors feed them: 784-vectors), the C x H x W layout
        they unroll, for models that need images;
        ``transform`` and ``transform_params``: the function of :mod:`fedbench.data.transforms` that turns
        stored x into model input (``identity``; ``scale`` x / divisor; ``standardize`` (x - mean) /
        (std + eps), FedProx's MNIST rule; ``normalize`` torchvision's ToTensor + Normalize(mean, std);
        ``divide_by_mean``, Delta-FL's (x / divisor - mean) / mean with per-split constants; ``ids`` int64
        ids);
        ``vocabulary`` (tokens and chars): ``name``, ``size`` (rows an embedding needs, unknown row
        included), ``symbols`` (chars: the characters in id order), ``unknown_id`` (what an unknown symbol
        or word became), ``pad_id`` (what pads a short sequence), ``reference`` (word vocabularies: the
        embedding artifact holding the words, below);
        ``embedding`` (tokens): a frozen embedding artifact by reference, ``name``, ``content_hash``,
        ``rows``, ``dim``, ``folder`` (a prepared artifact: ``matrix.npy`` float32 [rows, dim] and
        ``vocab.txt``, read with :func:`fedbench.data.datasets.glove.load_embedding`); the matrix is never
        copied into a dataset.

    ``label``: ``{"kind": "class" | "binary", "num_classes": K}``. ``binary`` (Sent140): labels are 0/1 and
        the authors' models have one sigmoid output; ``num_classes`` is 2.

    ``hierarchy``: ``{level: [value per client]}`` where upstream groups clients (Shakespeare's ``play``,
        FEMNIST's ``hsf`` partition, FedLaAvg CIFAR-10's ``class``), else ``{}``.

    ``train_clients`` / ``test_only_clients``: how many clients have training data, and how many have only
        test data (Delta-FL's by-user splits: test devices never train; an engine must never select them and
        evaluates them). Preparation refuses a client with no sample at all.

    ``global_test_samples``: the size of the global test set (0 without one).

    ``partition``: how clients were formed: ``name`` (the partitioner), ``params``, ``content_hash`` (of
        the assignment of source rows to clients). It is part of the dataset's content hash, so every run
        records exactly which partition it trained on.

    ``source``: provenance (upstream files with their checksums and whether they were verified, the
        preparation steps and their parameters); not part of the content hash.

Content hash: SHA-256 over client ids, class count and every array (dtype, shape, bytes), then, for datasets
that use any version-2 field, over a canonical JSON of input, label kind, hierarchy, partition and the
optional arrays. A version-1 folder (synthetic data written before real data existed) therefore keeps its
hash and still loads, as float32 features with the identity transform.
"""

from __future__ import annotations

import dataclasses
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

FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_ARRAYS = "arrays.npz"
_META = "meta.json"
_TRANSFORM_PREFIX = "transform__"
INPUT_KINDS = ("features", "image", "tokens", "chars")
LABEL_KINDS = ("class", "binary")


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
    def from_clients(xs: list[np.ndarray], ys: list[np.ndarray], feature_shape: tuple[int, ...],
                     dtype: Any = np.float32) -> Split:
        """Concatenate per-client arrays; x becomes ``dtype`` (float32 by default; None keeps it)."""
        sizes = [len(x) for x in xs]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        empty_dtype = np.float32 if dtype is None else dtype
        x = np.concatenate(xs) if xs else np.zeros((0, *feature_shape), empty_dtype)
        if dtype is not None:
            x = x.astype(dtype, copy=False)
        y = np.concatenate(ys).astype(np.int64) if ys else np.zeros(0, np.int64)
        return Split(x=x.reshape(-1, *feature_shape), y=y, offsets=offsets)

    @staticmethod
    def single(x: np.ndarray, y: np.ndarray) -> Split:
        """A split that is one block (a global test set)."""
        return Split(x=x, y=np.asarray(y, np.int64), offsets=np.array([0, len(x)], np.int64))


@dataclass(frozen=True)
class Vocabulary:
    """The ids of a token or character input: see the module docstring (``input.vocabulary``)."""

    name: str
    size: int
    symbols: str | None = None
    unknown_id: int | None = None
    pad_id: int | None = None
    reference: str | None = None


@dataclass(frozen=True)
class EmbeddingRef:
    """A frozen embedding artifact a token dataset refers to (never copied into it)."""

    name: str
    content_hash: str
    rows: int
    dim: int
    folder: str


@dataclass(frozen=True)
class InputSpec:
    """How stored x becomes model input; see the module docstring (``input``)."""

    kind: str = "features"
    transform: str = "identity"
    transform_params: dict[str, Any] = field(default_factory=dict)
    vocabulary: Vocabulary | None = None
    embedding: EmbeddingRef | None = None
    image_shape: tuple[int, ...] | None = None  # flat pixel features: the C x H x W layout they unroll

    def __post_init__(self) -> None:
        if self.kind not in INPUT_KINDS:
            raise ValueError(f"input kind {self.kind!r} is not allowed; allowed: {', '.join(INPUT_KINDS)}")
        if self.kind in ("tokens", "chars") and self.vocabulary is None:
            raise ValueError(f"input kind {self.kind!r} needs a vocabulary")

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_json(raw: dict[str, Any]) -> InputSpec:
        vocab = raw.get("vocabulary")
        emb = raw.get("embedding")
        shape = raw.get("image_shape")
        return InputSpec(kind=raw["kind"], transform=raw.get("transform", "identity"),
                         transform_params=dict(raw.get("transform_params") or {}),
                         vocabulary=Vocabulary(**vocab) if vocab else None,
                         embedding=EmbeddingRef(**emb) if emb else None,
                         image_shape=tuple(shape) if shape else None)


@dataclass(frozen=True)
class FederatedDataset:
    """Per-client train and test arrays plus what a model needs to read them, and their provenance."""

    name: str
    client_ids: tuple[str, ...]
    train: Split
    test: Split
    num_classes: int
    source: dict[str, Any] = field(default_factory=dict)
    input: InputSpec = field(default_factory=InputSpec)
    label_kind: str = "class"
    hierarchy: dict[str, tuple[str, ...]] = field(default_factory=dict)
    global_test: Split | None = None
    transform_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    partition: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.client_ids)
        for split_name, split in (("train", self.train), ("test", self.test)):
            if len(split.offsets) != n + 1:
                raise ValueError(f"{split_name} has {len(split.offsets) - 1} clients, expected {n}")
        if self.label_kind not in LABEL_KINDS:
            raise ValueError(f"label kind {self.label_kind!r} is not allowed; allowed: {', '.join(LABEL_KINDS)}")
        for level, values in self.hierarchy.items():
            if len(values) != n:
                raise ValueError(f"hierarchy {level!r} has {len(values)} values for {n} clients")

    @property
    def num_clients(self) -> int:
        return len(self.client_ids)

    @property
    def feature_shape(self) -> tuple[int, ...]:
        return tuple(self.train.x.shape[1:])

    @property
    def test_only(self) -> np.ndarray:
        """bool [N]: clients with test data and no training data (never selected; evaluated only)."""
        return (self.train.sizes == 0) & (self.test.sizes > 0)

    @property
    def train_clients(self) -> np.ndarray:
        """Indices of the clients that have training data."""
        return np.flatnonzero(self.train.sizes > 0)

    @property
    def content_hash(self) -> str:
        return content_hash(self)

    def empty_clients(self) -> np.ndarray:
        """Indices of clients with neither training nor test data (prepared real datasets have none)."""
        return np.flatnonzero((self.train.sizes == 0) & (self.test.sizes == 0))


def _uses_v2(ds: FederatedDataset) -> bool:
    return (ds.input != InputSpec() or ds.label_kind != "class" or bool(ds.hierarchy) or bool(ds.partition)
            or ds.global_test is not None or bool(ds.transform_arrays))


def _hash_array(h: Any, a: np.ndarray) -> None:
    a = np.ascontiguousarray(a)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())


def content_hash(ds: FederatedDataset) -> str:
    """SHA-256 over client ids, class count and every array (dtype, shape and bytes); see the module docstring."""
    h = hashlib.sha256()
    h.update(json.dumps([list(ds.client_ids), ds.num_classes]).encode())
    for split in (ds.train, ds.test):
        for a in (split.x, split.y, split.offsets):
            _hash_array(h, a)
    if _uses_v2(ds):
        extra = {"input": ds.input.to_json(), "label_kind": ds.label_kind,
                 "hierarchy": {k: list(v) for k, v in ds.hierarchy.items()}, "partition": ds.partition}
        h.update(b"format-2")
        h.update(json.dumps(extra, sort_keys=True).encode())
        if ds.global_test is not None:
            _hash_array(h, ds.global_test.x)
            _hash_array(h, ds.global_test.y)
        for key in sorted(ds.transform_arrays):
            h.update(key.encode())
            _hash_array(h, ds.transform_arrays[key])
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


def _arrays(ds: FederatedDataset) -> dict[str, np.ndarray]:
    arrays = {
        "train_x": ds.train.x, "train_y": ds.train.y, "train_offsets": ds.train.offsets,
        "test_x": ds.test.x, "test_y": ds.test.y, "test_offsets": ds.test.offsets,
    }
    if ds.global_test is not None:
        arrays["global_test_x"], arrays["global_test_y"] = ds.global_test.x, ds.global_test.y
    for key, value in ds.transform_arrays.items():
        arrays[_TRANSFORM_PREFIX + key] = value
    return arrays


def dataset_meta(ds: FederatedDataset) -> dict[str, Any]:
    """The meta.json content of ``ds`` (see the module docstring)."""
    arrays = _arrays(ds)
    return {
        "format_version": FORMAT_VERSION,
        "name": ds.name,
        "client_ids": list(ds.client_ids),
        "num_clients": ds.num_clients,
        "num_classes": ds.num_classes,
        "feature_shape": list(ds.feature_shape),
        "train_samples": int(ds.train.offsets[-1]),
        "test_samples": int(ds.test.offsets[-1]),
        "global_test_samples": 0 if ds.global_test is None else len(ds.global_test.y),
        "train_clients": int(len(ds.train_clients)),
        "test_only_clients": int(ds.test_only.sum()),
        "arrays": {k: {"dtype": str(a.dtype), "shape": list(a.shape)} for k, a in arrays.items()},
        "input": {**ds.input.to_json(), "shape": list(ds.feature_shape), "dtype": str(ds.train.x.dtype)},
        "label": {"kind": ds.label_kind, "num_classes": ds.num_classes},
        "hierarchy": {k: list(v) for k, v in ds.hierarchy.items()},
        "partition": ds.partition,
        "source": ds.source,
        "content_hash": content_hash(ds),
    }


def save_dataset(ds: FederatedDataset, folder: str | os.PathLike) -> Path:
    """Write ``ds`` into ``folder`` atomically (replacing what was there) and return the folder."""
    folder = Path(folder)
    with atomic_folder(folder, suffix=".partial") as tmp:
        np.savez(tmp / _ARRAYS, **_arrays(ds))
        (tmp / _META).write_text(json.dumps(dataset_meta(ds), indent=2, sort_keys=True) + "\n")
    return folder


def read_meta(folder: str | os.PathLike) -> dict[str, Any]:
    path = Path(folder) / _META
    if not path.exists():
        raise FileNotFoundError(f"{folder} is not a complete fedbench dataset (no {_META}); regenerate it")
    return json.loads(path.read_text())


def read_train_sizes(folder: str | os.PathLike) -> np.ndarray:
    """The training samples of every client of the dataset saved in ``folder``, read from its stored offsets alone
    (no sample is loaded): what a study's cost is priced on (fedbench.bench.drawn_cost)."""
    with np.load(Path(folder) / _ARRAYS) as z:
        return np.diff(z["train_offsets"]).astype(np.int64)


def load_dataset(folder: str | os.PathLike, verify: bool = True) -> FederatedDataset:
    """Read a dataset written by :func:`save_dataset` (format 1 or 2); with ``verify`` the content hash is
    checked."""
    meta = read_meta(folder)
    version = meta.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ValueError(f"{folder}: format version {version}, expected one of {list(READABLE_VERSIONS)}; "
                         "regenerate the dataset with this fedbench")
    with np.load(Path(folder) / _ARRAYS) as z:
        train = Split(z["train_x"], z["train_y"], z["train_offsets"])
        test = Split(z["test_x"], z["test_y"], z["test_offsets"])
        global_test = Split.single(z["global_test_x"], z["global_test_y"]) if "global_test_x" in z else None
        transform_arrays = {k[len(_TRANSFORM_PREFIX):]: z[k] for k in z.files if k.startswith(_TRANSFORM_PREFIX)}
    extra: dict[str, Any] = {}
    if version == 2:
        raw_input = {k: v for k, v in meta["input"].items() if k not in ("shape", "dtype")}
        extra = {"input": InputSpec.from_json(raw_input), "label_kind": meta["label"]["kind"],
                 "hierarchy": {k: tuple(v) for k, v in meta.get("hierarchy", {}).items()},
                 "partition": meta.get("partition", {})}
    ds = FederatedDataset(
        name=meta["name"], client_ids=tuple(meta["client_ids"]), train=train, test=test,
        num_classes=int(meta["num_classes"]), source=meta.get("source", {}), global_test=global_test,
        transform_arrays=transform_arrays, **extra,
    )
    if verify and content_hash(ds) != meta["content_hash"]:
        raise ValueError(f"{folder}: content hash mismatch (files changed or corrupt); regenerate the dataset")
    return ds

"""Read LEAF's JSON files into fedbench's federated format, and write fedbench datasets as LEAF JSON.

LEAF: Caldas et al., "LEAF: A Benchmark for Federated Settings", arXiv 1812.01097, 2018
(github TalwalkarLab/leaf). Each split is one or more JSON files with the schema of
shared/reference/paper-setups.md section 6.3:

    {"users": [id, ...], "num_samples": [n, ...],
     "user_data": {id: {"x": [...], "y": [...]}, ...},
     "hierarchies": [...]}      # optional: Shakespeare's play per user; absent for iid data

The FedProx synthetic datasets (litian96/FedProx data/synthetic_*/data, section 1.2) use the same schema.

Format quirks this reader handles:
- A split is many files: LEAF writes at most 100 FEMNIST writers per file into train/ and test/.
  ``read_leaf_json`` merges them in the order given (a folder is read in sorted file-name order); a user
  listed in two files of one split is an error.
- Labels may be stored as floats: FedProx's synthetic JSON writes ``3.0``. They become int64; a
  non-integral label such as ``3.5`` is an error rather than being truncated.
- FEMNIST x is 784 floats in [0, 1] although LEAF's README says "integer list" (the code converts to
  grayscale, resizes 128 -> 28 and divides by 255); y is 0-9 digits, 10-35 uppercase, 36-61 lowercase.
- ``num_samples`` is stored separately from ``x`` and ``y``; all three are checked to agree per user.

- Shakespeare x is strings of characters and y one character: given a ``vocabulary`` (e.g.
  fedbench.data.datasets.shakespeare.VOCABULARIES), both become ids (unknown characters -> its unknown id).

Departures and limits:
- Numeric x and Shakespeare strings are converted. Sent140 (tweet fields; FedProx's older copy stores the
  polarity string '4' as y) needs fedbench.data.datasets.sent140's tokenizer.
- A user in train but not in test gets 0 test samples. A user only in test (LEAF's ``-t user`` split puts
  whole users in test) becomes a test-only client with ``test_only=True`` and is rejected otherwise.
- ``hierarchies`` (one value per user) become the dataset's ``hierarchy`` level ``hierarchy_name``.

Writing (:func:`write_leaf_json`): one train and one test file, as LEAF HEAD writes them; x is what a model
consumes (the input transform applied), except that pixels stored as integers with the ``scale`` transform are
written as LEAF writes them (uint8 / 255 in float64: 159 -> 0.6235294117647059), character ids are written back as
strings, word ids as integer lists (LEAF-based code expecting raw tweets cannot read those).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.format import FederatedDataset, InputSpec, Split, Vocabulary
from fedbench.data.transforms import model_inputs

PathLike = str | os.PathLike
_REQUIRED = ("users", "num_samples", "user_data")


def _json_files(path_or_paths: PathLike | Iterable[PathLike]) -> list[Path]:
    """The JSON files to read: a file, a folder (its *.json, sorted by name), or a list of either."""
    items = [path_or_paths] if isinstance(path_or_paths, (str, os.PathLike)) else list(path_or_paths)
    files: list[Path] = []
    for item in map(Path, items):
        if item.is_dir():
            found = sorted(item.glob("*.json"))
            if not found:
                raise FileNotFoundError(f"{item}: folder holds no .json files")
            files.extend(found)
        elif item.is_file():
            files.append(item)
        else:
            raise FileNotFoundError(f"{item}: no such LEAF JSON file or folder")
    if not files:
        raise ValueError("no LEAF JSON files given")
    return files


def _check_leaf_file(doc: Any, path: Path) -> None:
    """Raise ValueError, naming the file and user, where ``doc`` breaks LEAF's schema."""
    if not isinstance(doc, dict):  # a malformed file, reported like every other schema error
        raise ValueError(  # noqa: TRY004
            f"{path}: top level is a JSON {type(doc).__name__}, expected an object")
    missing = [key for key in _REQUIRED if key not in doc]
    if missing:
        raise ValueError(f"{path}: missing key(s) {missing}; a LEAF file has {list(_REQUIRED)} "
                         "and optionally 'hierarchies'")
    users, counts, data = doc["users"], doc["num_samples"], doc["user_data"]
    if len(users) != len(counts):
        raise ValueError(f"{path}: {len(users)} users but {len(counts)} num_samples entries")
    if len(set(users)) != len(users):
        raise ValueError(f"{path}: a user is listed more than once in 'users'")
    if "hierarchies" in doc and len(doc["hierarchies"]) != len(users):
        raise ValueError(f"{path}: {len(doc['hierarchies'])} hierarchies for {len(users)} users")
    unlisted = sorted(set(data) - set(users))
    if unlisted:
        raise ValueError(f"{path}: user_data has users not listed in 'users': {unlisted[:5]}")
    for user, n in zip(users, counts):
        entry = data.get(user)
        if not isinstance(entry, dict) or "x" not in entry or "y" not in entry:
            raise ValueError(f"{path}: user {user!r} has no user_data entry with 'x' and 'y'")
        if not len(entry["x"]) == len(entry["y"]) == n:
            raise ValueError(f"{path}: user {user!r} has num_samples {n} but len(x) = {len(entry['x'])} "
                             f"and len(y) = {len(entry['y'])}; all three must be equal")


def read_leaf_json(path_or_paths: PathLike | Iterable[PathLike]) -> dict[str, Any]:
    """Read and validate one split's LEAF JSON files and merge them into one LEAF-schema dict.

    ``path_or_paths`` is a file, a folder (every *.json in it, sorted by name) or a list of these.
    Users keep their order within and across files. ``hierarchies`` is kept when every file has it.
    """
    files = _json_files(path_or_paths)
    merged: dict[str, Any] = {"users": [], "num_samples": [], "user_data": {}}
    hierarchies: list[Any] = []
    without_hierarchies: list[Path] = []
    origin: dict[str, Path] = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        _check_leaf_file(doc, path)
        for user, n in zip(doc["users"], doc["num_samples"]):
            if user in origin:
                raise ValueError(f"user {user!r} appears in both {origin[user]} and {path}; "
                                 "a user belongs to one file of a split")
            origin[user] = path
            merged["users"].append(user)
            merged["num_samples"].append(int(n))
            merged["user_data"][user] = doc["user_data"][user]
        if "hierarchies" in doc:
            hierarchies.extend(doc["hierarchies"])
        else:
            without_hierarchies.append(path)
    if 0 < len(without_hierarchies) < len(files):
        raise ValueError(f"'hierarchies' is in some files but not in {[str(p) for p in without_hierarchies]}")
    if not without_hierarchies:
        merged["hierarchies"] = hierarchies
    return merged


def _user_arrays(
    entry: dict[str, Any], user: str, split: str, feature_shape: tuple[int, ...], num_classes: int,
    vocabulary: Vocabulary | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One user's x (float32 (n, *feature_shape), or uint8 character ids with a vocabulary) and y as int64,
    with every quirk checked."""
    where = f"{split} user {user!r}"
    n = len(entry["x"])
    if vocabulary is not None:
        return _char_arrays(entry, where, feature_shape, vocabulary)
    try:
        x = np.asarray(entry["x"], dtype=np.float32)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{where}: x is not a list of equal-length numeric vectors ({e}); "
                         "leaf_to_federated reads numeric features (FEMNIST, FedProx synthetic), not text") from None
    size = math.prod(feature_shape)
    if x.size != n * size:
        raise ValueError(f"{where}: x holds {x.size} values for {n} samples, expected {size} per sample "
                         f"(feature_shape {feature_shape})")
    y = np.asarray(entry["y"])
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.number):
        raise ValueError(f"{where}: y must be a flat list of class numbers (ints or integral floats), "
                         f"got dtype {y.dtype} and shape {y.shape}")
    fractional = ~np.isfinite(y) | (y != np.round(y))
    if np.any(fractional):
        raise ValueError(f"{where}: label {y[fractional][0]} is not an integer")
    labels = y.astype(np.int64)
    bad = (labels < 0) | (labels >= num_classes)
    if np.any(bad):
        raise ValueError(f"{where}: label {labels[bad][0]} is outside 0..{num_classes - 1}")
    return x.reshape(n, *feature_shape), labels


def _char_arrays(entry: dict[str, Any], where: str, feature_shape: tuple[int, ...],
                 vocabulary: Vocabulary) -> tuple[np.ndarray, np.ndarray]:
    table = {ch: i for i, ch in enumerate(vocabulary.symbols or "")}
    (length,) = feature_shape
    xs, ys = entry["x"], entry["y"]
    if not all(isinstance(v, str) and len(v) == length for v in xs):
        raise ValueError(f"{where}: x must be strings of {length} characters (Shakespeare windows)")
    if not all(isinstance(v, str) and len(v) == 1 for v in ys):
        raise ValueError(f"{where}: y must be single characters")
    x = np.array([[table.get(c, vocabulary.unknown_id) for c in v] for v in xs], np.uint8).reshape(-1, length)
    y = np.array([table.get(c, vocabulary.unknown_id) for c in ys], np.int64)
    return x, y


def leaf_to_federated(
    train_json: dict[str, Any] | PathLike | Iterable[PathLike],
    test_json: dict[str, Any] | PathLike | Iterable[PathLike],
    name: str,
    num_classes: int,
    feature_shape: tuple[int, ...],
    source: dict[str, Any],
    *,
    test_only: bool = False,
    vocabulary: Vocabulary | None = None,
    hierarchy_name: str = "hierarchy",
) -> FederatedDataset:
    """Build a FederatedDataset from LEAF train and test splits (numeric x, or Shakespeare strings with
    ``vocabulary``).

    ``train_json`` and ``test_json`` are dicts from :func:`read_leaf_json` or anything it accepts. Clients are
    the train users in train order, then (with ``test_only``) the users only in test, in test order;
    ``source`` records provenance (URLs, checksums, flags).
    """
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    feature_shape = tuple(int(d) for d in feature_shape)
    train = train_json if isinstance(train_json, dict) else read_leaf_json(train_json)
    test = test_json if isinstance(test_json, dict) else read_leaf_json(test_json)
    users = list(train["users"])
    train_users = set(users)
    only_test = [u for u in test["users"] if u not in train_users]
    if only_test and not test_only:
        raise ValueError(f"{len(only_test)} test user(s) have no training data, e.g. {only_test[:3]}; a split made "
                         "with LEAF's -t user has test-only users: pass test_only=True to keep them as test-only "
                         "clients")
    x_dtype = np.uint8 if vocabulary is not None else np.float32
    empty_x, empty_y = np.zeros((0, *feature_shape), x_dtype), np.zeros(0, np.int64)
    xs_train, ys_train, xs_test, ys_test = [], [], [], []
    for user in users + only_test:
        for split, doc, xs, ys in (("train", train, xs_train, ys_train), ("test", test, xs_test, ys_test)):
            if user in doc["user_data"]:
                x, y = _user_arrays(doc["user_data"][user], user, split, feature_shape, num_classes, vocabulary)
            else:
                x, y = empty_x, empty_y
            xs.append(x)
            ys.append(y)
    hierarchy = {}
    levels = {u: h for u, h in zip(train["users"], train.get("hierarchies", []))}
    levels.update({u: h for u, h in zip(test["users"], test.get("hierarchies", []))})
    if levels and all(u in levels for u in users + only_test):
        hierarchy = {hierarchy_name: tuple(str(levels[u]) for u in users + only_test)}
    spec = InputSpec(kind="chars", transform="ids", vocabulary=vocabulary) if vocabulary is not None else InputSpec()
    return FederatedDataset(
        name=name,
        client_ids=tuple(str(u) for u in users + only_test),
        train=Split.from_clients(xs_train, ys_train, feature_shape, dtype=x_dtype),
        test=Split.from_clients(xs_test, ys_test, feature_shape, dtype=x_dtype),
        num_classes=int(num_classes),
        source=dict(source),
        input=spec,
        hierarchy=hierarchy,
    )


def _leaf_x(ds: FederatedDataset, split: str) -> list:
    if ds.input.kind == "chars":
        symbols = ds.input.vocabulary.symbols
        stored = ds.train.x if split == "train" else ds.test.x
        return ["".join(symbols[i] for i in row) for row in stored]
    stored = ds.train.x if split == "train" else ds.test.x
    if ds.input.transform == "scale" and np.issubdtype(stored.dtype, np.integer):
        # LEAF's femnist data_to_json: numpy uint8 pixels / 255 in float64, written as Python floats (159 ->
        # 0.6235294117647059), not the float32 a model consumes (0.6235294342041016)
        x = stored.astype(np.float64) / float(ds.input.transform_params["divisor"])
    else:
        x = model_inputs(ds, split)
    return x.reshape(len(x), -1).tolist() if len(x) else []  # a split with no samples (no client has test data)


def write_leaf_json(ds: FederatedDataset, folder: PathLike) -> tuple[Path, Path]:
    """Write ``ds`` as LEAF JSON: ``folder/train/<name>_train.json`` and ``folder/test/<name>_test.json`` (a user
    appears in a file when it has samples in that split; test-only clients only in test). Returns both paths."""
    folder = Path(folder)
    out = []
    for split in ("train", "test"):
        part = ds.train if split == "train" else ds.test
        x_all = _leaf_x(ds, split)
        users, counts, data, hierarchies = [], [], {}, []
        level = next(iter(ds.hierarchy.values())) if len(ds.hierarchy) == 1 else None
        for k, user in enumerate(ds.client_ids):
            lo, hi = int(part.offsets[k]), int(part.offsets[k + 1])
            if hi == lo:
                continue
            y = part.y[lo:hi]
            if ds.input.kind == "chars":
                ys = [ds.input.vocabulary.symbols[i] for i in y]
            else:
                ys = [int(v) for v in y]
            users.append(user)
            counts.append(hi - lo)
            data[user] = {"x": x_all[lo:hi], "y": ys}
            if level is not None:
                hierarchies.append(level[k])
        doc: dict[str, Any] = {"users": users, "num_samples": counts, "user_data": data}
        if level is not None:
            doc["hierarchies"] = hierarchies
        path = folder / split / f"{ds.name}_{split}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)
        out.append(path)
    return out[0], out[1]

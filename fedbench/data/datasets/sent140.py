"""Sentiment140 (downloaded ``trainingandtestdata.zip``): LEAF's user grouping and the papers' tokenizations.

Prepared source ``sent140``, LEAF's data/sent140/preprocess exactly (real-data.md section 3): both CSVs read
as ISO-8859-1 (no header; polarity, id, date, query, user, text), 'training' / 'test' appended, rows stably
sorted by user (case-sensitive), y = 1 if the polarity is "4" else 0 (neutral "2" -> 0). LEAF writes the
combined CSV as UTF-8 and reads it back as ISO-8859-1, so every non-ASCII character of a tweet becomes two or
three (mojibake: 'é' -> 'Ã©'); ``leaf_reencoding`` (default true) reproduces this, since the tokens the models
see come from that text. Arrays: ``user_names`` (packed) with ``user_offsets`` into the sorted rows, and per
row ``y``, ``polarity``, ``origin`` (0 training.csv, 1 test.csv), and packed ``ids``, ``dates``, ``queries``,
``texts``.

Variants (LEAF's steps on one file ``all_data.json``, fedbench.data.leafsteps; clients sorted by id; binary
labels, one sigmoid output in the authors' models):
- ``sent140_fedprox``: FedProx's ``-s niid --sf 0.3 -k 30 -t sample`` with its LEAF copy (> k, so every user has
  at least 31 tweets; random split at 0.8); x = the first 25 tokens of ``re.findall(r"[\\w']+|[.,!?;]", text)``,
  ids of GloVe 6B 300d's ``word2id`` (no lower-casing, as the authors), unknown words and padding = the unknown
  id ``len(word2id)`` (the zero row); the embedding matrix is referenced, not copied.
- ``sent140_deltafl``: Delta-FL's ``-s niid --sf 1.0 -k 50 -t user --tf 0.5`` with its copy (Random(0),
  Random(1), > k); 20 tokens, GloVe 6B 50d (its LSTM); test users are test-only clients.
- ``sent140_deltafl_linear``: the same users; x = the mean GloVe 50d vector of all the tweet's tokens (unknown
  words count as the zero row), as simplicial-fl's sent140_preprocess_x feeds its linear model, normalised as its
  main.py does: (x - mean) / mean with the training split's mean for training clients and the test split's for
  test clients. Departure: a tweet with no token gets the zero vector (the authors' np.mean of nothing is NaN).
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from fedbench.data.build import assemble, leaf_clients
from fedbench.data.datasets import glove
from fedbench.data.format import FederatedDataset, InputSpec, Vocabulary
from fedbench.data.leafsteps import LeafCommand, LeafFile, run_leaf
from fedbench.data.pool import Pool, pack_strings, unpack_strings
from fedbench.data.sources import verify_raw

ARCHIVE = "trainingandtestdata.zip"
TRAINING = "training.1600000.processed.noemoticon.csv"
TEST = "testdata.manual.2009.06.14.csv"
TOKEN_RE = re.compile(r"[\w']+|[.,!?;]")  # LEAF / FedProx / simplicial-fl language_utils.split_line


def _rows(z: zipfile.ZipFile, member: str) -> list[list[str]]:
    try:
        raw = z.open(member)
    except KeyError:
        raise FileNotFoundError(f"{z.filename}: no member {member}; is it Sentiment140's zip?") from None
    with io.TextIOWrapper(raw, encoding="ISO-8859-1") as f:  # universal newlines, as LEAF's open(..., 'rt')
        rows = list(csv.reader(f))
    bad = [i for i, r in enumerate(rows) if len(r) != 6]
    if bad:
        raise ValueError(f"{z.filename}:{member} row {bad[0] + 1}: {len(rows[bad[0]])} fields, expected 6 "
                         "(polarity, id, date, query, user, text)")
    return rows


def _leaf_roundtrip(field: str) -> str:
    """LEAF writes its combined CSV as UTF-8 and reads it as ISO-8859-1."""
    return field.encode("utf-8").decode("ISO-8859-1")


def prepare(folder: Path, verify: bool = True, params: dict[str, Any] | None = None) -> Pool:
    params = {"leaf_reencoding": True, **(params or {})}
    provenance = verify_raw("sent140", folder, verify)
    with zipfile.ZipFile(folder / ARCHIVE) as z:
        rows = [r + ["training"] for r in _rows(z, TRAINING)] + [r + ["test"] for r in _rows(z, TEST)]
    if params["leaf_reencoding"]:
        rows = [[_leaf_roundtrip(v) for v in r] for r in rows]
    rows.sort(key=lambda r: r[4])  # stable, case-sensitive, as LEAF's sorted(data, key=lambda x: x[4])
    users = [r[4] for r in rows]
    names, starts = [], []
    for i, u in enumerate(users):
        if not names or u != names[-1]:
            names.append(u)
            starts.append(i)
    user_bytes, user_name_offsets = pack_strings(names)
    arrays: dict[str, np.ndarray] = {
        "user_names": user_bytes, "user_name_offsets": user_name_offsets,
        "user_offsets": np.array(starts + [len(rows)], np.int64),
        "y": np.array([1 if r[0] == "4" else 0 for r in rows], np.int64),
        "polarity": np.array([int(r[0]) if r[0].isdigit() else -1 for r in rows], np.int8),
        "origin": np.array([0 if r[6] == "training" else 1 for r in rows], np.int8),
    }
    for key, column in (("ids", 1), ("dates", 2), ("queries", 3), ("texts", 5)):
        arrays[key], arrays[f"{key}_offsets"] = pack_strings([r[column] for r in rows])
    return Pool("sent140", arrays, {"sources": [provenance]},
                {"tweets": len(rows), "users": len(names), "leaf_reencoding": params["leaf_reencoding"]})


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text)


def token_ids(texts: list[str], word2id: dict[str, int], max_words: int) -> np.ndarray:
    """The authors' line_to_indices: the first ``max_words`` tokens' ids, padded with the unknown id."""
    unknown = len(word2id)
    out = np.full((len(texts), max_words), unknown, np.int64)
    for i, text in enumerate(texts):
        ids = [word2id.get(w, unknown) for w in tokens(text)[:max_words]]
        out[i, :len(ids)] = ids
    return out


def mean_embeddings(texts: list[str], word2id: dict[str, int], matrix: np.ndarray) -> tuple[np.ndarray, int]:
    """simplicial-fl's sent140_preprocess_x: mean vector of every token (unknown -> the last, zero row); a
    tweet without tokens gets zeros (theirs: NaN). Returns the features and how many tweets had no token."""
    unknown = matrix.shape[0] - 1
    out = np.zeros((len(texts), matrix.shape[1]), np.float32)
    empty = 0
    for i, text in enumerate(texts):
        ids = [word2id.get(w, unknown) for w in tokens(text)]
        if ids:
            out[i] = matrix[ids].astype(np.float64).mean(0)
        else:
            empty += 1
    return out, empty


def _users(variant: str, pool: Pool, p: dict[str, Any]) -> tuple[list[str], list[np.ndarray], list[np.ndarray],
                                                                    tuple | None, Any]:
    names = unpack_strings(pool["user_names"], pool["user_name_offsets"])
    starts = pool["user_offsets"]
    files = [LeafFile("all_data.json", names,
                      [np.arange(starts[u], starts[u + 1], dtype=np.int64) for u in range(len(names))])]
    command = LeafCommand(sample=p["sample"], fraction=p["fraction"], min_samples=p["min_samples"],
                          strict=p["strict"], split=p["split"], train_fraction=p["train_fraction"],
                          sampling_seed=p["sampling_seed"], split_seed=p["split_seed"])
    train_users, test_users = run_leaf(files, command, f"data.variants.{variant}")
    return leaf_clients(variant, train_users, test_users, p)


def _texts(pool: Pool, rows: np.ndarray) -> list[str]:
    data, offsets = pool["texts"], pool["texts_offsets"]
    raw = data.tobytes()
    return [raw[offsets[r]:offsets[r + 1]].decode("utf-8") for r in rows]


def _compact(train: list[np.ndarray], test: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """The rows used, and train / test rows renumbered into them (so only used tweets are tokenized)."""
    used = np.unique(np.concatenate(train + test))
    return used, [np.searchsorted(used, r) for r in train], [np.searchsorted(used, r) for r in test]


def build_tokens(variant: str, prepared: Any, p: dict[str, Any], notes: list[str]) -> FederatedDataset:
    pool = prepared("sent140")
    emb_folder = f"glove/{p['embedding']}"
    emb = prepared(emb_folder)
    ids, train, test, _, partition = _users(variant, pool, p)
    used, train_local, test_local = _compact(train, test)
    word2id = glove.word_ids(emb)
    x = token_ids(_texts(pool, used), word2id, int(p["max_words"]))
    ref = glove.reference(emb, str(prepared.path(emb_folder)))
    unknown = len(word2id)
    vocab = Vocabulary(p["embedding"], ref.rows, unknown_id=unknown, pad_id=unknown, reference=p["embedding"])
    spec = InputSpec(kind="tokens", transform="ids", vocabulary=vocab, embedding=ref)
    return assemble(variant, x, pool["y"][used], train_local, test_local, ids, 2, input=spec, partition=partition,
                    keys=np.arange(len(pool["y"])), pools=[pool, emb], params=p, label_kind="binary",
                    notes=notes)


def build_sent140_fedprox(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_tokens("sent140_fedprox", prepared, params, [
        "FedProx: -s niid --sf 0.3 -k 30 -t sample with its LEAF copy (> k, frac 0.8); seeds 0 (the authors' "
        "came from the clock); 25 tokens, GloVe 6B 300d ids, unknown and padding = the zero row"])


def build_sent140_deltafl(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    return build_tokens("sent140_deltafl", prepared, params, [
        "Delta-FL: -s niid --sf 1.0 -k 50 -t user --tf 0.5 (Random(0), Random(1), > k); 20 tokens, GloVe 6B 50d; "
        "test users are test-only clients"])


def build_sent140_deltafl_linear(prepared: Any, params: dict[str, Any]) -> FederatedDataset:
    variant = "sent140_deltafl_linear"
    pool = prepared("sent140")
    p = params
    emb = prepared(f"glove/{p['embedding']}")
    ids, train, test, _, partition = _users(variant, pool, p)
    used, train_local, test_local = _compact(train, test)
    x, empty = mean_embeddings(_texts(pool, used), glove.word_ids(emb), emb["matrix"])
    train_x = x[np.concatenate(train_local)] if train_local else x[:0]
    test_x = x[np.concatenate(test_local)] if test_local else x[:0]
    constants = {"mean_train": train_x.astype(np.float64).mean(0).astype(np.float32),
                 "mean_test": test_x.astype(np.float64).mean(0).astype(np.float32)}
    spec = InputSpec(kind="features", transform="divide_by_mean")
    return assemble(variant, x, pool["y"][used], train_local, test_local, ids, 2, input=spec, partition=partition,
                    keys=np.arange(len(pool["y"])), pools=[pool, emb], params=p, label_kind="binary",
                    transform_arrays=constants, notes=[
                        "Delta-FL linear model input: mean GloVe 6B 50d vector over all tokens, normalised by "
                        "(x - mean) / mean with per-split means (the authors read std from the 'mean' key)",
                        f"{empty} tweets have no token and get the zero vector (the authors' mean of nothing is NaN)"])

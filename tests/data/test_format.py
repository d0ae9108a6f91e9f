"""The shared format, version 2: what real data needs, and old folders still loading."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedbench.data.format import (
    EmbeddingRef,
    FederatedDataset,
    InputSpec,
    Split,
    Vocabulary,
    load_dataset,
    read_meta,
    save_dataset,
)
from fedbench.data.synthetic import generate_synthetic


def tokens_dataset() -> FederatedDataset:
    x = np.array([[3, 1, 9], [2, 9, 9], [0, 4, 9], [5, 5, 5]], np.int64)
    y = np.array([1, 0, 1, 0])
    vocab = Vocabulary("glove.6B.50d", 10, unknown_id=9, pad_id=9, reference="glove.6B.50d")
    emb = EmbeddingRef("glove.6B.50d", "ab" * 32, rows=10, dim=50, folder="data/prepared/glove/glove.6B.50d")
    return FederatedDataset(
        name="tokens", client_ids=("train-user", "test-user"),
        train=Split(x[:2], y[:2], np.array([0, 2, 2])), test=Split(x[2:], y[2:], np.array([0, 1, 2])),
        num_classes=2, input=InputSpec(kind="tokens", transform="ids", vocabulary=vocab, embedding=emb),
        label_kind="binary", hierarchy={"play": ("A", "B")}, partition={"name": "leaf", "content_hash": "cd" * 32},
        global_test=Split.single(x[:1], y[:1]), transform_arrays={"mean": np.ones(3, np.float32)},
        source={"verified": False})


def test_version_2_round_trip_keeps_dtypes_and_every_field(tmp_path):
    ds = tokens_dataset()
    folder = save_dataset(ds, tmp_path / "tokens")
    meta = read_meta(folder)
    assert meta["format_version"] == 2 and meta["test_only_clients"] == 1 and meta["train_clients"] == 1
    assert meta["arrays"]["train_x"] == {"dtype": "int64", "shape": [2, 3]}
    assert meta["input"]["vocabulary"]["unknown_id"] == 9 and meta["input"]["embedding"]["dim"] == 50
    assert meta["label"] == {"kind": "binary", "num_classes": 2} and meta["global_test_samples"] == 1
    loaded = load_dataset(folder)
    assert loaded.input == ds.input and loaded.hierarchy == ds.hierarchy and loaded.partition == ds.partition
    assert loaded.label_kind == "binary" and loaded.test_only.tolist() == [False, True]
    assert loaded.train.x.dtype == np.int64 and loaded.content_hash == ds.content_hash
    np.testing.assert_array_equal(loaded.global_test.x, ds.global_test.x)
    np.testing.assert_array_equal(loaded.transform_arrays["mean"], ds.transform_arrays["mean"])


def test_every_version_2_field_is_in_the_hash():
    ds = tokens_dataset()
    base = ds.content_hash
    for change in ({"partition": {"name": "leaf", "content_hash": "ef" * 32}}, {"hierarchy": {"play": ("A", "C")}},
                   {"label_kind": "class"}, {"global_test": None}, {"transform_arrays": {}},
                   {"input": InputSpec(kind="tokens", vocabulary=Vocabulary("other", 10))}):
        assert FederatedDataset(**{**ds.__dict__, **change}).content_hash != base


def test_synthetic_hash_is_unchanged_and_version_1_folders_still_load(tmp_path):
    ds = generate_synthetic(1.0, 1.0, num_devices=4)
    folder = save_dataset(ds, tmp_path / "syn")
    meta = json.loads((folder / "meta.json").read_text())
    v1 = {k: meta[k] for k in ("name", "client_ids", "num_clients", "num_classes", "feature_shape", "train_samples",
                               "test_samples", "source", "content_hash")}
    (folder / "meta.json").write_text(json.dumps({**v1, "format_version": 1}))  # what fedbench wrote before
    old = load_dataset(folder)
    assert old.content_hash == ds.content_hash and old.input == InputSpec() and old.train.x.dtype == np.float32
    (folder / "meta.json").write_text(json.dumps({**v1, "format_version": 0}))
    with pytest.raises(ValueError, match=r"format version 0, expected one of \[1, 2\]; regenerate the dataset"):
        load_dataset(folder)


def test_bad_fields_are_refused():
    with pytest.raises(ValueError, match="input kind 'audio' is not allowed; allowed: features, image, tokens, chars"):
        InputSpec(kind="audio")
    with pytest.raises(ValueError, match="input kind 'chars' needs a vocabulary"):
        InputSpec(kind="chars")
    ds = tokens_dataset()
    with pytest.raises(ValueError, match="hierarchy 'play' has 1 values for 2 clients"):
        FederatedDataset(**{**ds.__dict__, "hierarchy": {"play": ("A",)}})
    with pytest.raises(ValueError, match="label kind 'regression' is not allowed"):
        FederatedDataset(**{**ds.__dict__, "label_kind": "regression"})

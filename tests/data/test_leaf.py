"""fedbench.data.leaf on tiny files written in LEAF's exact JSON layout (paper-setups.md 6.3)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedbench.data.format import load_dataset, save_dataset
from fedbench.data.leaf import leaf_to_federated, read_leaf_json


def write_leaf(path: Path, user_data: dict, hierarchies: list | None = None, num_samples: list | None = None):
    """Write a LEAF JSON file the way LEAF's split_data.py does (users, num_samples, user_data)."""
    doc = {
        "users": list(user_data),
        "num_samples": num_samples if num_samples is not None else [len(d["y"]) for d in user_data.values()],
        "user_data": user_data,
    }
    if hierarchies is not None:
        doc["hierarchies"] = hierarchies
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


# FedProx-synthetic style: labels stored as floats, 4 features per sample (the real files have 60).
TRAIN = {
    "f_00001": {"x": [[0.5, 1.0, 1.5, 2.0], [0.25, 0.0, -1.0, 3.0]], "y": [3.0, 0.0]},
    "f_00000": {"x": [[1.0, 2.0, 3.0, 4.0]], "y": [9.0]},
    "f_00002": {"x": [[7.0, 7.0, 7.0, 7.0]], "y": [1.0]},
}
TEST = {  # different order from train, and f_00002 has no test data
    "f_00000": {"x": [[-1.0, -2.0, -3.0, -4.0]], "y": [2.0]},
    "f_00001": {"x": [[0.0, 0.0, 0.0, 0.125]], "y": [5.0]},
}


@pytest.fixture
def leaf_split(tmp_path):
    return write_leaf(tmp_path / "train" / "mytrain.json", TRAIN), write_leaf(tmp_path / "test" / "mytest.json", TEST)


def test_read_single_file_counts(leaf_split):
    doc = read_leaf_json(leaf_split[0])
    assert doc["users"] == ["f_00001", "f_00000", "f_00002"]
    assert doc["num_samples"] == [2, 1, 1]
    assert doc["user_data"]["f_00001"]["y"] == [3.0, 0.0]
    assert "hierarchies" not in doc


def test_multi_file_merge_keeps_order_and_hierarchies(tmp_path):
    a = write_leaf(tmp_path / "train" / "all_data_0_niid_0_keep_0_train_9.json",
                   {"u2": {"x": [[1.0]], "y": [0]}, "u1": {"x": [[2.0], [3.0]], "y": [1, 1]}}, ["play_b", "play_a"])
    b = write_leaf(tmp_path / "train" / "all_data_1_niid_0_keep_0_train_9.json",
                   {"u0": {"x": [[4.0]], "y": [0]}}, ["play_c"])
    for given in ([a, b], tmp_path / "train", str(tmp_path / "train")):
        doc = read_leaf_json(given)
        assert doc["users"] == ["u2", "u1", "u0"]
        assert doc["num_samples"] == [1, 2, 1]
        assert doc["hierarchies"] == ["play_b", "play_a", "play_c"]
        assert doc["user_data"]["u0"] == {"x": [[4.0]], "y": [0]}
    assert read_leaf_json([b, a])["users"] == ["u0", "u2", "u1"]


def test_mismatched_num_samples_names_user_and_file(tmp_path):
    bad = write_leaf(tmp_path / "bad.json", {"ok": {"x": [[1.0]], "y": [0]}, "liar": {"x": [[1.0]], "y": [0]}},
                     num_samples=[1, 2])
    with pytest.raises(ValueError, match=r"bad\.json: user 'liar' has num_samples 2 but len\(x\) = 1 and len\(y\) = 1"):
        read_leaf_json(bad)


def test_x_y_length_mismatch_and_schema_errors(tmp_path):
    with pytest.raises(ValueError, match=r"user 'u' has num_samples 2 but len\(x\) = 2 and len\(y\) = 1"):
        read_leaf_json(write_leaf(tmp_path / "a.json", {"u": {"x": [[1.0], [2.0]], "y": [0]}}, num_samples=[2]))
    (tmp_path / "b.json").write_text(json.dumps({"users": [], "user_data": {}}))
    with pytest.raises(ValueError, match=r"b\.json: missing key\(s\) \['num_samples'\]"):
        read_leaf_json(tmp_path / "b.json")
    write_leaf(tmp_path / "c.json", {"u": {"x": [[1.0]], "y": [0]}})
    with pytest.raises(ValueError, match=r"user 'u' appears in both .*c\.json and .*d\.json"):
        read_leaf_json([tmp_path / "c.json", write_leaf(tmp_path / "d.json", {"u": {"x": [[2.0]], "y": [1]}})])
    with pytest.raises(FileNotFoundError, match="no such LEAF JSON file or folder"):
        read_leaf_json(tmp_path / "missing.json")


def test_leaf_to_federated_converts_float_labels_and_keeps_train_order(leaf_split):
    ds = leaf_to_federated(*leaf_split, name="synthetic_tiny", num_classes=10, feature_shape=(2, 2),
                           source={"upstream": "unit test"})
    assert ds.client_ids == ("f_00001", "f_00000", "f_00002")
    assert ds.train.sizes.tolist() == [2, 1, 1]
    assert ds.test.sizes.tolist() == [1, 1, 0]
    assert ds.train.y.dtype == np.int64 and ds.train.y.tolist() == [3, 0, 9, 1]
    assert ds.test.y.tolist() == [5, 2]
    assert ds.train.x.dtype == np.float32 and ds.train.x.shape == (4, 2, 2)
    np.testing.assert_array_equal(ds.train.x[1], [[0.25, 0.0], [-1.0, 3.0]])
    np.testing.assert_array_equal(ds.test.client(1)[0], [[[-1.0, -2.0], [-3.0, -4.0]]])
    assert ds.test.client(2)[0].shape == (0, 2, 2)
    assert ds.source == {"upstream": "unit test"}


def test_leaf_to_federated_accepts_dicts(leaf_split):
    from_dicts = leaf_to_federated(read_leaf_json(leaf_split[0]), read_leaf_json(leaf_split[1]),
                                   "t", 10, (4,), {})
    from_paths = leaf_to_federated(leaf_split[0].parent, leaf_split[1].parent, "t", 10, (4,), {})
    assert from_dicts.content_hash == from_paths.content_hash


@pytest.mark.parametrize(("y", "message"), [
    ([3.5], r"train user 'u': label 3\.5 is not an integer"),
    ([10], r"train user 'u': label 10 is outside 0\.\.9"),
    ([-1.0], r"train user 'u': label -1 is outside 0\.\.9"),
    (["4"], r"train user 'u': y must be a flat list of class numbers"),
])
def test_bad_labels(tmp_path, y, message):
    train = write_leaf(tmp_path / "train.json", {"u": {"x": [[1.0, 2.0]], "y": y}})
    test = write_leaf(tmp_path / "test.json", {})
    with pytest.raises(ValueError, match=message):
        leaf_to_federated(train, test, "t", 10, (2,), {})


def test_bad_features_and_test_only_users(tmp_path):
    train = write_leaf(tmp_path / "train.json", {"u": {"x": [[1.0, 2.0, 3.0]], "y": [0]}})
    test = write_leaf(tmp_path / "test.json", {"v": {"x": [[1.0, 2.0]], "y": [0]}})
    with pytest.raises(ValueError, match=r"train user 'u': x holds 3 values for 1 samples, expected 2 per sample"):
        leaf_to_federated(train, tmp_path / "train.json", "t", 10, (2,), {})
    with pytest.raises(ValueError, match=r"1 test user\(s\) have no training data, e.g. \['v'\].*test_only=True"):
        leaf_to_federated(train, test, "t", 10, (3,), {})
    test3 = write_leaf(tmp_path / "test3.json", {"v": {"x": [[1.0, 2.0, 3.0]], "y": [4]}})
    both = leaf_to_federated(train, test3, "t", 10, (3,), {}, test_only=True)
    assert both.client_ids == ("u", "v") and both.test_only.tolist() == [False, True]
    text = write_leaf(tmp_path / "text.json", {"PLAY_ROMEO": {"x": ["to be or not to b"], "y": ["e"]}})
    with pytest.raises(ValueError, match="x is not a list of equal-length numeric vectors"):
        leaf_to_federated(text, write_leaf(tmp_path / "empty.json", {}), "t", 80, (1,), {})


def test_roundtrip_through_save_and_load(leaf_split, tmp_path):
    ds = leaf_to_federated(*leaf_split, name="synthetic_tiny", num_classes=10, feature_shape=(4,),
                           source={"url": "file://mytrain.json", "md5": None})
    loaded = load_dataset(save_dataset(ds, tmp_path / "out" / "synthetic_tiny"))
    assert loaded.client_ids == ds.client_ids
    assert loaded.content_hash == ds.content_hash
    assert loaded.source == {"url": "file://mytrain.json", "md5": None}
    for a, b in ((loaded.train, ds.train), (loaded.test, ds.test)):
        np.testing.assert_array_equal(a.x, b.x)
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.offsets, b.offsets)


def test_leaf_json_round_trip_of_our_datasets(tmp_path):
    from fedbench.data.datasets.shakespeare import VOCABULARIES
    from fedbench.data.format import FederatedDataset, InputSpec, Split
    from fedbench.data.leaf import write_leaf_json
    from fedbench.data.transforms import model_inputs

    # pixels with LEAF's x / 255 transform, and a test-only client
    x = np.arange(3 * 6, dtype=np.uint8).reshape(3, 6) * 10
    y = np.array([1, 2, 3])
    pixels = FederatedDataset("pix", ("w1", "w2"), Split(x[:2], y[:2], np.array([0, 2, 2])),
                              Split(x[2:], y[2:], np.array([0, 0, 1])), 4,
                              input=InputSpec(transform="scale", transform_params={"divisor": 255.0}),
                              hierarchy={"hsf": ("hsf_0", "hsf_1")})
    train, test = write_leaf_json(pixels, tmp_path / "pix")
    assert read_leaf_json(test)["users"] == ["w2"] and read_leaf_json(train)["hierarchies"] == ["hsf_0"]
    back = leaf_to_federated(train, test, "pix", 4, (6,), {}, test_only=True, hierarchy_name="hsf")
    assert back.client_ids == ("w1", "w2") and back.test_only.tolist() == [False, True]
    np.testing.assert_array_equal(back.train.x, model_inputs(pixels, "train"))
    np.testing.assert_array_equal(back.test.y, pixels.test.y)
    assert back.hierarchy == pixels.hierarchy
    # Shakespeare windows: ids -> strings -> ids
    vocab = VOCABULARIES["fedprox80"]
    ids = np.array([[vocab.symbols.index(c) for c in "to be or"], [vocab.symbols.index(c) for c in "not to b"]],
                   np.uint8)
    chars = FederatedDataset("chars", ("PLAY_ROMEO",), Split(ids[:1], np.array([1]), np.array([0, 1])),
                             Split(ids[1:], np.array([vocab.symbols.index("e")]), np.array([0, 1])), 80,
                             input=InputSpec(kind="chars", transform="ids", vocabulary=vocab))
    train, test = write_leaf_json(chars, tmp_path / "chars")
    assert read_leaf_json(train)["user_data"]["PLAY_ROMEO"] == {"x": ["to be or"], "y": [" "]}
    back = leaf_to_federated(train, test, "chars", 80, (8,), {}, vocabulary=vocab)
    assert back.content_hash == chars.content_hash


def test_leaf_json_writes_leafs_pixel_floats_and_fedbench_data_export_writes_it(tmp_path, capsys):
    from fedbench.data.cli import main as data_main
    from fedbench.data.format import FederatedDataset, InputSpec, Split, save_dataset
    from fedbench.data.registry import dataset_folder

    # LEAF's femnist data_to_json: numpy uint8 / 255 in float64, tolist() -> Python floats
    x = np.array([[159, 0, 255, 1]], np.uint8)
    ds = FederatedDataset("femnist_leaf", ("f0",), Split(x, np.array([3]), np.array([0, 1])),
                          Split(x[:0], np.array([], np.int64), np.array([0, 0])), 62,
                          input=InputSpec(transform="scale", transform_params={"divisor": 255.0}))
    save_dataset(ds, dataset_folder("femnist_leaf", tmp_path))
    out = tmp_path / "leaf"
    assert data_main(["--root", str(tmp_path), "export", "femnist_leaf", "--leaf-json", str(out)]) == 0
    assert f"LEAF JSON written to {out / 'train' / 'femnist_leaf_train.json'}" in capsys.readouterr().out
    text = (out / "train" / "femnist_leaf_train.json").read_text()
    assert '"x": [[0.6235294117647059, 0.0, 1.0, 0.00392156862745098]]' in text  # not 0.6235294342041016
    assert json.loads(text)["user_data"]["f0"]["x"][0] == (x[0] / 255).tolist() == [159 / 255, 0.0, 1.0, 1 / 255]
    assert data_main(["--root", str(tmp_path), "export", "nosuch", "--leaf-json", str(out)]) == 2
    assert "'nosuch' is not a dataset; known: " in capsys.readouterr().err

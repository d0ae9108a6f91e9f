"""Stored arrays -> model inputs, as the authors computed them."""

import numpy as np
import pytest

from fedbench.data.format import FederatedDataset, InputSpec, Split, Vocabulary
from fedbench.data.transforms import apply_transform, model_inputs


def test_fedprox_standardization_is_the_authors_float32_formula():
    x = np.array([[0, 255], [128, 255]], np.uint8)
    mean, std = np.mean(x.astype(np.float32), 0), np.std(x.astype(np.float32), 0)
    spec = InputSpec(transform="standardize", transform_params={"eps": 0.001})
    got = apply_transform(spec, {"mean": mean, "std": std}, x)
    expected = (x.astype(np.float32) - mean) / (std + np.float32(0.001))
    assert got.dtype == np.float32 and np.array_equal(got, expected)
    assert got[0, 1] == 0.0  # a constant pixel: (x - mean) / 0.001 = 0


def test_scale_gives_leaf_femnist_floats_exactly():
    x = np.arange(256, dtype=np.uint8)[None]
    got = apply_transform(InputSpec(transform="scale", transform_params={"divisor": 255.0}), {}, x)
    assert np.array_equal(got, (np.arange(256) / 255).astype(np.float32)[None])  # LEAF: float64 / 255 in JSON


def test_normalize_is_totensor_then_normalize():
    x = np.array([[[[0, 255]], [[51, 102]], [[204, 153]]]], np.uint8)  # [1, 3, 1, 2]
    spec = InputSpec(kind="image", transform="normalize", transform_params={"mean": [0.5] * 3, "std": [0.5] * 3})
    got = apply_transform(spec, {}, x)
    assert got.shape == (1, 3, 1, 2) and np.allclose(got[0, 0, 0], [-1.0, 1.0]) and np.allclose(got[0, 1, 0], [-0.6, -0.2])


def test_divide_by_mean_uses_the_split_constants_and_ids_become_int64():
    spec = InputSpec(transform="divide_by_mean", transform_params={"divisor": 2.0})
    arrays = {"mean_train": np.array([1.0, 2.0], np.float32), "mean_test": np.array([4.0, 4.0], np.float32)}
    x = np.array([[4, 8]], np.uint8)
    assert apply_transform(spec, arrays, x, "train").tolist() == [[1.0, 1.0]]
    assert apply_transform(spec, arrays, x, "test").tolist() == [[-0.5, 0.0]]
    vocab = Vocabulary("v", 5, "abcde", unknown_id=0)
    ids = apply_transform(InputSpec(kind="chars", transform="ids", vocabulary=vocab), {}, np.array([[1, 4]], np.uint8))
    assert ids.dtype == np.int64


def test_identity_returns_the_stored_array_and_missing_constants_are_named():
    x = np.ones((2, 3), np.float32)
    split = Split(x, np.zeros(2, np.int64), np.array([0, 2]))
    ds = FederatedDataset("f", ("a",), split, split, 2)
    assert model_inputs(ds, "train") is ds.train.x
    with pytest.raises(ValueError, match=r"input.transform 'standardize' needs \['eps', 'std'\]"):
        apply_transform(InputSpec(transform="standardize"), {"mean": np.zeros(3)}, x)
    with pytest.raises(ValueError, match="has no global test set"):
        model_inputs(ds, "global_test")

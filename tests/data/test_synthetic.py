"""Synthetic(alpha, beta) and Synthetic-IID against the spec (shared/reference/paper-setups.md, 1.2), plus
the on-disk roundtrip of a generated dataset."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedbench.data.format import load_dataset, read_meta, save_dataset
from fedbench.data.synthetic import (
    SYNTHETIC_DATASETS,
    covariance_diagonal,
    generate_synthetic,
    synthetic_name,
)


@pytest.fixture(scope="module")
def syn11():
    return generate_synthetic(1, 1, seed=0)


@pytest.fixture(scope="module")
def syn_iid():
    return generate_synthetic(0, 0, iid=True, seed=0)


def _sizes(ds):
    return ds.train.sizes + ds.test.sizes


def _device(ds, k):
    """All samples (train and test) of device k."""
    (xtr, ytr), (xte, yte) = ds.train.client(k), ds.test.client(k)
    return np.concatenate([xtr, xte]).astype(np.float64), np.concatenate([ytr, yte])


def test_shapes_and_labels(syn11, syn_iid):
    for ds in (syn11, syn_iid):
        assert ds.num_clients == 30
        assert ds.client_ids == tuple(f"f_{k:05d}" for k in range(30))
        assert ds.feature_shape == (60,) and ds.num_classes == 10
        assert ds.train.x.dtype == np.float32 and ds.train.y.dtype == np.int64
        for split in (ds.train, ds.test):
            assert split.y.min() >= 0 and split.y.max() <= 9
        assert len(np.unique(ds.train.y)) == 10
    assert syn11.name == "synthetic_1_1" and syn_iid.name == "synthetic_iid"


def test_names():
    assert synthetic_name(0, 0, False) == "synthetic_0_0"
    assert synthetic_name(0.5, 0.5, False) == "synthetic_0p5_0p5"
    assert synthetic_name(1, 1, True) == "synthetic_iid"
    assert len(SYNTHETIC_DATASETS) == 4
    for name, (alpha, beta, iid) in SYNTHETIC_DATASETS.items():
        assert synthetic_name(alpha, beta, iid) == name


def test_train_split_is_int_of_ninety_percent(syn11, syn_iid):
    for ds in (syn11, syn_iid):
        n = _sizes(ds)
        assert n.min() >= 50
        np.testing.assert_array_equal(ds.train.sizes, [int(0.9 * v) for v in n])
        assert ds.test.sizes.min() >= 5  # as in the authors' committed test files


def test_train_fraction_parameter():
    ds = generate_synthetic(1, 1, num_devices=5, seed=2, train_fraction=0.8)
    np.testing.assert_array_equal(ds.train.sizes, [int(0.8 * v) for v in _sizes(ds)])


def test_sample_counts_follow_int_lognormal_4_2_plus_50():
    # log(n_k - 50 + 0.5) ~ N(4, 2) up to the int() truncation. 800 devices: sd of the mean is 2/sqrt(800)
    # = 0.07, sd of the sd about 0.05.
    ds = generate_synthetic(0, 0, num_devices=800, seed=1)
    extra = _sizes(ds) - 50
    assert extra.min() >= 0
    logs = np.log(extra + 0.5)
    assert logs.mean() == pytest.approx(4.0, abs=0.25)
    assert logs.std() == pytest.approx(2.0, abs=0.2)
    assert np.median(extra) == pytest.approx(np.exp(4.0), rel=0.25)
    # fraction below the lognormal's median-minus-one-sd point e^2: P(Z < -1) = 0.159
    assert np.mean(extra < np.exp(2.0)) == pytest.approx(0.159, abs=0.04)


def test_feature_covariance_within_a_device_is_diag_j_pow_minus_1_2(syn11, syn_iid):
    sigma = covariance_diagonal()
    np.testing.assert_allclose(sigma, np.arange(1, 61) ** -1.2)
    for ds in (syn_iid, syn11):
        k = int(np.argmax(_sizes(ds)))
        x, _ = _device(ds, k)
        n = len(x)
        assert n > 1000  # premise: a big device (seed 0)
        var = x.var(axis=0, ddof=1)
        # relative sd of a sample variance is sqrt(2 / (n - 1)); allow 4.5 of them for the max over 60
        np.testing.assert_allclose(var / sigma, 1.0, atol=4.5 * np.sqrt(2 / (n - 1)))
        corr = np.corrcoef(x, rowvar=False)
        off_diagonal = corr[~np.eye(60, dtype=bool)]
        assert np.abs(off_diagonal).max() < 5.5 / np.sqrt(n)


def _standardized_device_means(ds):
    """z[k, j] = mean_j of device k / (sqrt(Sigma_jj / n_k)): N(0, 1) each when x ~ N(0, Sigma)."""
    sd = np.sqrt(covariance_diagonal())
    return np.array([x.mean(0) / (sd / np.sqrt(len(x))) for x, _ in (_device(ds, k) for k in range(30))])


def test_iid_inputs_are_centred_and_non_iid_are_not(syn11, syn_iid):
    z = _standardized_device_means(syn_iid)  # 30 x 60 values
    assert abs(z.mean()) < 0.1  # sd of the mean of 1800 standard normals: 0.024
    assert z.std() == pytest.approx(1.0, abs=0.06)  # sd of the sd: 0.017
    assert np.mean(np.abs(z) > 3) < 0.01  # 0.0027 expected
    # Synthetic(1,1): v_k ~ N(B_k, 1) per coordinate, so device means sit far from 0 in units of their sd.
    z = _standardized_device_means(syn11)
    assert np.median(np.abs(z)) > 5


def _label_distance_to_pooled(ds, min_samples=400):
    """Total-variation distance between each big device's label histogram and the pooled one."""
    pooled = np.bincount(np.concatenate([ds.train.y, ds.test.y]), minlength=10) / (len(ds.train.y) + len(ds.test.y))
    out = []
    for k in range(ds.num_clients):
        _, y = _device(ds, k)
        if len(y) >= min_samples:
            out.append(0.5 * np.abs(np.bincount(y, minlength=10) / len(y) - pooled).sum())
    return np.array(out)


def test_iid_devices_share_the_label_function(syn_iid):
    # One (W, b) and one input law for all devices: every device's label mix is the pooled one up to
    # sampling noise (TV ~ 0.05 for 400 samples), unlike Synthetic(0,0) where each device has its own W_k.
    iid = _label_distance_to_pooled(syn_iid)
    non_iid = _label_distance_to_pooled(generate_synthetic(0, 0, seed=0))
    assert len(iid) >= 5 and len(non_iid) >= 5
    assert iid.max() < 0.15
    assert np.median(non_iid) > 0.3


def test_same_seed_same_content_different_seed_different():
    a = generate_synthetic(0.5, 0.5, num_devices=6, seed=4)
    b = generate_synthetic(0.5, 0.5, num_devices=6, seed=4)
    c = generate_synthetic(0.5, 0.5, num_devices=6, seed=5)
    assert a.content_hash == b.content_hash
    np.testing.assert_array_equal(a.train.x, b.train.x)
    assert a.content_hash != c.content_hash
    assert generate_synthetic(0.5, 0.5, iid=True, num_devices=6, seed=4).content_hash != a.content_hash
    assert a.source["params"]["seed"] == 4 and a.source["params"]["alpha"] == 0.5


def test_negative_alpha_or_beta_raises():
    with pytest.raises(ValueError):
        generate_synthetic(-1, 0)
    with pytest.raises(ValueError):
        generate_synthetic(0, -0.5)


# ---- on disk ---------------------------------------------------------------------------------------------

@pytest.fixture
def small():
    return generate_synthetic(1, 1, num_devices=4, seed=3, lognormal_sigma=0.5)


def test_save_load_roundtrip(small, tmp_path):
    folder = save_dataset(small, tmp_path / "syn")
    assert sorted(p.name for p in folder.iterdir()) == ["arrays.npz", "meta.json"]
    loaded = load_dataset(folder)
    assert loaded.content_hash == small.content_hash
    assert loaded.name == small.name and loaded.client_ids == small.client_ids
    assert loaded.num_classes == 10 and loaded.source == json.loads(json.dumps(small.source))
    for split in ("train", "test"):
        for field in ("x", "y", "offsets"):
            a, b = getattr(getattr(small, split), field), getattr(getattr(loaded, split), field)
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    meta = read_meta(folder)
    assert meta["content_hash"] == small.content_hash
    assert meta["train_samples"] == int(small.train.sizes.sum())
    # no temporary folders left next to it
    assert [p.name for p in tmp_path.iterdir()] == ["syn"]


def test_save_replaces_existing_folder(small, tmp_path):
    other = generate_synthetic(0, 0, num_devices=3, seed=9, lognormal_sigma=0.5)
    save_dataset(other, tmp_path / "syn")
    save_dataset(small, tmp_path / "syn")
    assert load_dataset(tmp_path / "syn").content_hash == small.content_hash


def test_corrupted_arrays_are_detected(small, tmp_path):
    folder = save_dataset(small, tmp_path / "syn")
    with np.load(folder / "arrays.npz") as z:
        arrays = {k: z[k].copy() for k in z.files}
    arrays["train_x"][3, 7] += 1.0
    np.savez(folder / "arrays.npz", **arrays)
    with pytest.raises(ValueError, match="content hash mismatch"):
        load_dataset(folder)
    assert load_dataset(folder, verify=False).train.x[3, 7] == arrays["train_x"][3, 7]


def test_folder_without_meta_raises(small, tmp_path):
    folder = save_dataset(small, tmp_path / "syn")
    (folder / "meta.json").unlink()
    with pytest.raises(FileNotFoundError, match="meta.json"):
        load_dataset(folder)
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "never_written")


def test_wrong_format_version_raises(small, tmp_path):
    folder = save_dataset(small, tmp_path / "syn")
    meta = json.loads((folder / "meta.json").read_text())
    meta["format_version"] = 99
    (folder / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="format version"):
        load_dataset(folder)

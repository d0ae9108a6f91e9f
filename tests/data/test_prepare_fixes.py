"""Data preparation as a new user meets it (issue 23 item 9): unverifiable raw files are never recorded as
verified, a variant's missing second source is named with its fetch command, a step that leaves no client names
the threshold, a by-user split with too few users fails, and an offline fetch leaves nothing behind."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedbench.data import download, stages
from fedbench.data.cli import main as data_main
from fedbench.data.leafsteps import LeafCommand, LeafFile, run_leaf
from fedbench.data.partition import PartitionError
from fedbench.data.sources import raw_folder
from tests.data import fixtures

NO_CHECKSUM = "no checksum to verify against (no published checksum, none recorded)"


def put(folder, files: dict[str, bytes]):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_sd19_from_raw_without_no_verify_is_not_recorded_as_verified(tmp_path, capsys):
    files, _ = fixtures.sd19()
    mine = put(tmp_path / "sd19", files)
    out = stages.prepare_source("femnist", tmp_path / "data", raw=mine)  # verify=True, nothing to verify against
    provenance = json.loads((out / "meta.json").read_text())["provenance"]["sources"][0]
    assert provenance["verified"] is False
    assert [f["checksum"] for f in provenance["files"]] == [NO_CHECKSUM, NO_CHECKSUM]
    assert not stages.Prepared(tmp_path / "data")("femnist").verified
    assert "(UNVERIFIED: no published or recorded checksum to check the raw files against)" in capsys.readouterr().out


def test_sent140_variant_whose_raw_folder_lacks_glove_names_the_source_and_its_fetch(tmp_path, capsys):
    sent140, _ = fixtures.sent140()
    mine = put(tmp_path / "mine", sent140)
    root = tmp_path / "data"
    args = ["--root", str(root), "prepare", "sent140_fedprox", "--raw", str(mine), "--no-verify"]
    assert data_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"fedbench data prepare: source 'glove' (glove.6B.zip) is not in {mine}, {mine / 'glove'} or "
                   f"{root / 'raw' / 'glove'}; run `fedbench data fetch glove`, or put its files in {mine / 'glove'}")
    put(raw_folder("glove", root), fixtures.glove())  # fetched: the variant takes GloVe from data/raw/glove
    stages.prepare_dataset("sent140_fedprox", root, raw=mine, verify=False, variant_params={"fraction": 1.0})
    assert (root / "real" / "sent140_fedprox" / "meta.json").exists()


def leaf_files(counts: list[int]) -> list[LeafFile]:
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [LeafFile("all_data.json", [f"u{i}" for i in range(len(counts))],
                     [np.arange(starts[i], starts[i + 1]) for i in range(len(counts))])]


def command(**changes) -> LeafCommand:
    base = {"sample": None, "fraction": 1.0, "min_samples": 50, "strict": True, "split": "user",
            "train_fraction": 0.5, "sampling_seed": 0, "split_seed": 1}
    return LeafCommand(**{**base, **changes})


def test_no_client_left_names_the_threshold_that_removed_them():
    where = "data.variants.sent140_deltafl"
    with pytest.raises(PartitionError) as e:
        run_leaf(leaf_files([3, 50, 7]), command(), where)
    assert str(e.value) == ("no client is left: data.variants.sent140_deltafl.min_samples = 50 (LEAF's -k: keep "
                            "users with more than 50 samples, strict) removed all 3 users (the largest has 50 "
                            "samples); lower it")
    with pytest.raises(PartitionError, match=r"min_samples = 60 \(LEAF's -k: keep users with at least 60 samples\)"):
        run_leaf(leaf_files([3, 50]), command(min_samples=60, strict=False), where)
    with pytest.raises(PartitionError, match=r"by-sample split \(data.variants.x.split = 'sample'\) drops users "
                                             r"with fewer than 2 samples: all 2 users \(the largest has 1"):
        run_leaf(leaf_files([1, 1]), command(min_samples=None, split="sample"), "data.variants.x")
    train, test = run_leaf(leaf_files([3, 51, 70]), command(), where)  # two users left: one trains, one tests
    assert [u.user for u in train] == ["u1"] and [u.user for u in test] == ["u2"]  # random.Random(1).sample -> [0]


def test_by_user_split_that_leaves_one_user_is_an_error_not_zero_training_samples():
    with pytest.raises(PartitionError) as e:
        run_leaf(leaf_files([3, 51]), command(), "data.variants.sent140_deltafl")
    assert str(e.value) == ("no training client is left: the by-user split (data.variants.sent140_deltafl.split = "
                            "'user', train_fraction = 0.5) of 1 user(s) puts int(0.5 * 1) = 0 in training, so no "
                            "sample would be trained on; it needs at least 2 users: lower "
                            "data.variants.sent140_deltafl.min_samples or raise data.variants.sent140_deltafl.fraction")


def test_offline_fetch_of_cifar10_leaves_no_checksums_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FEDBENCH_MIRROR", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(download, "RETRY_DELAY_S", 0.0)
    assert data_main(["--root", str(tmp_path), "fetch", "cifar10", "--quiet"]) == 1
    assert "could not fetch cifar-10-python.tar.gz of 'cifar10'" in capsys.readouterr().err
    assert list(raw_folder("cifar10", tmp_path).iterdir()) == []


def test_fetch_raw_of_a_source_without_published_checksum_records_it(tmp_path):
    mine = put(tmp_path / "mine", fixtures.glove())
    folder = stages.fetch("glove", tmp_path / "data", progress=False, local=mine)
    record = json.loads((folder / "checksums.json").read_text())["glove.6B.zip"]
    assert record["checksum"] == "recorded from this copy (no published checksum)"
    assert record["copy"] == f"folder given with --raw: {mine.resolve()}"
    assert (folder / "glove.6B.zip").read_bytes() == fixtures.glove()["glove.6B.zip"]

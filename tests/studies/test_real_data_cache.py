"""fedbench.studies.real_data's loaders keep one copy a process per built variant's content: runs sharing a variant
share it, and a variant rebuilt in place (another partition seed) is loaded anew, not served stale."""

from __future__ import annotations

import pytest

from fedbench.data.format import save_dataset
from fedbench.data.synthetic import generate_synthetic
from fedbench.studies.real_data import load_real, pooled, repartitioned


def test_a_variant_rebuilt_in_place_is_loaded_anew_and_an_unchanged_one_is_shared(tmp_path):
    first = generate_synthetic(1.0, 1.0, num_devices=4, seed=0)
    save_dataset(first, tmp_path / "variant")
    a = load_real("variant", tmp_path)
    assert a.content_hash == first.content_hash and load_real("variant", str(tmp_path)) is a
    assert repartitioned("variant", str(tmp_path), 4, 4) is a
    assert pooled("variant", str(tmp_path), 4).num_clients == 1
    second = generate_synthetic(1.0, 1.0, num_devices=4, seed=1)
    assert second.content_hash != first.content_hash
    save_dataset(second, tmp_path / "variant")
    b = load_real("variant", tmp_path)
    assert b.content_hash == second.content_hash
    assert repartitioned("variant", str(tmp_path), 4, 4) is b
    assert pooled("variant", str(tmp_path), 4).train.x.shape[0] == second.train.x.shape[0]


def test_a_missing_variant_is_one_line_saying_how_to_build_it(tmp_path):
    with pytest.raises(Exception) as err:
        load_real("femnist_leaf", tmp_path)
    assert str(tmp_path / "femnist_leaf") in str(err.value) and len(str(err.value).splitlines()) == 1

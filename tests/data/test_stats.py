"""`fedbench data show` and reports/data/: statistics, the label-by-client figure and the index."""

import json

import numpy as np
import pytest

from fedbench.data.cli import main as data_main
from fedbench.data.format import FederatedDataset, Split, save_dataset
from fedbench.data.stats import dataset_stats, write_reports


def toy(name="toy", verified=True) -> FederatedDataset:
    ys = [np.array([0, 0, 1]), np.array([2, 2, 2, 2, 3]), np.array([1])]
    xs = [np.zeros((len(y), 2), np.float32) for y in ys]
    train = Split.from_clients(xs[:2] + [xs[2][:0]], ys[:2] + [ys[2][:0]], (2,))
    test = Split.from_clients([xs[0][:1], xs[1][:0], xs[2]], [ys[0][:1], ys[1][:0], ys[2]], (2,))
    return FederatedDataset(name, ("a", "b", "c"), train, test, 4, source={"verified": verified})


def test_statistics_count_train_and_test_and_test_only_clients():
    s = dataset_stats(toy())
    assert (s["clients"], s["train_clients"], s["test_only_clients"]) == (3, 2, 1)
    assert s["samples_per_client"] == {"min": 1.0, "median": 4.0, "max": 5.0, "mean": 3.33, "sd": 1.7}
    assert s["classes_per_client"]["max"] == 2 and s["samples"] == 10


def test_show_writes_json_figure_and_index(tmp_path, capsys):
    save_dataset(toy(verified=False), tmp_path / "data" / "generated" / "toy")
    out = tmp_path / "reports"
    assert data_main(["--root", str(tmp_path / "data"), "show", "toy", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "samples per client min 1, median 4, max 5" in printed and "UNVERIFIED" in printed
    assert json.loads((out / "toy.json").read_text())["verified"] is False
    assert (out / "toy.png").stat().st_size > 1000
    assert "| `toy` | 3 (1) | 10 (8 / 2 / 0) |" in (out / "README.md").read_text()
    write_reports([toy("one"), toy("two")], out)  # the stage replaces the folder as a whole
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "one.json", "one.png", "two.json", "two.png"]


def _files(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_show_into_a_folder_of_its_own_reindexes_every_dataset_there(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("one", "two"):
        save_dataset(toy(name), tmp_path / "data" / "generated" / name)
        assert data_main(["show", name, "--out", "stats"]) == 0  # the second run accepts what the first wrote
    index = (tmp_path / "stats" / "README.md").read_text()
    assert "| `one` |" in index and "| `two` |" in index


def test_show_keeps_the_index_s_list_of_variants_not_built_but_the_one_it_shows(tmp_path, monkeypatch):
    """The data_report stage's index lists the variants whose sources are unavailable; `data show` re-indexing one
    dataset dropped that list. It keeps it now, less the dataset it has just shown (which is built)."""
    from fedbench.data.stats import write_reports

    monkeypatch.chdir(tmp_path)
    write_reports([toy("one")], tmp_path / "stats", {"two": "no source: install it", "three": "offline"})
    save_dataset(toy("two"), tmp_path / "data" / "generated" / "two")
    assert data_main(["show", "two", "--out", "stats"]) == 0
    index = (tmp_path / "stats" / "README.md").read_text()
    assert "| `one` |" in index and "| `two` |" in index
    assert index.endswith("Not built on this machine (their sources are unavailable):\n\n- `three`: offline\n")


@pytest.mark.parametrize("out, message", [
    ("", "--out '': empty; expected a folder for toy.json, toy.png and README.md, e.g. reports/data"),
    ("README.md", ("--out README.md: not a folder; expected a folder for toy.json, toy.png and README.md, e.g. "
                   "reports/data")),
    ("README.md/stats", ("--out README.md/stats: not a folder (README.md is a file); expected a folder for toy.json, "
                         "toy.png and README.md, e.g. reports/data")),
    (".", ("README.md: not the index of `fedbench data show`, which rewrites it; give it a folder of its own, e.g. "
           "--out reports/data")),
])
def test_show_refuses_an_out_that_is_no_folder_of_its_own_and_writes_nothing(tmp_path, monkeypatch, capsys, out,
                                                                           message):
    """`--out ''` was the current folder: the checkout's README.md was replaced by the index, exit 0."""
    monkeypatch.chdir(tmp_path)
    save_dataset(toy(), tmp_path / "data" / "generated" / "toy")
    (tmp_path / "README.md").write_text("# my project\n")
    before = _files(tmp_path)
    assert data_main(["show", "toy", "--out", out]) == 2
    assert capsys.readouterr().err == f"fedbench data show: {message}\n"
    assert _files(tmp_path) == before


@pytest.mark.parametrize("text", ['{"verdicts": []}\n', "[1, 2]\n", "not json\n",
                                  json.dumps({**dataset_stats(toy()), "name": "other"})])
def test_show_refuses_a_folder_with_other_json_files_naming_one_and_writes_nothing(tmp_path, monkeypatch, capsys,
                                                                                  text):
    """`--out reports` read reports/claims.json as statistics: exit 1 with `fedbench data show: name` (a KeyError),
    reports/toy.json and toy.png left behind."""
    monkeypatch.chdir(tmp_path)
    save_dataset(toy(), tmp_path / "data" / "generated" / "toy")
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "claims.json").write_text(text)
    before = _files(tmp_path)
    assert data_main(["show", "toy", "--out", "reports"]) == 2
    assert capsys.readouterr().err == (
        "fedbench data show: reports/claims.json: not a statistics file of `fedbench data show`, which rewrites "
        "reports/README.md from every *.json in reports; give it a folder of its own, e.g. --out reports/data\n")
    assert _files(tmp_path) == before


def test_show_help_says_what_it_writes_and_rewrites(capsys):
    with pytest.raises(SystemExit):
        data_main(["show", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "folder for OUT/NAME.json (statistics) and OUT/NAME.png (figure); OUT/README.md is rewritten as the index " \
           "of every dataset's statistics in OUT" in out

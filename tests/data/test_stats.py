"""`fedbench data show` and reports/data/: statistics, the label-by-client figure and the index."""

import json

import numpy as np

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

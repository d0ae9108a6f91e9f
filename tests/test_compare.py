"""``fedbench compare``'s figure names its selection in its title (issue 29.6: the title said only "mean over seeds 0,
1, 2"): the datasets, algorithm variants, straggler fractions, rounds and ``--set`` overrides, read back from the
matplotlib Figure."""

from pathlib import Path

import pandas as pd

from fedbench.config import load_config
from fedbench import compare as comparing
from fedbench.compare import Selection, compare, figure, selection_title

ROOT = Path(__file__).resolve().parents[1]


def _history(datasets=("synthetic_1_1",), variants=("fedavg", "fedprox_mu1"), stragglers=(0.0, 0.9),
             seeds=(0, 1, 2), rounds=3) -> pd.DataFrame:
    """Fixture histories: a row per (dataset, variant, stragglers, seed, round), numbers made up."""
    return pd.DataFrame([{"dataset": d, "variant": v, "stragglers": f, "seed": s, "round": r,
                          "train/loss": 1.0 / (r + 1 + s), "test/accuracy": 0.1 * r}
                         for d in datasets for v in variants for f in stragglers for s in seeds
                         for r in range(rounds + 1)])


def test_the_title_names_datasets_algorithms_stragglers_rounds_overrides_and_seeds():
    hist = _history()
    title = selection_title(hist, {"synthetic_1_1": 20}, {"train.lr": 0.05, "train.rounds": 20})
    fig = figure(hist, ["train/loss", "test/accuracy"], title)
    try:
        text = fig.get_suptitle()
    finally:
        fig.clear()
    assert text == ("dataset synthetic_1_1 | algorithms fedavg, fedprox_mu1 | stragglers 0%, 90% | 20 rounds | --set "
                    "train.lr=0.05 train.rounds=20\nmean over seeds 0, 1, 2, band = min..max")


def test_several_datasets_with_their_own_rounds_are_each_named_and_a_long_title_wraps():
    hist = _history(datasets=("synthetic_1_1", "synthetic_iid"), variants=("fedavg",), stragglers=(0.5,), seeds=(0,))
    title = selection_title(hist, {"synthetic_1_1": 20, "synthetic_iid": 40})
    assert title == ("datasets synthetic_1_1, synthetic_iid | algorithm fedavg | stragglers 50% | rounds synthetic_1_1 "
                     "20, synthetic_iid 40\nmean over seeds 0, band = min..max")
    fig = figure(hist, ["train/loss"], title)  # one panel, 4.6 inches: 64 characters a line
    try:
        lines = fig.get_suptitle().splitlines()
    finally:
        fig.clear()
    assert " ".join(lines[:-1]) == title.splitlines()[0] and all(len(line) <= 64 for line in lines)


def test_compare_puts_the_rounds_in_force_and_the_set_overrides_in_the_title(monkeypatch, tmp_path):
    overrides = {"train.rounds": 7}
    cfg = load_config(ROOT / "params.yaml", overrides)
    monkeypatch.setattr(comparing, "load", lambda cfg, keys, results_root, data_root: (_history(), []))
    drawn = {}
    monkeypatch.setattr(comparing, "draw", lambda hist, metrics, path, title: drawn.setdefault("title", title) and path)
    compare(cfg, Selection(), ["train/loss"], tmp_path / "fig.png", overrides=overrides)
    assert drawn["title"].splitlines()[0].endswith("| 7 rounds | --set train.rounds=7")

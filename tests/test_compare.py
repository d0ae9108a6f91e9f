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


def test_compare_judges_by_the_fedprox_headline_s_own_rule():
    from fedbench.studies.fedprox_main_job import GAIN_RULE

    assert comparing.GAIN_RULE == GAIN_RULE and comparing.GAIN_READING == "tail"


def test_against_gives_each_variant_s_paired_gain_its_interval_and_the_rule_s_verdict():
    """Per seed, the mean of the last 5 evaluations of test accuracy minus the baseline's: here 10, 12 and 14 points
    (mean 12, sd 2, t(0.975, 2) = 4.303: half-width 4.968), reproduced; a variant equal to the baseline but for one
    seed's noise is inconclusive."""
    hist = _history(variants=("fedavg", "mine", "same"), stragglers=(0.9,), rounds=6)
    gain = {0: 0.10, 1: 0.12, 2: 0.14}
    noise = {0: 0.01, 1: -0.01, 2: 0.0}
    hist.loc[hist["variant"] == "mine", "test/accuracy"] += hist.loc[hist["variant"] == "mine", "seed"].map(gain)
    hist.loc[hist["variant"] == "same", "test/accuracy"] += hist.loc[hist["variant"] == "same", "seed"].map(noise)
    lines = comparing.effects(hist, "fedavg", {"synthetic_1_1": 6})
    assert lines[0].startswith("synthetic_1_1, 90% stragglers, 6 rounds: test accuracy (mean of last 5 rounds) minus "
                               "fedavg's, per seed; reproduced if the 95% interval lies above 0")
    assert lines[1] == "  mine: +12.0 [+7.03, +17.0] accuracy points on seeds 0, 1, 2: reproduced"
    assert lines[2] == "  same: 0 [-2.48, +2.48] accuracy points on seeds 0, 1, 2: inconclusive"


def test_against_a_variant_not_drawn_is_one_line():
    import pytest

    from fedbench.errors import DataError

    with pytest.raises(DataError, match=r"^--against 'fedprox_mu0': none of its runs is in the selection; allowed: a "
                                        r"variant drawn \(fedavg, fedprox_mu1\)$"):
        comparing.effects(_history(), "fedprox_mu0", {"synthetic_1_1": 3})


def test_each_algorithm_has_the_report_s_colour_and_rounds_are_whole_numbers():
    """Issue 52, item 7: an algorithm's colour differed between the report and `compare`; a few rounds drew 0.5 ticks."""
    from matplotlib.colors import to_hex

    from fedbench.plotting import PALETTE, algorithm_color

    hist = _history(variants=("fedavg", "fedprox_mu1", "scaffold"), stragglers=(0.9,), rounds=3)
    fig = figure(hist, ["train/loss"])
    try:
        ax = fig.axes[0]
        drawn = {line.get_label(): to_hex(line.get_color()) for line in ax.get_legend().get_lines()}
        ticks = [t for t in ax.get_xticks() if 0 <= t <= 3]
    finally:
        fig.clear()
    assert drawn == {"FedAvg": PALETTE["FedAvg"], "FedProx, μ=1": PALETTE["FedProx, μ=1"],
                     "scaffold": algorithm_color("scaffold")}
    assert ticks and all(float(t).is_integer() for t in ticks)

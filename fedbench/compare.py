"""``fedbench compare``: any selection of finished runs drawn in the report's style (line: mean over seeds; band:
min to max over seeds), one panel per metric, to a PNG.

An algorithm is drawn in its one colour (fedbench.plotting.algorithm_color, the report's too), and the rounds are
whole numbers on the axis. With ``against`` (``--against VARIANT``) each other variant is also judged against that
one as the FedProx headline is judged against FedAvg (:func:`effects`): per seed, the test-accuracy difference read
as the mean of the last 5 evaluations, with its 95% interval and the verdict of the headline's rule.

A selection is datasets x algorithm variants x straggler fractions x seeds, each defaulting to every value the
studies of params.yaml list (seeds: train.seeds). The runs read are those the records name with the parameters in
force (params.yaml with ``--set`` overrides: fedbench.study.experiments.find_run, the main job's records and those of
``fedbench run``), so a variation's runs and the main job's are compared by
running the command once under each. A selection that finds no run says which cells it looked for and how to run
them; cells with some runs missing are drawn from the runs there are, and the missing ones are named.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from fedbench.algorithms import did_you_mean
from fedbench.claims.readings import NAMES, read_accuracy
from fedbench.claims.stats import fmt_effect
from fedbench.claims.verdict import Rule
from fedbench.config import Config
from fedbench.errors import ConfigError, DataError
from fedbench.plotting import LABELS, TITLES, algorithm_color, integer_rounds
from fedbench.study.experiments import DATA_ROOT, RunKey, find_run
from fedbench.study.layout import RESULTS_ROOT, adopt

# the FedProx headline's rule (fedbench.studies.fedprox_main_job.GAIN_RULE, held equal by tests/test_compare.py) and
# reading: the gain in test accuracy over the baseline, the mean of the last 5 evaluations, per seed
GAIN_RULE = Rule("greater", 0.0, "accuracy points")
GAIN_READING = "tail"
METRICS = ("train/loss", "test/accuracy", "train/dissimilarity", "test/loss", "train/accuracy", "test/error_p90")
YLABELS = {"train/loss": "training loss", "test/accuracy": "test accuracy", "train/dissimilarity": "gradient dissimilarity",
           "test/loss": "test loss", "train/accuracy": "training accuracy", "test/error_p90": "90th-percentile test error"}


@dataclass(frozen=True)
class Selection:
    """Which runs to draw: each a tuple of values (empty: every value params.yaml's studies list)."""

    datasets: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()
    stragglers: tuple[float, ...] = ()
    seeds: tuple[int, ...] = ()

    def keys(self, cfg: Config) -> list[RunKey]:
        """The runs selected, checked against params.yaml: an unknown name is one line listing the known ones."""
        studies = list(cfg.studies.values())
        known = {
            "--dataset": list(dict.fromkeys(d for s in studies for d in s.datasets)),
            "--algorithm": list(dict.fromkeys(v for s in studies for v in s.algorithms)),
            "--stragglers": list(dict.fromkeys(float(f) for s in studies for f in s.stragglers)),
        }
        chosen = {"--dataset": list(self.datasets), "--algorithm": list(self.variants),
                  "--stragglers": [float(f) for f in self.stragglers]}
        for flag, values in chosen.items():
            pool = known[flag] if flag != "--algorithm" else list(dict.fromkeys(known[flag] + list(cfg.algorithms)))
            unknown = [v for v in values if v not in pool]
            if unknown:
                close = did_you_mean(str(unknown[0]), list(map(str, pool))) if flag != "--stragglers" else ""
                raise ConfigError(f"{flag} {unknown[0]!r} is not in params.yaml's studies{close}; known: "
                                  f"{', '.join(map(str, pool))}")
        if negative := [s for s in self.seeds if s < 0]:
            raise ConfigError(f"--seed {negative[0]}: allowed: seeds >= 0, e.g. {', '.join(map(str, cfg.train.seeds))}")
        seeds = list(self.seeds) or list(cfg.train.seeds)
        return [RunKey(d, v, f, s) for d in chosen["--dataset"] or known["--dataset"]
                for v in chosen["--algorithm"] or known["--algorithm"]
                for f in chosen["--stragglers"] or known["--stragglers"] for s in seeds]


def load(cfg: Config, keys: list[RunKey], results_root: Path = RESULTS_ROOT,
         data_root: Path = DATA_ROOT) -> tuple[pd.DataFrame, list[RunKey]]:
    """The histories of the selected runs that have finished under ``cfg`` (one frame, a row per evaluated round),
    and the selected runs that have not."""
    frames, missing = [], []
    for k in keys:
        summary = find_run(cfg, data_root, results_root, k)
        if summary is None:
            missing.append(k)
            continue
        frames.append(pd.DataFrame(summary["history"]).assign(dataset=k.dataset, variant=k.variant,
                                                              stragglers=k.stragglers, seed=k.seed))
    return (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()), missing


def _curve_label(row: pd.Series, vary: list[str]) -> str:
    parts = []
    if "variant" in vary:
        parts.append(LABELS.get(row["variant"], row["variant"]))
    if "dataset" in vary:
        parts.append(TITLES.get(row["dataset"], row["dataset"]))
    if "stragglers" in vary:
        parts.append(f"{row['stragglers']:.0%} stragglers")
    return ", ".join(parts) or LABELS.get(row["variant"], row["variant"])


def selection_title(hist: pd.DataFrame, rounds: dict[str, int], overrides: dict[str, Any] | None = None) -> str:
    """What a figure of the runs in ``hist`` shows, for its title (issue 29.6: it said only which seeds): the datasets,
    algorithm variants and straggler fractions drawn, by the names the command takes, the rounds the parameters in
    force give each dataset (``rounds``), the ``--set`` overrides those parameters came from, and the seeds."""
    datasets = list(dict.fromkeys(hist["dataset"]))
    per_dataset = sorted({rounds[d] for d in datasets})
    parts = [f"{'dataset' if len(datasets) == 1 else 'datasets'} {', '.join(datasets)}",
             f"{'algorithm' if hist['variant'].nunique() == 1 else 'algorithms'} "
             f"{', '.join(dict.fromkeys(hist['variant']))}",
             f"stragglers {', '.join(f'{100 * f:g}%' for f in sorted(hist['stragglers'].unique()))}",
             f"{per_dataset[0]} rounds" if len(per_dataset) == 1 else
             "rounds " + ", ".join(f"{d} {rounds[d]}" for d in datasets)]
    if overrides:
        parts.append("--set " + " ".join(f"{k}={v}" for k, v in overrides.items()))
    seeds = sorted(hist["seed"].unique())
    return " | ".join(parts) + f"\nmean over seeds {', '.join(map(str, seeds))}, band = min..max"


def figure(hist: pd.DataFrame, metrics: list[str], title: str = ""):
    """The matplotlib Figure: one panel per metric; a curve per (dataset, variant, stragglers) with its seeds as the
    band; ``title`` above the panels (:func:`selection_title`), each line wrapped to the figure's width."""
    import textwrap

    import seaborn as sns

    from fedbench.plotting import pyplot

    vary = [c for c in ("variant", "dataset", "stragglers") if hist[c].nunique() > 1]
    rest = [c for c in vary if c != "variant"]
    hist = hist.assign(curve=hist.apply(_curve_label, axis=1, vary=["variant"]),
                       rest=hist.apply(_curve_label, axis=1, vary=rest) if rest else "")
    # each algorithm in its one colour; where datasets or straggler levels vary too, they are the line style
    colors = {label: algorithm_color(v) for label, v in zip(hist["curve"], hist["variant"])}
    plt = pyplot()
    width = 4.6 * len(metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        sub = hist[hist[metric].notna()] if metric in hist else hist.iloc[0:0]
        if sub.empty:
            ax.text(0.5, 0.5, f"no {metric} in these runs", ha="center", va="center", transform=ax.transAxes,
                    color="grey")
        else:
            sns.lineplot(data=sub, x="round", y=metric, hue="curve", palette=colors, style="rest" if rest else None,
                         estimator="mean", errorbar=("pi", 100), ax=ax, linewidth=1.4)
            ax.legend(fontsize=7, title=None)
        ax.set(xlabel="# rounds", ylabel=YLABELS.get(metric, metric))
        integer_rounds(ax)
    # about 14 characters of 9-point text to the inch: a line longer than the figure is wrapped, not cut
    fig.suptitle("\n".join(textwrap.fill(line, int(14 * width)) for line in title.splitlines()), fontsize=9)
    return fig


def draw(hist: pd.DataFrame, metrics: list[str], path: Path, title: str = "") -> Path:
    """:func:`figure`, written to ``path`` as PNG."""
    from fedbench.plotting import save_figure

    return save_figure(figure(hist, metrics, title), path)


def run_options(selection: Selection, overrides: dict[str, Any] | None) -> str:
    """The options of ``fedbench run`` that compute runs of this selection's parameters: its --set overrides (the
    seeds as train.seeds where the selection names them)."""
    given = dict(overrides or {}) | ({"train.seeds": list(selection.seeds)} if selection.seeds else {})
    return "".join(" --set " + shlex.quote(f"{k}={v if isinstance(v, str) else json.dumps(v, separators=(',', ':'))}")
                   for k, v in given.items())


class Comparison(NamedTuple):
    path: Path  # the PNG written
    missing: list[RunKey]  # the selected runs that have not finished under these parameters
    effects: list[str]  # with ``against``: each variant judged against it (:func:`effects`); else empty


def compare(cfg: Config, selection: Selection, metrics: list[str], out: Path, results_root: Path = RESULTS_ROOT,
            data_root: Path = DATA_ROOT, overrides: dict[str, Any] | None = None,
            against: str | None = None) -> Comparison:
    """Draw the selected runs of ``cfg`` (params.yaml with ``overrides``, the command's ``--set``, named in the title)
    into ``out``, and with ``against`` judge every other variant against that one (:func:`effects`). None found: a
    DataError naming what was looked for and the command that runs it."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ConfigError(f"--metric {unknown[0]!r} is not known{did_you_mean(unknown[0], METRICS)}; known: "
                          f"{', '.join(METRICS)}")
    if against is not None and selection.variants and against not in selection.variants:
        raise ConfigError(f"--against {against!r} is not among --algorithm's variants; allowed: "
                          f"{', '.join(selection.variants)}")
    if Path(out).suffix.lower() != ".png":
        raise ConfigError(f"--out {str(out)!r}: allowed: a .png file, e.g. compare.png")
    keys = selection.keys(cfg)
    adopt(cfg, results_root)  # the earlier layout's runs/train/, moved into results/ first
    hist, missing = load(cfg, keys, results_root, data_root)
    if hist.empty:
        k = keys[0]
        raise DataError(f"none of the {len(keys)} selected runs has finished under these parameters (e.g. {k.desc}); "
                        f"run them: fedbench run --dataset {k.dataset} --algorithm {k.variant} --stragglers "
                        f"{k.stragglers:g}{run_options(selection, overrides)} (or dvc repro)")
    rounds = {d: cfg.train_for(d).rounds for d in hist["dataset"].unique()}
    judged = effects(hist, against, rounds) if against is not None else []
    return Comparison(draw(hist, metrics, Path(out), selection_title(hist, rounds, overrides)), missing, judged)


def effects(hist: pd.DataFrame, against: str, rounds: dict[str, int]) -> list[str]:
    """Each variant of ``hist`` but ``against``, judged against it in every (dataset, stragglers) cell of ``hist`` as
    the FedProx headline judges FedProx against FedAvg: per seed both runs have, the difference in test accuracy
    (points, GAIN_READING), its 95% interval (fedbench.claims.stats) and GAIN_RULE's verdict. One line per cell,
    then one per variant. A DataError where ``against`` has no run in the selection."""
    if against not in set(hist["variant"]):
        raise DataError(f"--against {against!r}: none of its runs is in the selection; allowed: a variant drawn "
                        f"({', '.join(dict.fromkeys(hist['variant']))})")
    runs = {key: h.sort_values("round") for key, h in hist.groupby(["dataset", "variant", "stragglers", "seed"])}
    lines = []
    for (dataset, stragglers), cell in hist.groupby(["dataset", "stragglers"], sort=False):
        r = rounds[dataset]

        def acc(variant, seed, dataset=dataset, stragglers=stragglers, r=r):
            h = runs[(dataset, variant, stragglers, seed)]
            return 100 * read_accuracy(h["train/loss"].to_numpy(float), h["test/accuracy"].to_numpy(float),
                                       GAIN_READING, r)

        base_seeds = set(cell.loc[cell["variant"] == against, "seed"])
        lines.append(f"{dataset}, {100 * stragglers:g}% stragglers, {r} rounds: test accuracy "
                     f"({NAMES[GAIN_READING]}) minus {against}'s, per seed; {GAIN_RULE.text()}")
        for variant in dict.fromkeys(cell["variant"]):
            if variant == against:
                continue
            seeds = sorted(base_seeds & set(cell.loc[cell["variant"] == variant, "seed"]))
            effect = GAIN_RULE.effect([acc(variant, s) - acc(against, s) for s in seeds])
            lines.append(f"  {variant}: {fmt_effect(effect)} on seeds {', '.join(map(str, seeds)) or 'none'}: "
                         f"{GAIN_RULE.verdict(effect)}")
    return lines

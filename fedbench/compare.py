"""``fedbench compare``: any selection of finished runs drawn in the report's style (line: mean over seeds; band:
min to max over seeds), one panel per metric, to a PNG.

A selection is datasets x algorithm variants x straggler fractions x seeds, each defaulting to every value the
studies of params.yaml list (seeds: train.seeds). The runs read are those of the parameters in force (params.yaml
with ``--set`` overrides: fedbench.runner.find_run), so a variation's runs and the main job's are compared by
running the command once under each. A selection that finds no run says which cells it looked for and how to run
them; cells with some runs missing are drawn from the runs there are, and the missing ones are named.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fedbench.config import Config
from fedbench.errors import ConfigError, DataError
from fedbench.plotting import LABELS, TITLES
from fedbench.runner import DATA_ROOT, RunKey, find_run
from fedbench.study.layout import RESULTS_ROOT, adopt

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
                raise ConfigError(f"{flag} {unknown[0]!r} is not in params.yaml's studies; known: "
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
    hist = hist.assign(curve=hist.apply(_curve_label, axis=1, vary=vary))
    plt = pyplot()
    width = 4.6 * len(metrics)
    fig, axes = plt.subplots(1, len(metrics), figsize=(width, 3.8), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        sub = hist[hist[metric].notna()] if metric in hist else hist.iloc[0:0]
        if sub.empty:
            ax.text(0.5, 0.5, f"no {metric} in these runs", ha="center", va="center", transform=ax.transAxes,
                    color="grey")
        else:
            sns.lineplot(data=sub, x="round", y=metric, hue="curve", estimator="mean", errorbar=("pi", 100), ax=ax,
                         linewidth=1.4)
            ax.legend(fontsize=7, title=None)
        ax.set(xlabel="# rounds", ylabel=YLABELS.get(metric, metric))
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


def compare(cfg: Config, selection: Selection, metrics: list[str], out: Path, results_root: Path = RESULTS_ROOT,
            data_root: Path = DATA_ROOT, overrides: dict[str, Any] | None = None) -> tuple[Path, list[RunKey]]:
    """Draw the selected runs of ``cfg`` (params.yaml with ``overrides``, the command's ``--set``, named in the title)
    into ``out``; returns the file and the selected runs that are missing. None found: a DataError naming what was
    looked for and the command that runs it."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ConfigError(f"--metric {unknown[0]!r} is not known; known: {', '.join(METRICS)}")
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
    return draw(hist, metrics, Path(out), selection_title(hist, rounds, overrides)), missing

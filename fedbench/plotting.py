"""matplotlib for fedbench's figures: the file-only Agg backend, one way to write a figure, and the display names
of the train stage's variants and datasets (the report's figures and `fedbench compare` draw them alike). Used by
the report's figures and by the studies' own figures (a study draws what it measures; the report renders)."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

# the train stage's variants and datasets as figures name them
LABELS = {"fedavg": "FedAvg", "fedprox_mu0": "FedProx, μ=0", "fedprox_mu1": "FedProx, μ=1"}
PALETTE = {"FedAvg": "#1f77b4", "FedProx, μ=0": "#ff7f0e", "FedProx, μ=1": "#2ca02c"}
# the colours any other variant is drawn in (matplotlib's tab10 less the three above), one per name by a stable hash
OTHER_COLORS = ("#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
TITLES = {"synthetic_iid": "Synthetic-IID", "synthetic_0_0": "Synthetic (0,0)",
          "synthetic_0p5_0p5": "Synthetic (0.5,0.5)", "synthetic_1_1": "Synthetic (1,1)"}


def algorithm_color(variant: str) -> str:
    """The one colour of algorithm variant ``variant`` in every figure (the report's and `fedbench compare`'s): the
    train stage's variants their PALETTE colour, any other name one of OTHER_COLORS chosen by a hash of the name, so
    the same in every process and every figure."""
    import zlib

    label = LABELS.get(variant, variant)
    if label in PALETTE:
        return PALETTE[label]
    return OTHER_COLORS[zlib.crc32(variant.encode()) % len(OTHER_COLORS)]


def palette(variants) -> dict[str, str]:
    """label -> colour for ``variants``, for seaborn's ``palette=`` where the hue is the variant's label (LABELS)."""
    return {LABELS.get(v, v): algorithm_color(v) for v in variants}


def integer_rounds(ax) -> None:
    """Round ticks on ``ax``'s x axis at whole rounds only (a few rounds drew 0.5, 1.5, ...)."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend (selected when this module is imported), for figure code that
    imports this module lazily."""
    return plt


_STAMPS: list[str] = []  # what every figure saved now must say of how its numbers were computed (:func:`stamped`)


@contextlib.contextmanager
def stamped(text: str):
    """Within this block, every figure :func:`save_figure` writes carries ``text`` on its bottom line (a study run in
    a declared reduced-precision mode: fedbench.study.contract names the mode in each of its figures)."""
    _STAMPS.append(text)
    try:
        yield
    finally:
        _STAMPS.pop()


def save_figure(fig, path: str | Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` as PNG (creating the folder) and close it; within :func:`stamped`, with
    its text on the figure's bottom line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if _STAMPS:
        fig.text(0.01, 0.005, "; ".join(_STAMPS), fontsize=7, color="0.25", ha="left", va="bottom")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def median_curve(curves: list[Any], rounds: int):
    """The per-round median over seeds of ``curves`` (one per seed, rounds 0..``rounds``): a shorter curve (a run
    that stopped early) or a non-finite value leaves its seed out of those rounds."""
    import numpy as np

    stack = np.full((len(curves), rounds + 1), np.nan)
    for i, curve in enumerate(curves):
        v = np.asarray(curve, dtype=float)
        stack[i, : len(v)] = np.where(np.isfinite(v), v, np.nan)
    with warnings.catch_warnings():  # a round no seed reached is NaN, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(stack, 0)


def run_curves(history: list[dict[str, Any]], path: Path, title: str = "") -> Path:
    """One run's training loss, test accuracy and dissimilarity against rounds (the MLflow artifact fedbench.track
    logs with the run)."""
    rounds = [row["round"] for row in history]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3))
    for ax, metric in zip(axes, ["train/loss", "test/accuracy", "train/dissimilarity"]):
        ax.plot(rounds, [row.get(metric, float("nan")) for row in history], lw=1.3)
        ax.set_xlabel("round")
        integer_rounds(ax)
        ax.set_title(metric, fontsize=9)
    fig.suptitle(title, fontsize=9)
    return save_figure(fig, path)

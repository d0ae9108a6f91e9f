"""FedProx's Figures 1, 2 and 5 drawn from the main job's runs, in the paper's style, with the spread over seeds shown
(line: mean over seeds; band: min to max): the figures of the study fedbench.studies.fedprox_main_job (its figure
hook), and the panels the report's real-data figures share (fedbench.report.figures); and the figure of each FedProx
real-data study (:func:`figure_real`: fedbench.studies.fedprox_real's figure hook, the report's real-data figures)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fedbench.plotting import LABELS, PALETTE, TITLES, algorithm_color, integer_rounds, pyplot, save_figure


def label_methods(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(method=df["variant"].map(lambda v: LABELS.get(v, v)))


def panel(ax, df: pd.DataFrame, metric: str) -> None:
    import seaborn as sns  # imported here: it costs seconds, and the training stages do not need it

    if df.empty:
        ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
        return
    sns.lineplot(data=df, x="round", y=metric, hue="method", estimator="mean", errorbar=("pi", 100),
                 palette=PALETTE, ax=ax, linewidth=1.4)


def figure1(hist: pd.DataFrame, path: Path, dataset: str = "synthetic_1_1", stragglers=(0.0, 0.5, 0.9)) -> Path:
    """Training loss (top) and test accuracy (bottom) on one dataset at each straggler level."""
    fig, axes = pyplot().subplots(2, len(stragglers), figsize=(4.2 * len(stragglers), 6.4), squeeze=False)
    for j, f in enumerate(stragglers):
        sub = label_methods(hist[(hist["dataset"] == dataset) & (hist["stragglers"] == f)]) if len(hist) else pd.DataFrame()
        for i, metric in enumerate(["train/loss", "test/accuracy"]):
            ax = axes[i, j]
            panel(ax, sub, metric)
            note = "\n(FedAvg = FedProx μ=0 here: curves overlap)" if f == 0 else ""
            ax.set_title(f"{TITLES.get(dataset, dataset)}, {int(f * 100)}% stragglers{note}" if i == 0 else "", fontsize=10)
            ax.set_xlabel("# rounds")
            integer_rounds(ax)
            ax.set_ylabel("training loss" if i == 0 else "test accuracy")
            if ax.get_legend() and (i, j) != (0, 0):
                ax.get_legend().remove()
    fig.suptitle("FedProx Figure 1 (rerun): systems heterogeneity; mean over seeds, band = min..max", fontsize=10)
    return save_figure(fig, path)


FIGURE2_DATASETS = ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1")


def figure2(hist: pd.DataFrame, path: Path, datasets=FIGURE2_DATASETS) -> Path:
    """Training loss (top) and gradient dissimilarity (bottom) of FedAvg and FedProx (mu=1), no stragglers."""
    fig, axes = pyplot().subplots(2, len(datasets), figsize=(4.0 * len(datasets), 6.4), squeeze=False)
    for j, ds in enumerate(datasets):
        sub = hist[(hist["dataset"] == ds) & (hist["stragglers"] == 0.0) & hist["variant"].isin(["fedavg", "fedprox_mu1"])] \
            if len(hist) else pd.DataFrame()
        sub = label_methods(sub) if len(sub) else sub
        for i, metric in enumerate(["train/loss", "train/dissimilarity"]):
            ax = axes[i, j]
            panel(ax, sub, metric)
            ax.set_title(TITLES.get(ds, ds) if i == 0 else "")
            ax.set_xlabel("# rounds")
            integer_rounds(ax)
            ax.set_ylabel("training loss" if i == 0 else "variance of local grad.")
            if ax.get_legend() and (i, j) != (0, 0):
                ax.get_legend().remove()
    fig.suptitle("FedProx Figure 2 (rerun): statistical heterogeneity, E=20, no stragglers", fontsize=10)
    return save_figure(fig, path)


def figure5(hist: pd.DataFrame, path: Path, dataset: str = "synthetic_iid", stragglers=(0.0, 0.5, 0.9)) -> Path:
    """FedAvg's training loss on IID data at each straggler level (the paper's Figure 5)."""
    fig, ax = pyplot().subplots(1, 1, figsize=(5, 3.6))
    sub = hist[(hist["dataset"] == dataset) & (hist["variant"] == "fedavg")] if len(hist) else pd.DataFrame()
    if sub.empty:
        ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
    else:
        import seaborn as sns

        levels = sorted(sub["stragglers"].unique())
        colours = dict(zip(levels, sns.color_palette(n_colors=len(levels))))
        # 0% and 10% nearly coincide: 0% is drawn last, dashed, so the line below shows through its gaps
        for f in sorted(levels, key=lambda f: (f == 0.0, -f)):
            sns.lineplot(data=sub[sub["stragglers"] == f], x="round", y="train/loss", errorbar=("pi", 100), ax=ax,
                         color=colours[f], label=f"{f * 100:g}% stragglers", linestyle="--" if f == 0.0 else "-")
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: float(labels[i].split("%")[0]))
        ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=8)
    ax.set_title("FedAvg on Synthetic-IID (FedProx Figure 5, rerun)", fontsize=10)
    ax.set_xlabel("# rounds")
    integer_rounds(ax)
    ax.set_ylabel("training loss")
    return save_figure(fig, path)


def figure_real(hist: pd.DataFrame, path: Path, dataset: str, title: str, variants: dict[str, str],
                stragglers=(0.0, 0.5, 0.9)) -> Path:
    """A real-data FedProx study (Figures 1, 7 and 8 on ``dataset``): training loss, test accuracy and the
    dissimilarity at each straggler level, of the ``variants`` ({variant: label}) that ran."""
    palette = {label: algorithm_color(variant) for variant, label in variants.items()}  # compare's colours too
    metrics = [("train/loss", "training loss"), ("test/accuracy", "test accuracy"),
               ("train/dissimilarity", "variance of local grad.")]
    fig, axes = pyplot().subplots(len(metrics), len(stragglers), figsize=(4.2 * len(stragglers), 9.0), squeeze=False)
    for j, f in enumerate(stragglers):
        sub = hist[(hist["dataset"] == dataset) & (hist["stragglers"] == f) & hist["variant"].isin(list(variants))] \
            if len(hist) else pd.DataFrame()
        if len(sub):
            sub = sub.assign(method=sub["variant"].map(variants))
        for i, (metric, ylabel) in enumerate(metrics):
            ax = axes[i, j]
            if sub.empty or metric not in sub or sub[metric].isna().all():
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes, color="grey")
            else:
                import seaborn as sns

                sns.lineplot(data=sub.dropna(subset=[metric]), x="round", y=metric, hue="method", estimator="mean",
                             errorbar=("pi", 100), palette=palette, ax=ax, linewidth=1.4)
            ax.set_title(f"{title}, {int(f * 100)}% stragglers" if i == 0 else "", fontsize=10)
            ax.set_xlabel("# rounds")
            integer_rounds(ax)
            ax.set_ylabel(ylabel)
            if ax.get_legend() and (i, j) != (0, 0):
                ax.get_legend().remove()
    fig.suptitle(f"FedProx Figures 1, 7, 8 on {title} (rerun): mean over seeds, band = min..max", fontsize=10)
    return save_figure(fig, path)

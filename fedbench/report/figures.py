"""The report's real-data figures, in the style of FedProx's Figures 1, 2 and 5 (which the main job study draws:
fedbench.studies.fedprox_figures; the report copies them), with the spread over seeds shown (line: mean over seeds;
band: min to max)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from fedbench.config import Config
from fedbench.plotting import algorithm_color, integer_rounds, pyplot, save_figure
from fedbench.study.layout import reported_folder

plt = pyplot()



def keep_missing(before: Path, drawn: Path, committed: dict[str, bytes] | None = None) -> list[str]:
    """Copy into ``drawn`` (this build's figures) each figure of ``before`` (the report's figures folder before this
    build), else of ``committed`` (git's copy of that folder, by relative path: ``dvc repro`` removes the folder before
    the report stage runs), that this build did not draw because its runs are not here: a figure stays until it is
    drawn again. The paths kept, relative to ``drawn``."""
    kept = []
    files = {f.relative_to(before).as_posix(): f for f in sorted(Path(before).rglob("*")) if f.is_file()} \
        if Path(before).is_dir() else {}
    for rel in sorted({*files, *(committed or {})}):
        target = Path(drawn) / rel
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in files:
            shutil.copy2(files[rel], target)
        else:
            target.write_bytes(committed[rel])
        kept.append(rel)
    return kept


def figure_real(hist: pd.DataFrame, path: Path, dataset: str, title: str, variants: dict[str, str],
                stragglers=(0.0, 0.5, 0.9)) -> Path:
    """A real-data FedProx study (Figures 1, 7 and 8 on ``dataset``): training loss, test accuracy and the
    dissimilarity at each straggler level, of the ``variants`` ({variant: label}) that ran."""
    palette = {label: algorithm_color(variant) for variant, label in variants.items()}  # compare's colours too
    metrics = [("train/loss", "training loss"), ("test/accuracy", "test accuracy"),
               ("train/dissimilarity", "variance of local grad.")]
    fig, axes = plt.subplots(len(metrics), len(stragglers), figsize=(4.2 * len(stragglers), 9.0), squeeze=False)
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


def real_data_figures(cfg: Config, results_root: Path, data_root: Path, figures_dir: Path) -> list[Path]:
    """The real-data figures (the entries: fedbench.studies.real_claims): the figure every judged real-data FedProx entry points at (``figures/<study>.png``: loss, accuracy and
    dissimilarity at 0/50/90% stragglers), for each study with runs; and each paper-scale study's own figures,
    copied from the folder the report reads it from (``results_root/<name>/<budget>/``) to ``figures/<name>/``."""
    import shutil

    from fedbench.studies.fedprox_real_data import MNIST5K, MNIST5K_STUDY
    from fedbench.studies.real_claims import runs_of
    from fedbench.study.paper_profile import CLAIM_STUDIES, STUDIES

    drawn = []
    studies = ([MNIST5K_STUDY] if MNIST5K in cfg.studies else []) + [s for s in STUDIES.values() if not s.partial_work]
    for s in studies:
        _, curves = runs_of(cfg, s, results_root, data_root)
        if not len(curves.frame):
            continue
        labels = {"fedavg": "FedAvg", "fedprox_mu0": "FedProx, μ=0", s.best_variant: f"FedProx, μ={s.mu:g}"}
        drawn.append(figure_real(curves.frame, Path(figures_dir) / f"{s.name}.png", s.variant, s.title, labels))
    for name in CLAIM_STUDIES:
        folder = reported_folder(name, results_root)  # the folder paper_study_entries read
        if (folder / "claims.json").exists():
            for png in sorted(folder.glob("*.png")):
                (Path(figures_dir) / name).mkdir(parents=True, exist_ok=True)
                drawn.append(Path(shutil.copy2(png, Path(figures_dir) / name / png.name)))
    return drawn

"""The report's real-data figures, in the style of FedProx's Figures 1, 2 and 5 (which the main job study draws:
fedbench.studies.fedprox_figures; the report copies them), with the spread over seeds shown (line: mean over seeds;
band: min to max)."""

from __future__ import annotations

import shutil
from pathlib import Path

from fedbench.config import Config
from fedbench.studies.fedprox_figures import figure_real
from fedbench.study.layout import reported_folder


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

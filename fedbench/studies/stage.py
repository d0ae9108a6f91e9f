"""A claim study run at one of its budgets: what the DVC stage ``study@NAME`` (pipelines/study.py), ``fedbench study
run NAME [--budget B]`` and, for a paper-scale study, ``fedbench paper run NAME`` (after it has built the study's real
variants) all do, one code path (:func:`run_study`). params.yaml ``claim_studies`` gives a small study its budget and
seeds (fedbench.config.ClaimStudyConfig). What every study shares (its budget checked, its folder, its runs
and their records) is the one driver, fedbench.study.contract.

One output folder per (study, budget), ``results/<study>/<budget>/`` (fedbench.study.layout, which also says which
folder the report reads), so that no budget ever replaces another's output. A paper-scale study's budget reuses the
finished simulations of its other budgets by fingerprint (:func:`offer_outcomes`) without writing into their
folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbench.config import PIPELINE_BUDGET, ClaimStudyConfig, Config, _one_of
from fedbench.errors import ConfigError, DataError, read_json
from fedbench.executors import ExecutorSettings
from fedbench.studies.fedprox_real_data import MNIST5K
from fedbench.study import registry
from fedbench.study.layout import MAIN_JOB, RESULTS_ROOT, adopt, home_budget, reported_folder, study_folder
from fedbench.study.output import run_claim_study
from fedbench.study.runner import WORKERS


def is_paper_scale(name: str) -> bool:
    """Whether claim study ``name`` trains on real variants (its declaration names ``variants``): the test that
    params.yaml's validation makes (fedbench.study.registry.is_paper_scale), so the two never disagree."""
    return registry.is_paper_scale(name)


def offer_outcomes(name: str, budget: str, root: Path = RESULTS_ROOT) -> int:
    """Fingerprint reuse across the budgets of paper-scale study ``name``: the finished simulations its other budgets
    kept (``<folder>/outcomes/<fingerprint>.json``, fedbench.study.reuse) linked into ``budget``'s outcomes where it
    lacks them, so that a budget whose runs another one computed (fedproxvr_fashion's paper budget after its convex
    one, Table 1's runs) reads them back instead of recomputing them, as when both shared one folder; the run prunes
    those it does not use. The other budgets' folders are only read (hard links to files that are only ever replaced,
    never rewritten; copies where a link is not possible). The number offered."""
    import os
    import shutil

    from fedbench.study.reuse import OUTCOMES

    target = study_folder(name, budget, root) / OUTCOMES
    offered = 0
    for other in registry.budgets(name):
        source = study_folder(name, other, root) / OUTCOMES
        if other == budget or not source.is_dir():
            continue
        for f in sorted(source.glob("*.json")):
            if (target / f.name).exists():
                continue
            target.mkdir(parents=True, exist_ok=True)
            try:
                os.link(f, target / f.name)
            except OSError:
                shutil.copy2(f, target / f.name)
            offered += 1
    return offered


def missing_variant(name: str, real_root: Path) -> str | None:
    """The first real variant paper-scale study ``name`` trains on that is not built in ``real_root`` (no
    ``meta.json``, written last: fedbench.data.format); None where all are."""
    from fedbench.studies.real_data import declaration

    return next((v for v in declaration(name).variants if not (Path(real_root) / v / "meta.json").exists()), None)


def run_study(cfg: Config, name: str, budget: str | None = None, workers: int = WORKERS, root: Path = RESULTS_ROOT,
              real_root: Path | None = None, seeds: tuple[int, ...] | None = None,
              data_seeds: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """Claim study ``name`` at ``budget`` (default: params.yaml claim_studies' for a small study, "paper" for a
    paper-scale one) with params.yaml's seeds for it (``seeds``: these instead, a confirmatory run's frozen block,
    fedbench.studies.confirm, with its fresh ``data_seeds`` where the study draws its data), into
    ``root/name/budget`` (fedbench.study.layout), its stacks where
    train.executor says: what the DVC ``study@NAME`` stage, ``fedbench study run NAME`` and ``fedbench paper run
    NAME`` all do. A paper-scale study reads its real variants from ``real_root`` (default data/real). An unknown
    study or budget, or a variant not built, is one line naming it and what is allowed (or the command that builds
    it), raised before anything runs. A FedProx real-data study (fedbench.study.registry.FEDPROX_REAL) runs at the one
    budget it declares, as ``fedbench paper run NAME`` runs it (fedbench.studies.fedprox_real.run_real_study: ``cfg``
    params.yaml's with the study, fedbench.paper.study_config), its data already built in ``real_root``."""
    _one_of(name, runnable(), "study")
    if name in registry.FEDPROX_REAL:
        from fedbench.studies.fedprox_real import budget as real_budget
        from fedbench.studies.fedprox_real import run_real_study

        _one_of(real_budget(name) if budget is None else budget, [real_budget(name)], f"--budget (study {name})")
        if workers < 1:
            raise ConfigError(f"--workers: must be >= 1, got {workers}")
        return run_real_study(cfg, name, root, Path("data/real") if real_root is None else Path(real_root), workers)
    home = home_budget(cfg, name)
    declared = cfg.claim_studies.get(name, ClaimStudyConfig(budget=home))
    budget = declared.budget if budget is None else budget
    _one_of(budget, registry.budgets(name), f"--budget (study {name})")
    if workers < 1:
        raise ConfigError(f"--workers: must be >= 1, got {workers}")
    paper_scale = is_paper_scale(name)
    if paper_scale:
        from fedbench.studies.real_data import REAL_ROOT

        real_root = Path(real_root or REAL_ROOT)
        if (variant := missing_variant(name, real_root)) is not None:
            raise DataError(f"study {name}: its real variant {variant} is not built (no {real_root / variant}/"
                            f"meta.json); `fedbench paper run {name}` fetches and builds it")
    adopt(cfg, root)
    if paper_scale:
        offer_outcomes(name, budget, root)
    return run_claim_study(name, study_folder(name, budget, root), workers=workers,
                           budget=None if budget == PIPELINE_BUDGET else budget,
                           executor=ExecutorSettings.of(cfg.train),
                           seeds=declared.seeds if seeds is None else tuple(seeds),
                           real_root=real_root if paper_scale else None, data_seeds=data_seeds,
                           config=cfg)  # params.yaml's, for a study whose grid it sets (the main job)


def runnable() -> list[str]:
    """Every study ``fedbench study run`` runs and ``fedbench study list`` lists, sorted: the claim studies
    (fedbench.study.registry.names) and FedProx's real-data studies (fedbench.study.registry.FEDPROX_REAL)."""
    return sorted(registry.names() + list(registry.FEDPROX_REAL))


def measured(name: str) -> dict[str, Any] | None:
    """Claim study ``name``'s module-level ``MEASURED`` (what it cost where it was measured); None where it declares
    none."""
    return getattr(registry.module(name), "MEASURED", None)


def list_studies(cfg: Config, root: Path = RESULTS_ROOT) -> list[str]:
    """One line per claim study: its budgets (the one params.yaml runs it at first), what runs it (`dvc repro` for a
    default study, the command otherwise) and its cost where known (the run that computed the numbers in the folder
    the report reads, :func:`reported_folder`; a rerun that changed no number keeps that run's seconds,
    fedbench.study.record.keep_seconds; or its MEASURED)."""

    rows = [("study", "budgets", "run by", "cost")]
    for name in runnable():
        declared = cfg.claim_studies.get(name)
        budgets = registry.budgets(name)
        if declared:
            budgets = [declared.budget] + [b for b in budgets if b != declared.budget]
        paper_scale = is_paper_scale(name)
        if name == MAIN_JOB or (name == MNIST5K and MNIST5K in cfg.studies):  # its own stage: its grid is params.yaml's
            command = how = "dvc repro (main_job)"  # (MNIST-5k's runs are the main job's, where params.yaml lists it)
        elif declared and declared.default:
            command = how = f"dvc repro (study@{name})"
        elif paper_scale:
            command = f"fedbench paper run {name}"  # its data, then `fedbench study run NAME --budget paper`
            how = f"paper-scale: {command}"
        else:
            command = f"fedbench study run {name}"
            how = f"opt-in: {command}"
        last = reported_folder(name, root, cfg) / "claims.json"
        cost, m = "", measured(name)
        if last.exists():
            body = read_json(last, "seconds", f"run the study again to write it anew: {command}")
            cost = (f"computed in {body['seconds']:,} s, {body.get('workers', 1)} workers, budget "
                    f"{body.get('budget') or PIPELINE_BUDGET} ({last})")
        elif m:
            cost = f"{m['seconds']:,} s wall, {m['workers']} workers on {m['device']} ({m['date']})"
        elif paper_scale:
            cost = "see `fedbench paper list`"
        rows.append((name, ", ".join(budgets), how, cost or "not measured"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return ["  ".join(f"{c:<{w}}" for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]

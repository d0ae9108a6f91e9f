"""A claim study run as params.yaml declares it: what the DVC stage ``study@NAME`` (pipelines/study.py) and
``fedbench study run NAME`` both do, one code path. params.yaml ``claim_studies`` gives each study its budget
and seeds (fedbench.config.ClaimStudyConfig); the study runs at its declared budget into ``reports/studies/NAME/``,
or at another budget it declares into ``reports/studies-BUDGET/NAME/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbench.config import PIPELINE_BUDGET, ClaimStudyConfig, Config, _one_of, available_claim_studies, study_budgets
from fedbench.errors import ConfigError
from fedbench.executors import ExecutorSettings
from fedbench.studies import STUDIES_ROOT, WORKERS, run_claim_study


def study_root(cfg: Config, name: str, budget: str) -> Path:
    """Where claim study ``name`` run at ``budget`` goes: ``reports/studies/`` at its pipeline budget (the one
    params.yaml's claim_studies gives it; "pipeline" for a study not listed there), ``reports/studies-<budget>/``
    otherwise, so that another budget never replaces what the pipeline's stage wrote."""
    listed = cfg.claim_studies.get(name)
    return STUDIES_ROOT if budget == (listed.budget if listed else PIPELINE_BUDGET) else Path(f"{STUDIES_ROOT}-{budget}")


def run_study(cfg: Config, name: str, budget: str | None = None, workers: int = WORKERS,
              root: Path | None = None) -> list[dict[str, Any]]:
    """Claim study ``name`` as params.yaml declares it (claim_studies: its budget and seeds), at ``budget`` if given,
    into ``root`` (default :func:`study_root`), its stacks where train.executor says: what the DVC ``study@NAME``
    stage and ``fedbench study run NAME`` both do. An unknown study or budget is a ConfigError naming it and what is
    allowed, raised before anything runs."""
    _one_of(name, available_claim_studies(), "study")
    declared = cfg.claim_studies.get(name, ClaimStudyConfig())
    budget = declared.budget if budget is None else budget
    _one_of(budget, study_budgets(name), f"--budget (study {name})")
    if workers < 1:
        raise ConfigError(f"--workers: must be >= 1, got {workers}")
    root = study_root(cfg, name, budget) if root is None else Path(root)
    return run_claim_study(name, root, workers=workers, budget=None if budget == PIPELINE_BUDGET else budget,
                           executor=ExecutorSettings.of(cfg.train), seeds=declared.seeds)

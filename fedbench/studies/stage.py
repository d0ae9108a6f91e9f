"""A claim study run as params.yaml declares it: what the DVC stage ``study@NAME`` (pipelines/study.py) and
``fedbench study run NAME`` both do, one code path. params.yaml ``claim_studies`` gives each study its budget
and seeds (fedbench.config.ClaimStudyConfig); the study runs at its declared budget into ``reports/studies/NAME/``,
or at another budget it declares into ``reports/studies-BUDGET/NAME/``. What every study's run() shares (its
budget checked, its folder, its runs and their records) is fedbench.studies.runs.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from fedbench.config import (
    PIPELINE_BUDGET,
    ClaimStudyConfig,
    Config,
    _one_of,
    available_claim_studies,
    study_budgets,
)
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


def measured(name: str) -> dict[str, Any] | None:
    """Claim study ``name``'s module-level ``MEASURED`` (what it cost where it was measured), read from its source
    without importing it; None where it declares none."""
    source = (Path(__file__).resolve().parent / f"{name}.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MEASURED" for t in node.targets):
            return ast.literal_eval(node.value)
    return None


def list_studies(cfg: Config, root: Path = STUDIES_ROOT) -> list[str]:
    """One line per claim study: its budgets (the one params.yaml runs it at first), what runs it (`dvc repro` for a
    default study, the command otherwise) and its cost where known (its last run here, or its MEASURED)."""
    import json

    rows = [("study", "budgets", "run by", "cost")]
    for name in available_claim_studies():
        declared = cfg.claim_studies.get(name)
        budgets = study_budgets(name)
        if declared:
            budgets = [declared.budget] + [b for b in budgets if b != declared.budget]
        if declared and declared.default:
            how = f"dvc repro (study@{name})"
        elif declared or PIPELINE_BUDGET in budgets:
            how = f"opt-in: fedbench study run {name}"
        else:
            how = f"paper-scale: fedbench paper run {name}"
        cost, last, m = "", root / name / "claims.json", measured(name)
        if last.exists():
            body = json.loads(last.read_text())
            cost = f"last run here {body['seconds']:,} s, {body.get('workers', 1)} workers ({last})"
        elif m:
            cost = f"{m['seconds']:,} s wall, {m['workers']} workers on {m['device']} ({m['date']})"
        elif how.startswith("paper-scale"):
            cost = "see `fedbench paper list`"
        rows.append((name, ", ".join(budgets), how, cost or "not measured"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return ["  ".join(f"{c:<{w}}" for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]

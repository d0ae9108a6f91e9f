"""fedbench.study.runs: the preambles several studies' run() share (open_declared, open_seeded) and
StudyRuns.curves, on the deterministic two-client quadratics of fedbench.studies.scaffold_quadratics (a run is a
fraction of a second)."""

from __future__ import annotations

import pytest

from fedbench.studies import feddane_synthetic
from fedbench.study.runner import run_simulations
from fedbench.studies import scaffold_quadratics as quadratics
from fedbench.study.record import read_simulations
from fedbench.study.runs import open_declared, open_seeded


def test_open_declared_gives_the_budget_the_runs_and_the_arm_names_in_declared_order(tmp_path):
    b, runs, methods = open_declared(tmp_path / "out", quadratics.DECLARATION, "pipeline", workers=1)
    assert b == quadratics.DECLARATION.budgets["pipeline"] and runs.out == tmp_path / "out" and runs.out.is_dir()
    assert methods == [a.name for a in quadratics.DECLARATION.arms] == ["scaffold", "scaffold-warm", "fedavg", "sgd"]
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline"):
        open_declared(tmp_path, quadratics.DECLARATION, "full")


def test_open_seeded_takes_the_given_seeds_else_the_declared_ones(tmp_path):
    rounds, _, study = open_seeded(tmp_path, feddane_synthetic.DECLARATION, "pipeline",
                                   1, (7, 8))
    assert rounds == feddane_synthetic.BUDGETS["pipeline"] and study.seeds == (7, 8)
    assert open_seeded(tmp_path, feddane_synthetic.DECLARATION, "paper",
                       1)[2].seeds == feddane_synthetic.DECLARATION.seeds



def test_open_seeded_replaces_a_budget_dataclass_s_judged_seeds_and_keeps_its_others(tmp_path):
    """A study whose budget is a dataclass with its own seeds (deltafl_iambic's Budget: judged and selection seeds):
    on a confirmatory block the budget's judged seeds are the block, its selection seeds stay, and the declaration's
    rule names the block (StudyDeclaration.on_seeds)."""
    from fedbench.studies import deltafl_iambic as iambic

    declared = iambic.DECLARATION.budgets["fixture"]
    b, runs, d = open_seeded(tmp_path, iambic.DECLARATION, "fixture", 1, (1060, 1061))
    assert (b.seeds, b.selection_seeds, d.seeds) == ((1060, 1061), declared.selection_seeds, (1060, 1061))
    assert b.rounds == declared.rounds and runs.out == tmp_path
    assert d.claims[0].rule != iambic.DECLARATION.claims[0].rule and "1060" in d.claims[0].rule
    same, _, d0 = open_seeded(tmp_path, iambic.DECLARATION, "fixture", 1)
    assert same is declared and d0 is iambic.DECLARATION


def test_curves_runs_every_job_once_writes_its_record_and_returns_its_curve(tmp_path):
    jobs = [("fedavg", 10.0, 2, 0.5), ("sgd", 1.0, 1, 0.25)]
    _, runs, _ = open_declared(tmp_path, quadratics.DECLARATION, "pipeline", workers=1)
    curves = runs.curves(jobs, quadratics.simulation, "train/loss")
    direct = run_simulations([quadratics.simulation(*job) for job in jobs], 1)
    assert list(curves) == jobs
    assert [curves[job] for job in jobs] == [o.series("train/loss") for o in direct]  # the same numbers, bit for bit
    assert [r["name"] for r in read_simulations(tmp_path)] == [quadratics.simulation(*job).name for job in jobs]

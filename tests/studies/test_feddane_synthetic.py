"""FedDane synthetic study (FedProx Figure 4): the stable loss-ratio reading, the three rules on made-up curves
(every verdict, diverged runs) and a shortened run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedbench.studies import feddane_synthetic as study
from fedbench.study.contract import StudyRun, drive, entry

INF = float("inf")
METHODS = tuple(a.name for a in study.DECLARATION.arms)


class Loss:
    """A finished run as the hooks read it: its training loss by round."""

    def __init__(self, curve):
        self.curve = curve

    def series(self, key):
        assert key == "train/loss"
        return self.curve


def judge_claims(curves, declaration=study.DECLARATION):
    """Each claim's entry, judged by the one driver's entry() from the made-up curves at the pipeline's rounds."""
    run = StudyRun(declaration, "pipeline", study.ROUNDS, outcomes={k: Loss(v) for k, v in curves.items()})
    return [entry(run, claim, study.measure(claim, run)) for claim in declaration.claims]


def _curves(ratio_of, seeds=(0, 1, 2, 3, 4)):
    """Loss curves where FedDane's loss is ratio_of(dataset, method, seed) times FedProx's at every round."""
    out = {}
    for d in study.DATASETS:
        for s in seeds:
            prox = list(np.linspace(2.0, 1.0, study.ROUNDS + 1))
            out[(d, "FedProx", s)] = prox
            for m in METHODS[1:]:
                out[(d, m, s)] = [p * ratio_of(d, m, s) for p in prox]
    return out


def test_rules_every_verdict():
    good = _curves(lambda d, m, s: (1.0 + 0.01 * s) if d == "synthetic_iid" else 2.0 + 0.1 * s)
    similar, worse, still = judge_claims(good)
    # "similar" within the 25% this project chose (no number in the paper): reproduced beside, never counted; counted
    # without a margin, the +0..4% difference is shown: not-reproduced (issue 51, item 4)
    assert (similar["verdict"], worse["verdict"], still["verdict"]) == ("not-reproduced", "reproduced", "reproduced")
    assert next(c for c in similar["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == (
        "reproduced")
    assert similar["effect"]["estimate"] == pytest.approx(2.0)  # 100 (1.02 - 1)
    bad = _curves(lambda d, m, s: (1.4 + 0.01 * s) if d == "synthetic_iid" else 0.5 + 0.01 * s)
    similar, worse, still = judge_claims(bad)
    assert (similar["verdict"], worse["verdict"], still["verdict"]) == ("not-reproduced",) * 3
    mixed = _curves(lambda d, m, s: 1.0 + 0.3 * (s - 2) if d == "synthetic_iid" else 1.0 + 0.5 * (s - 2))
    assert tuple(r["verdict"] for r in judge_claims(mixed)) == ("inconclusive",) * 3


def test_diverged_feddane_counts_as_worse():
    curves = _curves(lambda d, m, s: 1.0 if d == "synthetic_iid" else 3.0)
    for s in range(5):
        curves[("synthetic_1_1", "FedDane c=10", s)] = [2.0] * 3 + [math.nan]  # stopped at round 3
    _, worse, _ = judge_claims(curves)
    part = next(p for p in worse["parts"] if p["part"] == "synthetic_1_1")
    assert part["per_seed"] == [INF] * 5 and part["test"].startswith("sign test")
    # on the paper's side on all 5 seeds, but the sign test's p = 0.0625 and the order-statistic interval covers
    # 93.75%: a 95% rule cannot be met with 5 seeds (issue 51): inconclusive, more seeds needed
    assert part["coverage"] == 0.9375 and part["p_value"] == 0.0625 and part["verdict"] == "inconclusive"
    assert "more seeds are needed" in worse["verdict_text"]


def test_the_entries_report_every_arm_and_the_declared_deviations():
    similar, worse, still = judge_claims(_curves(lambda d, m, s: 1.1 if d == "synthetic_iid" else 1.5))
    assert similar["reproduced"]["value"] == {m: {d: "+10.0" if d == "synthetic_iid" else "+50.0"
                                                  for d in study.DATASETS} for m in METHODS[1:]}
    assert similar["deviations"] == [
        ("40 of the paper's 200 rounds (`fedbench study run feddane_synthetic --budget paper` runs 200); no verdict is "
        "extrapolated to the paper's budget; mu = 1 (Figure 4's top row) not run"), *study.DECLARATION.deviations]
    assert similar["scale"]["gradient_devices"] == [10, 20, 30] and list(similar["scale"])[-2:] == [
        "gradient_devices", "model"]
    assert [e["figure"] for e in (similar, still)] == [
        {"path": "studies/feddane_synthetic/feddane_synthetic.png", "panel": "left: Synthetic-IID"},
        {"path": "studies/feddane_synthetic/feddane_synthetic.png",
         "panel": "the three right panels, dashed and c=30 lines"}]
    assert [p["part"] for p in still["parts"]] == [f"FedDane {r}=30 on {d}" for r in "cK" for d in study.NON_IID]
    assert "Rounds where the training loss rose" not in worse["observed"] and still["observed"].endswith(
        "runs ending diverged: " + ", ".join(f"{m} 0" for m in METHODS))


def test_paper_budget_runs_200_rounds_and_reads_its_own_rounds():
    assert study.BUDGETS == {"pipeline": 40, "paper": 200}
    run = StudyRun(study.DECLARATION, "paper", 200)
    sims = study.simulations(run)
    assert len(sims) == 5 * 4 * 6 and {s.config.rounds for s in sims.values()} == {200}
    assert sims[("synthetic_1_1", "FedDane K=30", 0)].config.clients_per_round == 30
    assert sims[("synthetic_1_1", "FedDane c=30", 0)].algorithm.gradient_clients == 30
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline, paper"):
        drive(study, "unused", budget="full")

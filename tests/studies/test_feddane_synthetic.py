"""FedDane synthetic study (FedProx Figure 4): the stable loss-ratio reading, the three rules on made-up curves
(every verdict, diverged runs) and a shortened run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedbench.studies import feddane_synthetic as study

INF = float("inf")


def _curves(ratio_of, seeds=(0, 1, 2, 3, 4)):
    """Loss curves where FedDane's loss is ratio_of(dataset, method, seed) times FedProx's at every round."""
    out = {}
    for d in study.DATASETS:
        for s in seeds:
            prox = list(np.linspace(2.0, 1.0, study.ROUNDS + 1))
            out[(d, "FedProx", s)] = prox
            for m in study.METHODS[1:]:
                out[(d, m, s)] = [p * ratio_of(d, m, s) for p in prox]
    return out


def test_rules_every_verdict():
    good = _curves(lambda d, m, s: (1.0 + 0.01 * s) if d == "synthetic_iid" else 2.0 + 0.1 * s)
    similar, worse, still = study.judge_claims(good)
    # "similar" within the 25% this project chose (no number in the paper): reproduced beside, never counted; counted
    # without a margin, the +0..4% difference is shown: not-reproduced (issue 51, item 4)
    assert (similar["verdict"], worse["verdict"], still["verdict"]) == ("not-reproduced", "reproduced", "reproduced")
    assert next(c for c in similar["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == (
        "reproduced")
    assert similar["effect"]["estimate"] == pytest.approx(2.0)  # 100 (1.02 - 1)
    bad = _curves(lambda d, m, s: (1.4 + 0.01 * s) if d == "synthetic_iid" else 0.5 + 0.01 * s)
    similar, worse, still = study.judge_claims(bad)
    assert (similar["verdict"], worse["verdict"], still["verdict"]) == ("not-reproduced",) * 3
    mixed = _curves(lambda d, m, s: 1.0 + 0.3 * (s - 2) if d == "synthetic_iid" else 1.0 + 0.5 * (s - 2))
    assert tuple(r["verdict"] for r in study.judge_claims(mixed)) == ("inconclusive",) * 3


def test_diverged_feddane_counts_as_worse():
    curves = _curves(lambda d, m, s: 1.0 if d == "synthetic_iid" else 3.0)
    for s in range(5):
        curves[("synthetic_1_1", "FedDane c=10", s)] = [2.0] * 3 + [math.nan]  # stopped at round 3
    _, worse, _ = study.judge_claims(curves)
    part = next(p for p in worse["parts"] if p["part"] == "synthetic_1_1")
    assert part["per_seed"] == [INF] * 5 and part["test"].startswith("sign test")
    # on the paper's side on all 5 seeds, but the sign test's p = 0.0625 and the order-statistic interval covers
    # 93.75%: a 95% rule cannot be met with 5 seeds (issue 51): inconclusive, more seeds needed
    assert part["coverage"] == 0.9375 and part["p_value"] == 0.0625 and part["verdict"] == "inconclusive"
    assert any("more seeds are needed" in n for n in worse["notes"])


def test_paper_budget_runs_200_rounds_and_reads_its_own_rounds():
    assert study.BUDGETS == {"pipeline": 40, "paper": 200}
    assert study.simulation("synthetic_1_1", "FedProx", 0, rounds=200).config.rounds == 200
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline, paper"):
        study.run("unused", budget="full")

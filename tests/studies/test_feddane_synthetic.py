"""FedDane synthetic study (FedProx Figure 4): the stable loss-ratio reading, the three rules on made-up curves
(every verdict, diverged runs) and a shortened run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedbench.studies import feddane_synthetic as study

INF = float("inf")


def test_loss_ratio_is_the_median_over_the_second_half(monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 10)
    prox = [1.0] * 11
    dane = [1.0] * 5 + [1.5, 1.2, 9.0, 1.1, 1.3, 1.4]  # one chaotic round (9.0) in the second half
    assert study.loss_ratio(dane, prox, "median") == pytest.approx(35.0)  # rounds 5..10: (1.3 + 1.4) / 2
    assert study.loss_ratio(dane, prox, "final") == pytest.approx(40.0)
    assert study.loss_ratio(dane, prox, "all") == pytest.approx(100 * (1.1 - 1))  # median of 11: six 1.0s, ...
    stopped = [1.0] * 6 + [math.nan]  # diverged at round 6: rounds 6..10 count as infinite
    assert study.loss_ratio(stopped, prox, "median") == INF
    assert study.loss_ratio(dane, prox, "median", budget=0.5) == pytest.approx(0.0)  # rounds 2..5: 1, 1, 1, 1.5
    assert math.isnan(study.loss_ratio(dane, [1.0, math.nan], "median"))  # FedProx failed: no comparison


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
    assert (similar["verdict"], worse["verdict"], still["verdict"]) == ("reproduced",) * 3
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
    assert part["verdict"] == "reproduced" and worse["verdict"] == "reproduced"


def test_loss_jumps():
    assert study.loss_jumps([1.0, 1.4, 2.2, 2.0, float("nan"), 1.0]) == 2  # 1.4 -> 2.2 and -> nan


def test_paper_budget_runs_200_rounds_and_reads_its_own_rounds():
    assert study.BUDGETS == {"pipeline": 40, "paper": 200}
    assert study.simulation("synthetic_1_1", "FedProx", 0, rounds=200).config.rounds == 200
    prox, dane = [1.0] * 201, [1.0] * 100 + [2.0] * 101  # FedDane doubles from round 100 on
    assert study.loss_ratio(dane, prox, "median", rounds=200) == pytest.approx(100.0)  # rounds 100..200
    assert study.loss_ratio(dane, prox, "median", budget=0.25, rounds=200) == pytest.approx(0.0)  # rounds 25..50
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline, paper"):
        study.run("unused", budget="full")

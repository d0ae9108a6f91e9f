"""FedDane synthetic study (FedProx Figure 4): the three rules on made-up outcomes and a shortened run."""

from __future__ import annotations

import json

from fedbench.studies import CLAIM_KEYS
from fedbench.studies import feddane_synthetic as study
from tests.studies import assert_every_run_recorded, spy_simulate

INF = float("inf")


def _losses(prox, c10, c30, k30=None, c20=(1.0, 1.0, 1.0, 1.0)):
    rows = {"FedProx": prox, "FedDane c=10": c10, "FedDane c=20": c20, "FedDane c=30": c30,
            "FedDane K=20": c20, "FedDane K=30": c30 if k30 is None else k30}
    return {m: dict(zip(study.DATASETS, v)) for m, v in rows.items()}


def test_rules():
    prox = (0.50, 0.8, 0.9, 1.5)
    assert study.verdicts(_losses(prox, (0.52, 5.0, 4.0, INF), (0.51, 2.0, 3.0, 4.0))) == (
        "reproduced", "reproduced", "reproduced")
    # IID 30% off; c = 10 worse on two of three; c = 30 better everywhere
    assert study.verdicts(_losses(prox, (0.65, 5.0, 0.5, 4.0), (0.5, 0.7, 0.8, 1.0))) == (
        "not-reproduced", "inconclusive", "not-reproduced")
    assert study.verdicts(_losses(prox, (INF, 0.1, 0.1, 0.1), (0.5, 0.7, 0.8, 9.0)))[:2] == (
        "not-reproduced", "not-reproduced")
    # the two readings of c disagree: c = 30 worse everywhere, K = 30 better everywhere
    assert study.verdicts(_losses(prox, (0.5, 5.0, 4.0, 4.0), (0.5, 2.0, 3.0, 4.0), k30=(0.5, 0.1, 0.1, 0.1)))[2] == (
        "inconclusive")


def test_both_diverged_is_no_evidence_either_way():
    both = (INF, INF, INF, INF)
    assert study.verdicts(_losses(both, both, both)) == ("inconclusive", "inconclusive", "inconclusive")


def test_loss_jumps():
    assert study.loss_jumps([1.0, 1.4, 2.2, 2.0, float("nan"), 1.0]) == 2  # 1.4 -> 2.2 and -> nan


def test_final_loss_counts_short_or_non_finite_runs_as_infinite(monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 3)
    assert study.final([2.0, 1.0, 0.5, 0.4]) == 0.4
    assert study.final([2.0, 1.0, float("nan")]) == INF  # stopped early
    assert study.final([2.0, 1.0, 0.5, float("nan")]) == INF


def test_short_run_writes_claims_figure_and_records(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 2)
    monkeypatch.setattr(study, "EPOCHS", 1)
    monkeypatch.setattr(study, "DATASETS", ("synthetic_iid", "synthetic_1_1"))
    monkeypatch.setattr(study, "NON_IID", ("synthetic_1_1",))
    calls = spy_simulate(monkeypatch, study)
    claims = study.run(tmp_path, workers=1)
    assert_every_run_recorded(tmp_path, calls)
    assert len(calls) == 2 * len(study.METHODS)
    dane = [(cfg.clients_per_round, alg.gradient_clients) for cfg, alg, _ in calls if hasattr(alg, "gradient_clients")]
    assert sorted(set(dane)) == [(10, 10), (10, 20), (10, 30), (20, 0), (30, 0)]  # both readings of c
    assert [c["id"] for c in claims] == ["fedprox/synthetic-iid/feddane-similar-to-fedprox",
                                         "fedprox/synthetic/feddane-poor-on-non-iid",
                                         "fedprox/synthetic/feddane-more-devices-still-worse"]
    for c in claims:
        assert tuple(c) == CLAIM_KEYS
        json.dumps(c)
    assert (tmp_path / "feddane_synthetic.png").stat().st_size > 0

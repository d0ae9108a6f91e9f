"""Item 1: divergence is a result, never a crash. A run whose loss turns non-finite or leaves the stated bound
(fedbench.engine.metrics.has_diverged) stops, is recorded diverged (summary and MLflow), a warning is printed,
reruns reuse it, and the pipeline goes on to the report."""

import json
import math

import pytest

from tests.faults.conftest import CODE

RUN = ["run", "--dataset", "synthetic_1_1", "--seed", "0", "--set", "train.lr=1000", "--set", "train.rounds=20"]


def _summary(ws, variant):
    return ws.stored("synthetic_1_1", variant, 0.0, 0, **{"train.lr": 1000, "train.rounds": 20})


@pytest.mark.slow
def test_nan_loss_is_recorded_diverged_and_reruns_reuse_it(ws):
    # issue: `fedbench run ... fedprox_mu1 --set train.lr=1000` crashed formatting None, and so did every rerun
    first = ws.fedbench(*RUN, "--algorithm", "fedprox_mu1")
    assert first.returncode == 0, first.stderr[-3000:]
    s = _summary(ws, "fedprox_mu1")
    assert s["diverged"] is True and s["diverged_at_round"] is not None
    assert "warning" in first.stderr and "diverged at round" in first.stderr
    assert "DIVERGED at round" in first.stderr
    again = ws.fedbench(*RUN, "--algorithm", "fedprox_mu1")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "reused" in again.stderr
    (run,) = ws.runs()
    assert run.info.status == "FINISHED" and run.data.tags["diverged"] == "True"
    assert run.data.tags["diverged_at_round"] == str(s["diverged_at_round"])


def test_finite_loss_beyond_the_bound_is_diverged(ws):
    # issue: FedAvg at lr 1000 climbed to a loss of 37,170 and was recorded diverged=False with no warning
    proc = ws.fedbench(*RUN, "--algorithm", "fedavg", "--no-track")
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = _summary(ws, "fedavg")
    assert s["diverged"] is True and "diverged at round" in proc.stderr
    assert len(s["history"]) == s["diverged_at_round"] + 1 < 21  # the run stopped at the round it diverged
    assert s["reporting_reason"] == "diverged" and s["reporting_round"] == s["diverged_at_round"] - 1


def test_the_rule_and_its_bound():
    import sys

    sys.path.insert(0, str(CODE))
    from fedbench.divergence import DIVERGENCE_FACTOR, has_diverged, reporting_round

    assert has_diverged([2.3, float("nan")]) and has_diverged([2.3, math.inf])
    assert has_diverged([2.3, 2.3 * DIVERGENCE_FACTOR + 1]) and not has_diverged([2.3, 2.3 * DIVERGENCE_FACTOR])
    assert not has_diverged([0.001, 900.0])  # the bound is relative to max(|f_0|, 1)
    assert reporting_round([2.3, 2.0, 1e5]) == (2, "diverged")
    assert reporting_round([2.3, 2.0, 1.5]) == (2, "round budget")


@pytest.mark.slow
def test_diverged_runs_go_through_the_dvc_stages_and_the_claims(ws):
    # issue: the same lr through `dvc repro` failed the train stage; the claims must read a diverged run as their
    # rules say (partial work: a diverged run counts as infinite loss; accuracy: read before it diverged)
    ws.write_params(lambda raw: raw["train"].update(lr=1000.0, rounds=6))
    assert ws.fedbench("generate").returncode == 0
    stage = ws.fedbench_script("main_job")  # the main job's study: every run of the stragglers grid, then its claims
    assert stage.returncode == 0, stage.stderr[-3000:]
    report = ws.fedbench("report")
    assert report.returncode == 0, report.stderr[-3000:]
    claims = {c["id"]: c for c in json.loads((ws.path / "reports/claims.json").read_text())["claims"]}
    partial = claims["fedprox/synthetic-1-1/partial-work"]["reproduced"]
    assert all(partial[level][k] == ["inf"] for level in ("50% stragglers", "90% stragglers")  # infinite loss
               for k in ("fedprox_mu0", "fedavg"))
    gain = claims["fedprox/synthetic-1-1/stragglers-90/accuracy-gain"]
    assert gain["verdict"] in {"reproduced", "not-reproduced", "inconclusive"}  # read before divergence

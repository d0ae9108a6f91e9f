"""The claim rules on hand-made run tables: each can come out reproduced, not-reproduced or not-run."""

import numpy as np
import pandas as pd
import pytest

from fedbench.config import load_config
from fedbench.report.claims import (
    HETERO,
    accuracy_gain,
    dissimilarity_tracks_loss,
    heterogeneity_hurts,
    iid_robust,
    partial_work,
)

CFG = load_config("params.yaml", {"train.seeds": [0, 1, 2], "train.rounds": 10})


def _runs(loss_of, acc_of=lambda *a: 0.5, dis_of=lambda *a: 1.0):
    """History and summary tables where run (dataset, variant, stragglers, seed) has a constant loss."""
    rows, summ = [], []
    for ds in HETERO:
        for v in ("fedavg", "fedprox_mu0", "fedprox_mu1"):
            for f in (0.0, 0.5, 0.9):
                for s in CFG.train.seeds:
                    loss, acc = loss_of(ds, v, f, s), acc_of(ds, v, f, s)
                    for r in range(11):
                        rows.append({"dataset": ds, "variant": v, "stragglers": f, "seed": s, "round": r,
                                     "train/loss": loss + (10 - r) * 0.01, "test/accuracy": acc,
                                     "train/dissimilarity": dis_of(ds, v, f, s)})
                    summ.append({"dataset": ds, "variant": v, "stragglers": f, "seed": s,
                                 "reporting_accuracy": acc, "reporting_round": 10, "reporting_reason": "round budget"})
    return pd.DataFrame(rows), pd.DataFrame(summ)


def test_accuracy_gain_verdicts():
    hist, summ = _runs(lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.8 if v == "fedprox_mu1" else 0.5)
    e = accuracy_gain(CFG, hist, summ)
    assert e["verdict"] == "reproduced" and e["reproduced"]["value"]["mean"] == pytest.approx(30.0)
    hist, summ = _runs(lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.4 if v == "fedprox_mu1" else 0.5)
    assert accuracy_gain(CFG, hist, summ)["verdict"] == "not-reproduced"
    hist, summ = _runs(lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.52 if v == "fedprox_mu1" else 0.5)
    assert accuracy_gain(CFG, hist, summ)["verdict"] == "inconclusive"
    e = accuracy_gain(CFG, hist[hist["variant"] != "fedavg"], summ[summ["variant"] != "fedavg"])
    assert e["verdict"] == "not-run" and "missing runs: fedavg on synthetic_1_1 at 90% stragglers" in e["observed"]


def test_partial_work_verdicts():
    hist, summ = _runs(lambda ds, v, f, s: 1.0 if v == "fedprox_mu0" else 2.0)
    assert partial_work(CFG, hist, summ)["verdict"] == "reproduced"
    hist, summ = _runs(lambda ds, v, f, s: 3.0 if v == "fedprox_mu0" else 2.0)
    assert partial_work(CFG, hist, summ)["verdict"] == "not-reproduced"
    hist, summ = _runs(lambda ds, v, f, s: (1.0 if s else 3.0) if v == "fedprox_mu0" else 2.0)
    assert partial_work(CFG, hist, summ)["verdict"] == "inconclusive"


def test_heterogeneity_and_dissimilarity_verdicts():
    level = {d: i for i, d in enumerate(HETERO)}
    loss = lambda ds, v, f, s: 1.0 + level[ds] - (0.5 if v == "fedprox_mu1" and level[ds] else 0.0)
    dis = lambda ds, v, f, s: 1.0 + level[ds] - (0.2 if v == "fedprox_mu1" and level[ds] else 0.0)
    hist, summ = _runs(loss, dis_of=dis)
    assert heterogeneity_hurts(CFG, hist, summ)["verdict"] == "reproduced"
    assert dissimilarity_tracks_loss(CFG, hist, summ)["verdict"] == "reproduced"
    # mu=1 lowers the loss but raises the dissimilarity: part B fails everywhere
    hist, summ = _runs(loss, dis_of=lambda ds, v, f, s: 1.0 + level[ds] + (0.2 if v == "fedprox_mu1" else 0.0))
    assert dissimilarity_tracks_loss(CFG, hist, summ)["verdict"] == "not-reproduced"
    # loss no longer increases with heterogeneity
    hist, summ = _runs(lambda ds, v, f, s: 4.0 - level[ds], dis_of=dis)
    assert heterogeneity_hurts(CFG, hist, summ)["verdict"] == "not-reproduced"


def test_iid_robust_verdicts():
    hist, summ = _runs(lambda ds, v, f, s: 1.0 + 0.01 * f)
    assert iid_robust(CFG, hist, summ)["verdict"] == "reproduced"
    hist, summ = _runs(lambda ds, v, f, s: 1.0 + f)
    e = iid_robust(CFG, hist, summ)
    assert e["verdict"] == "not-reproduced" and "read after 10 rounds" in e["observed"]
    # tail loss = loss + mean of the last five offsets (0.04 .. 0.0) = loss + 0.02
    assert np.isclose(e["reproduced"]["value"]["stragglers 90%"]["mean"], 100 * (1.92 / 1.02 - 1), atol=1e-3)

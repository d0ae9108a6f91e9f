"""Mime synthetic study: the rule on made-up outcomes and a shortened run."""

from __future__ import annotations

import json

from fedbench.studies import CLAIM_KEYS
from fedbench.studies import mime_synthetic as study
from tests.studies import assert_every_run_recorded, spy_simulate


def test_rule():
    def verdict(mime, lite, fedavgm):
        return study.verdict({"Mime (SGDm)": mime, "MimeLite (SGDm)": lite, "FedAvg + server momentum": fedavgm})

    assert verdict([0.4, 0.5], [0.45, 0.55], [0.5, 0.6]) == "reproduced"
    assert verdict([0.4, 0.65], [0.45, 0.55], [0.5, 0.6]) == "inconclusive"  # below on the mean, not every seed
    assert verdict([0.6, 0.7], [0.45, 0.55], [0.5, 0.6]) == "not-reproduced"
    assert verdict([0.4, 0.5], [float("inf"), 0.5], [0.5, 0.6]) == "not-reproduced"  # MimeLite diverged once


def test_short_run_writes_claim_and_figure(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "ROUNDS", 6)
    monkeypatch.setattr(study, "LR_GRID", (0.003, 0.01))
    monkeypatch.setattr(study, "SEEDS", (0,))
    calls = spy_simulate(monkeypatch, study)
    (c,) = study.run(tmp_path)
    assert_every_run_recorded(tmp_path, calls)
    assert tuple(c) == CLAIM_KEYS and c["id"] == "mime/synthetic-1-1/momentum-helps"
    json.dumps(c)
    assert set(c["reproduced"]["best_lr"]) == set(study.METHODS)
    assert (tmp_path / "mime_synthetic.png").stat().st_size > 0

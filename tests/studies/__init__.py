"""Helpers of the study tests: see that a study records every simulation it runs, and check claim entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fedbench.studies
from fedbench.studies import CLAIM_KEYS, FIDELITIES, VERDICTS
from fedbench.studies.record import read_simulations


def spy_simulate(monkeypatch, study=None) -> list[tuple[Any, Any, Any]]:
    """Make every study simulation (fedbench.studies.run_simulations -> _simulate) keep (cfg, algorithm, result)
    of each call. Calls are seen in this process only: run the study with ``workers=1``."""
    calls = []
    real = fedbench.studies._simulate

    def simulate(cfg, dataset, model, algorithm, *args, **kwargs):
        result = real(cfg, dataset, model, algorithm, *args, **kwargs)
        calls.append((cfg, algorithm, result))
        return result

    monkeypatch.setattr(fedbench.studies, "_simulate", simulate)
    return calls


def assert_every_run_recorded(out_dir: Path, calls: list[tuple[Any, Any, Any]]) -> None:
    """simulations.jsonl holds one record per simulate() call, in call order, with that call's params and result."""
    records = read_simulations(out_dir)
    assert len(records) == len(calls) > 0
    for rec, (cfg, algorithm, result) in zip(records, calls):
        p = rec["params"]
        lr = p.get("lr", p.get("scaffold.lr"))
        assert (p["rounds"], p["seed"], p["clients_per_round"], lr) == (cfg.rounds, cfg.seed, cfg.clients_per_round,
                                                                        algorithm.lr)
        assert rec["param_digest"] == result.param_digest and rec["device"] == result.device
        assert rec["seconds"] >= 0
        for values in rec["history"].values():  # per round (engine metrics also have the final evaluation)
            assert len(result.history) - 1 <= len(values) <= len(result.history)


def assert_valid_entries(claims: list[dict[str, Any]]) -> None:
    """Every entry has exactly the claim keys, valid labels and a JSON form."""
    for c in claims:
        assert tuple(c) == CLAIM_KEYS
        assert c["verdict"] in VERDICTS and c["fidelity"] in FIDELITIES
        assert set(c["seeds"]) == {"training", "data"}
        if c["verdict"] != "not-run":
            assert c["effect"] is not None and c["would_change"] and c["sensitivity"]
        json.dumps(fedbench.studies.plain(c), allow_nan=False)

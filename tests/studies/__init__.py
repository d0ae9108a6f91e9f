"""Helpers of the study tests: see that a study records every simulation it runs, and check claim entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import fedbench.study.runner
from fedbench.claims.entry import CLAIM_KEYS, FIDELITIES, VERDICTS, plain
from fedbench.study.record import read_simulations


def spy_simulate(monkeypatch, study=None) -> list[tuple[Any, Any, Any]]:
    """Make every study simulation (fedbench.study.runner.run_simulations -> _simulate_stack) keep (cfg, algorithm,
    result) of each run. Runs are seen in this process only: run the study with ``workers=1``."""
    calls = []
    real = fedbench.study.runner._simulate_stack

    def simulate_stack(model, specs):
        results = real(model, specs)
        calls.extend((spec.cfg, spec.algorithm, result) for spec, result in zip(specs, results))
        return results

    monkeypatch.setattr(fedbench.study.runner, "_simulate_stack", simulate_stack)
    return calls


def assert_every_run_recorded(out_dir: Path, calls: list[tuple[Any, Any, Any]]) -> None:
    """simulations.jsonl holds one record per simulated run (in any order: runs are stacked), each with its run's
    params and result."""
    records = read_simulations(out_dir)
    assert len(records) == len(calls) > 0

    def key_of_record(rec):
        p = rec["params"]
        return p["rounds"], p["seed"], p["clients_per_round"], p.get("lr", p.get("scaffold.lr")), rec["param_digest"]

    left = [(cfg.rounds, cfg.seed, cfg.clients_per_round, algorithm.lr, result.param_digest, result)
            for cfg, algorithm, result in calls]
    for rec in records:
        match = next(i for i, c in enumerate(left) if c[:5] == key_of_record(rec))
        result = left.pop(match)[5]
        assert rec["device"] == result.device and rec["seconds"] >= 0
        for values in rec["history"].values():  # per round (engine metrics also have the final evaluation)
            assert len(result.history) - 1 <= len(values) <= len(result.history)
    assert not left


def assert_valid_entries(claims: list[dict[str, Any]]) -> None:
    """Every entry has exactly the claim keys, valid labels and a JSON form."""
    for c in claims:
        assert tuple(c) == CLAIM_KEYS
        assert c["verdict"] in VERDICTS and c["fidelity"] in FIDELITIES
        assert set(c["seeds"]) == {"training", "data"}
        if c["verdict"] != "not-run":
            assert c["effect"] is not None and c["would_change"] and c["sensitivity"]
        json.dumps(plain(c), allow_nan=False)

"""Helpers of the study tests: see that a study records every simulation it runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedbench.studies.record import read_simulations


def spy_simulate(monkeypatch, study) -> list[tuple[Any, Any, Any]]:
    """Make ``study.simulate`` keep (cfg, algorithm, result) of every call (in this process)."""
    calls = []
    real = study.simulate

    def simulate(cfg, dataset, model, algorithm, *args, **kwargs):
        result = real(cfg, dataset, model, algorithm, *args, **kwargs)
        calls.append((cfg, algorithm, result))
        return result

    monkeypatch.setattr(study, "simulate", simulate)
    return calls


def assert_every_run_recorded(out_dir: Path, calls: list[tuple[Any, Any, Any]]) -> None:
    """simulations.jsonl holds one record per simulate() call, in call order, with that call's params and result."""
    records = read_simulations(out_dir)
    assert len(records) == len(calls) > 0
    for rec, (cfg, algorithm, result) in zip(records, calls):
        p = rec["params"]
        assert (p["rounds"], p["seed"], p["clients_per_round"], p["lr"]) == (cfg.rounds, cfg.seed,
                                                                            cfg.clients_per_round, algorithm.lr)
        assert rec["param_digest"] == result.param_digest and rec["device"] == result.device
        for values in rec["history"].values():  # per round (engine metrics also have the final evaluation)
            assert len(result.history) - 1 <= len(values) <= len(result.history)

"""A claim study's simulation checkpoints into its study's outcome folder (fedbench.study.reuse.OutcomeStore) every
``checkpoint_every`` rounds (fedbench.study.runner.sim_config: a tenth of its rounds, at least 50 apart) and an
interrupted one resumes from there, saying so, with the numbers of an uninterrupted run; a traced simulation does
not checkpoint, and a checkpoint of a fingerprint the study no longer uses is pruned with its outcomes."""

from __future__ import annotations

import dataclasses
import json

import pytest

import fedbench.engine.simulation as engine
from fedbench.algorithms import FedAvg
from fedbench.study.runner import STORE, run_simulations, sim_config
from fedbench.study.reuse import OutcomeStore
from fedbench.studies import fedlaavg_example1
from fedbench.study import reuse
from fedbench.study.runner import Simulation

CLOCK = ("wall_time_s", "eval_time_s")


def _sim(rounds: int = 120, trace: bool = False) -> Simulation:
    base = fedlaavg_example1.config(0.1)
    cfg = sim_config(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)
                        if f.name not in ("rounds", "checkpoint_every")}, rounds=rounds)
    return Simulation(name="fedavg/checkpointed", config=cfg, dataset=fedlaavg_example1._dataset,
                      model=fedlaavg_example1.simulation(FedAvg(lr=0.1), 0.1).model, algorithm=FedAvg(lr=0.1),
                      trace=trace)


def _run(folder, sims):
    store = OutcomeStore(folder)
    token = STORE.set(store)
    try:
        return run_simulations(sims, workers=1, progress=False), store
    finally:
        STORE.reset(token)


def _numbers(outcome) -> str:
    return json.dumps([{k: v for k, v in row.items() if k not in CLOCK} for row in outcome.history])


def test_the_cadence_is_a_tenth_of_the_rounds_at_least_50_apart():
    assert sim_config(rounds=120).checkpoint_every == 50
    assert sim_config(rounds=70_000).checkpoint_every == 7_000
    assert sim_config(rounds=200, checkpoint_every=5).checkpoint_every == 5  # a study may set its own


def test_an_interrupted_simulation_resumes_from_its_checkpoint_with_the_same_numbers(tmp_path, monkeypatch, capsys):
    sim = _sim()
    whole, _ = _run(tmp_path / "whole", [sim])
    assert not list((tmp_path / "whole").glob(".*"))  # the checkpoint went when the run finished

    save = engine._save_checkpoint
    saved = []

    def save_then_stop(path, round_, *rest):
        save(path, round_, *rest)
        saved.append(round_)
        raise KeyboardInterrupt  # the user stops the study after its first checkpoint

    monkeypatch.setattr(engine, "_save_checkpoint", save_then_stop)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path / "cut", [sim])
    key = OutcomeStore(tmp_path / "cut").key(sim)
    assert saved == [50] and not list((tmp_path / "cut").glob("*.json"))
    assert [p.name for p in (tmp_path / "cut").iterdir()] == [f".{key}{reuse.CHECKPOINT}"]

    monkeypatch.setattr(engine, "_save_checkpoint", save)
    capsys.readouterr()
    resumed, store = _run(tmp_path / "cut", [sim])
    assert "fedbench: resuming fedavg/checkpointed from round 50 of 120" in capsys.readouterr().err
    assert store.computed == 1 and _numbers(resumed[0]) == _numbers(whole[0])
    assert resumed[0].param_digest == whole[0].param_digest
    assert json.dumps(resumed[0].final) == json.dumps(whole[0].final)  # NaN where nothing is measured: as text
    assert [p.name for p in (tmp_path / "cut").iterdir()] == [f"{key}.json"]  # the checkpoint went


def test_a_traced_simulation_has_no_checkpoint_and_stale_checkpoints_are_pruned(tmp_path):
    store = OutcomeStore(tmp_path)
    plain, traced = _sim(), _sim(trace=True)
    assert store.checkpoint(plain, "abc") == tmp_path / f".abc{reuse.CHECKPOINT}"
    assert store.checkpoint(traced, "abc") is None
    for key in ("kept", "gone"):
        (tmp_path / f".{key}{reuse.CHECKPOINT}").write_bytes(b"x")
    reuse.prune(tmp_path, {"kept"})
    assert [p.name for p in tmp_path.iterdir()] == [f".kept{reuse.CHECKPOINT}"]

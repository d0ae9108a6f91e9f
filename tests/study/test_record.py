"""Simulation records: params from the algorithm, config and knobs; compact floats; the JSONL round trip;
run_claim_study refusing a study that records nothing; and a rerun whose numbers are all the same leaving the
committed files byte-identical (issue 29.6: only the wall times differed, and git diff showed them)."""

from __future__ import annotations

import itertools
import json
import shutil
import sys
import time
import types
from types import SimpleNamespace

import numpy as np
import pytest

from fedbench.algorithms import FedAvg, FedLaAvg
from fedbench.availability import AvailabilityConfig
from fedbench.engine.simulation import SimulationConfig
import fedbench.study.output as output
import fedbench.study.runner as runner
from fedbench.studies import delta_fl_triangle
from fedbench.study import reuse
from fedbench.study.output import run_claim_study
from fedbench.study.record import (SIMULATIONS, add_fingerprints, compact, drop_fingerprints, keep_seconds,
                                     keep_simulation_seconds, params, read_simulations, record, write_simulations)


def test_params_take_algorithm_config_and_knobs():
    cfg = SimulationConfig(rounds=7, seed=3, device="cpu")
    p = params(cfg, FedAvg(lr=0.1), G=10.0)
    assert p["algorithm"] == "FedAvg" and p["lr"] == 0.1 and p["rounds"] == 7 and p["seed"] == 3 and p["G"] == 10.0
    assert "device" not in p and "keeps_partial_work" not in p and p["availability.model"] == "always"
    diurnal = SimulationConfig(availability=AvailabilityConfig(model="diurnal", period=8, beta=0.25, groups=(0, 1)))
    p = params(diurnal, FedLaAvg(lr=0.1))
    assert (p["availability.period"], p["availability.beta"], p["availability.groups"]) == (8, 0.25, (0, 1))
    with pytest.raises(ValueError, match="clash"):
        params(cfg, FedAvg(lr=0.1), seed=4)


def test_record_keeps_six_digits_and_writes_one_line_per_run(tmp_path):
    final = SimpleNamespace(scalars=lambda: {"train/loss": 0.123456789, "test/accuracy": float("nan")})
    result = SimpleNamespace(history=[{"train/loss": 1 / 3, "test/accuracy": 0.5}, {"train/loss": np.float32(0.25),
                                                                                   "test/accuracy": float("inf")}],
                             final=final, diverged=False, param_digest="abc", device="cpu")
    rec = record("fedavg/seed=0", {"lr": 0.1}, result, series={"model/w": np.array([3.0, 2.0])},
                 metrics={"study/rounds_to_target": None})
    assert rec["history"] == {"train/loss": [0.333333, 0.25], "test/accuracy": [0.5, None], "model/w": [3.0, 2.0]}
    assert rec["final"] == {"train/loss": 0.123457, "test/accuracy": None}
    assert rec["metrics"] == {"study/rounds_to_target": None}
    assert compact(123456789.0) == 123457000.0 and compact(-1.5e-9) == -1.5e-9
    write_simulations(tmp_path, [rec, rec | {"name": "fedavg/seed=1"}])
    assert len((tmp_path / SIMULATIONS).read_text().splitlines()) == 2
    assert read_simulations(tmp_path) == [rec, rec | {"name": "fedavg/seed=1"}]
    with pytest.raises(ValueError, match="repeat"):
        write_simulations(tmp_path, [rec, rec])


def test_a_study_without_the_three_hooks_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    fake = types.ModuleType("fedbench.studies.fake_study")
    fake.run = lambda out_dir: []  # a study's own run(), as before the contract: never called
    monkeypatch.setitem(sys.modules, "fedbench.studies.fake_study", fake)
    with pytest.raises(ValueError, match="^study fake_study: its module states no simulations, measure and figure"):
        run_claim_study("fake_study", tmp_path / "fake_study")
    assert list(tmp_path.iterdir()) == []


def test_seconds_are_kept_where_nothing_else_changed():
    before = {"name": "a", "history": {"train/loss": [1.0, 0.5]}, "seconds": 3.25}
    assert keep_seconds(before, before | {"seconds": 9.0}) == before  # only the wall time differs: kept
    changed = before | {"history": {"train/loss": [1.0, 0.4]}, "seconds": 9.0}
    assert keep_seconds(before, changed) == changed  # a number changed: this run's seconds go with it
    assert keep_seconds(None, changed) == changed
    assert keep_seconds(before, {"name": "a", "history": before["history"]}) == {"name": "a", "history": before["history"]}
    study = {"study": "s", "seconds": 1.5, "workers": 2, "claims": [{"verdict": "reproduced"}]}
    assert keep_seconds(study, study | {"seconds": 9.0, "workers": 1}) == study  # timed on 1 worker: still timing
    judged = study | {"seconds": 9.0, "workers": 1, "claims": [{"verdict": "refuted"}]}
    assert keep_seconds(study, judged) == judged
    # a fingerprint says what computed a record, not what it computed: another one keeps the seconds, and the new
    # record keeps its own fingerprint
    named = before | {"fingerprint": "00000000000000aa"}
    assert keep_seconds(named, named | {"seconds": 9.0, "fingerprint": "00000000000000bb"}) == named | {
        "fingerprint": "00000000000000bb"}


def test_fingerprints_are_added_by_name_and_left_out_of_the_committed_copy(tmp_path):
    runs = [{"name": n, "final": {"train/loss": 0.5}, "seconds": 1.0} for n in ("a", "b", "a+b")]
    write_simulations(tmp_path, runs)
    assert add_fingerprints(tmp_path, {"a": "00000000000000aa", "b": "00000000000000bb"}) == 2
    assert [r.get("fingerprint") for r in read_simulations(tmp_path)] == ["00000000000000aa", "00000000000000bb", None]
    drop_fingerprints(tmp_path)
    assert read_simulations(tmp_path) == runs


def test_a_changed_record_alone_takes_its_new_seconds(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    runs = [{"name": n, "final": {"train/loss": 0.5}, "seconds": 1.0} for n in ("a", "b")]
    write_simulations(old, runs)
    write_simulations(new, [r | {"seconds": 2.0} for r in runs])
    assert keep_simulation_seconds(old, new) is True
    assert (new / SIMULATIONS).read_bytes() == (old / SIMULATIONS).read_bytes()
    write_simulations(new, [runs[0] | {"seconds": 2.0}, runs[1] | {"final": {"train/loss": 0.25}, "seconds": 2.0}])
    assert keep_simulation_seconds(old, new) is False
    assert read_simulations(new) == [runs[0], runs[1] | {"final": {"train/loss": 0.25}, "seconds": 2.0}]
    write_simulations(new, [runs[0] | {"seconds": 2.0}])  # a run dropped: not every record is the same
    assert keep_simulation_seconds(old, new) is False and read_simulations(new) == [runs[0]]


def test_a_study_rerun_with_other_wall_times_leaves_its_tracked_files_byte_identical(tmp_path, monkeypatch, capsys):
    """delta_fl_triangle (5 simulations, at 20 rounds, not its 200: what is checked does not depend on them) run
    twice, the second time computing every run again (its outcomes removed, as in a fresh clone, where they are not
    committed) on a clock 100 s slower per reading: every wall time differs, so only the kept seconds can make the
    files equal."""
    monkeypatch.setattr(delta_fl_triangle, "ROUNDS", 20)
    run_claim_study("delta_fl_triangle", tmp_path / "delta_fl_triangle", workers=1)
    folder = tmp_path / "delta_fl_triangle"
    tracked = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}  # the outcomes/ folder is not
    assert sorted(tracked) == ["claims.json", "delta_fl_triangle.png", SIMULATIONS]
    shutil.rmtree(folder / reuse.OUTCOMES)
    readings = itertools.count(1)
    clock = SimpleNamespace(perf_counter=lambda: time.perf_counter() + 100 * next(readings))
    monkeypatch.setattr(output, "time", clock)  # the study's seconds
    monkeypatch.setattr(runner, "time", clock)  # each simulation's (the one runner times its stacks)
    capsys.readouterr()
    run_claim_study("delta_fl_triangle", tmp_path / "delta_fl_triangle", workers=1)
    out = capsys.readouterr().out
    assert "0 of 5 simulations reused" in out  # every run computed again
    assert "delta_fl_triangle: every number as in the previous run, whose recorded seconds are kept" in out
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == tracked

    # a number that changes takes this run's seconds with it, in the record and in claims.json
    (folder / SIMULATIONS).write_text((folder / SIMULATIONS).read_text().replace('"diverged":false', '"diverged":true', 1))
    shutil.rmtree(folder / reuse.OUTCOMES)
    run_claim_study("delta_fl_triangle", tmp_path / "delta_fl_triangle", workers=1)
    first = [json.loads(line) for line in tracked[SIMULATIONS].decode().splitlines()]
    after = read_simulations(folder)
    assert after[0]["seconds"] != first[0]["seconds"]  # (the clock reads at least 100 s more)
    assert [r["seconds"] for r in after[1:]] == [r["seconds"] for r in first[1:]]
    assert json.loads((folder / "claims.json").read_text())["seconds"] >= 100 + json.loads(tracked["claims.json"])["seconds"]

"""Issue 19.2 C: a claim study's simulation whose fingerprint (settings, data, code) matches a finished outcome in the
study's folder is read back, not rerun, with bit-identical numbers; a changed arm reruns alone; nothing
half-written is read as finished."""

import dataclasses
import json

import numpy as np
import pytest

import fedbench.study.runner as runner
from fedbench.algorithms import FedAvg, FedLaAvg
from fedbench.study.runner import STORE, run_simulations
from fedbench.study.reuse import OutcomeStore
from fedbench.studies import delta_fl_triangle, fedlaavg_example1
from fedbench.study import reuse
from fedbench.study.output import run_claim_study


def _sims(etas=(0.2, 0.1)):
    """FedAvg and FedLaAvg on FedLaAvg's Example 1 at step sizes ``etas``: large ones, whose runs are short (the
    rounds the study runs grow as 1 / eta)."""
    return [fedlaavg_example1.simulation(make(lr=eta), eta) for eta in etas for make in (FedAvg, FedLaAvg)]


def _exact(rows) -> str:
    """Values and their Python types, NaN included (NaN != NaN, so rows are compared as text: repr is exact)."""
    return json.dumps(rows) + repr([[type(v).__name__ for v in row.values()] for row in rows])


CLOCK = ("wall_time_s", "eval_time_s")  # timings: the only history values a rerun changes


def _numbers(rows) -> str:
    return _exact([{k: v for k, v in r.items() if k not in CLOCK} for r in rows])


def _same(a, b) -> None:
    assert a.name == b.name and _exact(a.history) == _exact(b.history) and _exact([a.final]) == _exact([b.final])
    assert a.diverged == b.diverged
    assert a.param_digest == b.param_digest and a.device == b.device and a.seconds == b.seconds
    np.testing.assert_array_equal(a.models, b.models)  # float64, bit for bit
    np.testing.assert_array_equal(a.device_accuracy, b.device_accuracy)  # NaN where a client has no test data
    np.testing.assert_array_equal(a.device_train_loss, b.device_train_loss)  # NaN where a client has no train data


@pytest.fixture
def counted(monkeypatch):
    """The names of the simulations actually computed (one worker: the stacks run in this process)."""
    computed = []
    run_stack = runner._run_stack

    def counting(job):
        computed.extend(s.name for s in job.sims)
        return run_stack(job)

    monkeypatch.setattr(runner, "_run_stack", counting)
    return computed


def _run(folder, sims):
    store = OutcomeStore(folder)
    token = STORE.set(store)
    try:
        return run_simulations(sims, workers=1), store
    finally:
        STORE.reset(token)


def test_second_run_computes_nothing_and_a_changed_arm_reruns_alone(tmp_path, counted):
    sims = _sims()
    first, store = _run(tmp_path, sims)
    assert (store.computed, store.reused, len(counted)) == (4, 0, 4)
    assert len(list(tmp_path.glob("*.json"))) == 4 and not list(tmp_path.glob(".*"))

    counted.clear()
    again, store = _run(tmp_path, sims)
    assert (store.computed, store.reused, counted) == (0, 4, [])
    for a, b in zip(first, again):
        _same(a, b)

    changed = list(sims)  # one arm's setting changes (its rounds): only it reruns
    changed[1] = dataclasses.replace(sims[1], config=dataclasses.replace(sims[1].config, rounds=sims[1].config.rounds - 2))
    counted.clear()
    mixed, store = _run(tmp_path, changed)
    assert (store.computed, store.reused, counted) == (1, 3, [sims[1].name])
    for i in (0, 2, 3):
        _same(mixed[i], first[i])
    alone = run_simulations([changed[1]], workers=1)[0]  # no store: computed from scratch
    assert _numbers(mixed[1].history) == _numbers(alone.history)
    assert mixed[1].param_digest == alone.param_digest
    np.testing.assert_array_equal(mixed[1].models, alone.models)
    assert len(mixed[1].history) == len(first[1].history) - 2


def test_labels_are_not_settings_but_code_is(tmp_path, counted):
    sims = _sims((0.2,))
    _run(tmp_path, sims)
    renamed = [dataclasses.replace(s, name=s.name + "/again", knobs={"label": 1}) for s in sims]
    counted.clear()
    out, store = _run(tmp_path, renamed)
    assert store.reused == 2 and counted == [] and out[0].name == renamed[0].name
    digest = sims[0].dataset().content_hash
    assert reuse.fingerprint(sims[0], digest, "code-a") != reuse.fingerprint(sims[0], digest, "code-b")
    assert reuse.fingerprint(sims[0], digest, "a") != reuse.fingerprint(sims[0], digest + "x", "a")


def test_how_often_a_run_checkpoints_is_not_a_setting_but_what_it_evaluates_is():
    """The one fingerprint leaves out checkpoint_every (it changes no number: resume == uninterrupted, bit for bit),
    and keeps every other field of the SimulationConfig, the dissimilarity's cadence included (it changes the
    history)."""
    (sim,) = _sims((0.2,))[:1]
    digest = sim.dataset().content_hash
    again = dataclasses.replace(sim, config=dataclasses.replace(sim.config, checkpoint_every=7))
    other = dataclasses.replace(sim, config=dataclasses.replace(sim.config, dissimilarity_every=3))
    assert reuse.fingerprint(again, digest, "a") == reuse.fingerprint(sim, digest, "a")
    assert reuse.fingerprint(other, digest, "a") != reuse.fingerprint(sim, digest, "a")


def test_half_written_outcomes_are_recomputed_never_read(tmp_path, counted, capsys):
    sims = _sims((0.2,))
    first, _ = _run(tmp_path, sims)
    assert "corrupt" not in capsys.readouterr().err  # none stored yet: nothing to say
    files = sorted(tmp_path.glob("*.json"))
    files[0].write_text(files[0].read_text()[:100])  # a truncated file (a crash mid-write without the rename)
    with pytest.raises(ValueError) as cut:  # what the JSON parser says of the cut file: the line's reason
        json.loads(files[0].read_text())
    (tmp_path / f".{files[1].stem}.abc.tmp").write_text("{}")  # a temporary file a crash left behind
    counted.clear()
    again, store = _run(tmp_path, sims)
    assert store.computed == 1 and len(counted) == 1
    err = capsys.readouterr().err.splitlines()  # one line says which file and why (issue 29.6: it said nothing)
    assert err == [f"fedbench: outcome {files[0]} was corrupt (not JSON: {cut.value}); recomputing"]
    for a, b in zip(first, again):
        assert _numbers(a.history) == _numbers(b.history) and a.param_digest == b.param_digest
    reuse.prune(tmp_path, store.used)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in files)


@pytest.mark.parametrize("body, reason", [
    ('{"format": 0}', "format 0, expected 1"),
    ("[1, 2]", "format None, expected 1"),
    ('{"format": 1, "history": []}', "no final, diverged, param_digest, device, seconds, models, device_accuracy, "
                                     "device_train_loss"),
])
def test_an_outcome_file_that_is_json_but_not_an_outcome_is_named_and_recomputed(tmp_path, capsys, body, reason):
    (tmp_path / "0123456789abcdef.json").write_text(body)
    assert reuse.load(tmp_path, "0123456789abcdef") is None
    assert capsys.readouterr().err == (f"fedbench: outcome {tmp_path / '0123456789abcdef.json'} was corrupt ({reason}); "
                                       "recomputing\n")
    assert reuse.load(tmp_path, "fedcba9876543210") is None and capsys.readouterr().err == ""  # none stored: silent


def test_study_folder_keeps_exactly_its_outcomes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(delta_fl_triangle, "ROUNDS", 20)  # its 5 simulations at 20 rounds, not 200
    claims = run_claim_study("delta_fl_triangle", tmp_path / "delta_fl_triangle", workers=1)
    folder = tmp_path / "delta_fl_triangle"
    kept = sorted(p.name for p in (folder / reuse.OUTCOMES).iterdir())
    assert len(kept) == 5 and "0 of 5 simulations reused" in capsys.readouterr().out
    # each record names its simulation's one fingerprint: the name of its outcome file
    records = [json.loads(line) for line in (folder / "simulations.jsonl").read_text().splitlines()]
    assert sorted(f"{r['fingerprint']}.json" for r in records) == kept
    (folder / reuse.OUTCOMES / "0123456789abcdef.json").write_text("{}")  # a run the study no longer declares
    again = run_claim_study("delta_fl_triangle", tmp_path / "delta_fl_triangle", workers=1)
    assert "5 of 5 simulations reused" in capsys.readouterr().out
    assert sorted(p.name for p in (folder / reuse.OUTCOMES).iterdir()) == kept
    assert json.dumps(again) == json.dumps(claims)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left

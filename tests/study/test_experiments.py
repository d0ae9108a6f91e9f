"""params.yaml's experiments as the main job's simulations (fedbench.study.experiments, issue 50 item 1): `fedbench run`'s
runs go through the one runner into the main job study's store and are recorded in the one record format; a reader
finds a run by its params in the records. The numbers are the train store's (the digests below were measured through
fedbench.runner.TrainStore before it was removed), a run the main job ran is read back, not computed, and a resumed run
says from which round."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import fedbench.engine.simulation as engine
from fedbench.config import load_config
from fedbench.data.format import read_meta
from fedbench.pipeline import generate
from fedbench.study import experiments
from fedbench.study.experiments import RunKey, find_run, summary, train, train_runs
from fedbench.study.layout import MAIN_JOB, study_folder
from fedbench.study.record import SIMULATIONS

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"train.rounds": 3, "train.seeds": [0, 1], "train.local_epochs": 2, "train.workers": 1}
# each run's final parameters' digest, computed by the train store's path (fedbench.pipeline.train into
# results/train/, at a75443e) on these settings: the new path must give every one of them
OLD_DIGESTS = {("fedprox_mu1", 0.5, 0): "d07c1a649978fdf9", ("fedprox_mu1", 0.5, 1): "8b51af41b33fa1df",
               ("fedavg", 0.9, 0): "f1a87b80c690b52b", ("fedavg", 0.9, 1): "1ae368f8cb387a6a",
               ("fedprox_mu0", 0.9, 0): "f65ce64aa2a682cc", ("fedprox_mu0", 0.9, 1): "337f09769a4fd37a"}


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    root = tmp_path_factory.mktemp("experiments")
    cfg = load_config(ROOT / "params.yaml", SETTINGS)
    generate(cfg, "synthetic_1_1", root=root / "data")
    done = {}
    for variant, f in dict.fromkeys((v, f) for v, f, _ in OLD_DIGESTS):
        for s in train(cfg, "synthetic_1_1", variant, f, root / "data", root / "results", progress=False):
            done[(variant, f, s["params"]["seed"])] = s
    return cfg, root, done


def _without(s: dict, *keys: str) -> dict:
    return {k: v for k, v in s.items() if k not in keys}


def test_every_run_has_the_train_store_s_numbers_and_is_kept_in_the_main_job_s_store(ran):
    cfg, root, done = ran
    assert {k: s["param_digest"] for k, s in done.items()} == OLD_DIGESTS
    assert not any(s["reused"] for s in done.values())
    store = study_folder(MAIN_JOB, "pipeline", root / "results") / "outcomes"
    assert sorted(p.stem for p in store.glob("*.json")) == sorted(s["fingerprint"] for s in done.values())
    assert not (root / "results" / "train").exists()  # no second store
    s = done[("fedavg", 0.9, 0)]
    assert s["final"]["train/loss"] == s["history"][-1]["train/loss"] and len(s["history"]) == 4  # rounds 0-3
    assert s["reporting_round"] == 3 and s["reporting_reason"] == "round budget" and s["diverged_at_round"] is None
    assert s["params"] == experiments.run_params(cfg, "synthetic_1_1", "fedavg", 0.9, 0)
    assert s["versions"]["torch"] and s["git_commit"]


def test_each_run_is_recorded_by_its_params_and_fingerprint(ran):
    cfg, root, done = ran
    records = [json.loads(line) for line in
               (experiments.runs_folder(root / "results") / SIMULATIONS).read_text().splitlines()]
    assert [(r["name"], r["fingerprint"]) for r in records] == [
        (RunKey("synthetic_1_1", *k).desc, s["fingerprint"]) for k, s in done.items()]
    r = records[2]
    assert r["params"] == done[("fedavg", 0.9, 0)]["params"] and r["param_digest"] == "f1a87b80c690b52b"
    assert set(r["history"]) == {"train/loss", "test/accuracy"} and len(r["history"]["train/loss"]) == 4


def test_a_run_read_back_has_the_summary_of_the_run_computed_and_is_not_recorded_twice(ran):
    cfg, root, done = ran
    for (variant, f, seed), s in done.items():
        found = find_run(cfg, root / "data", root / "results", RunKey("synthetic_1_1", variant, f, seed))
        assert _without(found, "outcome") == _without(s, "reused")
        assert Path(found["outcome"]).name == f"{s['fingerprint']}.json"
    records = experiments.runs_folder(root / "results") / SIMULATIONS
    before = records.read_text()
    again = train(cfg, "synthetic_1_1", "fedavg", 0.9, root / "data", root / "results", progress=False)
    assert [s["reused"] for s in again] == [True, True]
    assert [_without(s, "reused") for s in again] == [_without(done[("fedavg", 0.9, i)], "reused") for i in (0, 1)]
    assert records.read_text().splitlines()[:6] == before.splitlines()  # appended: the earlier records stay


def test_readers_see_only_the_settings_in_force(ran):
    cfg, root, done = ran
    key = RunKey("synthetic_1_1", "fedavg", 0.9, 0)
    other = load_config(ROOT / "params.yaml", SETTINGS | {"train.rounds": 2})
    assert find_run(other, root / "data", root / "results", key) is None  # another setting: not computed
    assert find_run(cfg, root / "nowhere", root / "results", key) is None  # no dataset there
    assert find_run(cfg, root / "data", root / "elsewhere", key) is None


def test_a_record_cut_short_is_skipped_and_a_later_record_wins(tmp_path, ran):
    cfg, root, done = ran
    results = tmp_path / "results"
    folder = experiments.runs_folder(results)
    folder.mkdir(parents=True)
    lines = (experiments.runs_folder(root / "results") / SIMULATIONS).read_text().splitlines()
    later = json.dumps(json.loads(lines[0]) | {"fingerprint": "0123456789abcdef"})
    (folder / SIMULATIONS).write_text("\n".join([lines[0], "not json", lines[1][:40], later]) + "\n")
    assert sorted(fp for fp, _ in experiments.recorded(results).values()) == ["0123456789abcdef"]
    key = RunKey("synthetic_1_1", "fedprox_mu1", 0.5, 0)
    assert find_run(cfg, root / "data", results, key) is None  # named, but its outcome is not there
    experiments._append(folder, [{"name": "x", "params": {"a": 1}, "fingerprint": "f"}])
    (folder / SIMULATIONS).write_text((folder / SIMULATIONS).read_text() + '{"name": "cut')  # a crash mid-append
    experiments._append(folder, [{"name": "y", "params": {"a": 2}, "fingerprint": "g"}])
    assert (folder / SIMULATIONS).read_text().splitlines()[-2:] == ['{"name": "cut', '{"name":"y","params":{"a":2},'
                                                                    '"fingerprint":"g"}']


def test_a_run_the_main_job_study_ran_is_read_back_not_computed(tmp_path, monkeypatch, capsys):
    """One fingerprint: the main job study run by the one driver, then `fedbench run` of one of its experiments,
    which reads every seed back from the study's store and finds it in the study's record."""
    from fedbench.studies import fedprox_main_job as study
    from fedbench.study.output import run_claim_study

    cfg = load_config(ROOT / "params.yaml", {"train.rounds": 1, "train.seeds": [0, 1], "train.local_epochs": 2,
                                             "train.workers": 1, "studies.stragglers.stragglers": [0.0, 0.5]})
    cfg = dataclasses.replace(cfg, studies={"stragglers": dataclasses.replace(
        cfg.studies["stragglers"], datasets=("synthetic_1_1",))})
    generate(cfg, "synthetic_1_1", root=tmp_path / "data")
    monkeypatch.setattr(study, "DATA_ROOT", tmp_path / "data")
    run_claim_study(MAIN_JOB, study_folder(MAIN_JOB, "pipeline", tmp_path / "results"), workers=1, config=cfg)
    recorded = {r["name"]: r for r in map(json.loads, (study_folder(MAIN_JOB, "pipeline", tmp_path / "results")
                                                        / SIMULATIONS).read_text().splitlines())}
    capsys.readouterr()
    again = train(cfg, "synthetic_1_1", "fedprox_mu1", 0.5, tmp_path / "data", tmp_path / "results", progress=False)
    assert "2 of 2 simulations reused" in capsys.readouterr().out
    assert [s["fingerprint"] for s in again] == [recorded[RunKey("synthetic_1_1", "fedprox_mu1", 0.5, i).desc][
        "fingerprint"] for i in (0, 1)]
    found = find_run(cfg, tmp_path / "data", tmp_path / "results", RunKey("synthetic_1_1", "fedavg", 0.0, 1))
    assert found["param_digest"] == recorded["synthetic_1_1 fedavg stragglers=0 seed=1"]["param_digest"]


class Interrupted(Exception):
    """Stands for the kill that stops a run after its first checkpoint is on disk."""


def test_a_resumed_run_says_from_which_round_of_its_checkpoint(tmp_path, monkeypatch, capsys):
    """Issue 29.6: a run restarted after an interruption says, in one line, from which round it resumes, and ends
    with the numbers of an uninterrupted run."""
    key = RunKey("synthetic_1_1", "fedavg", 0.0, 0)
    cfg = load_config(ROOT / "params.yaml", {"train.rounds": 6, "train.checkpoint_every": 2, "train.seeds": [0],
                                             "train.device": "cpu", "train.workers": 1})
    generate(cfg, key.dataset, root=tmp_path / "data")
    whole = train_runs(cfg, [key], tmp_path / "data", tmp_path / "whole", progress=False)[0]
    assert "resuming" not in capsys.readouterr().err  # no checkpoint: nothing to say
    save = engine._save_checkpoint

    def save_then_stop(*args, **kwargs):
        save(*args, **kwargs)
        raise Interrupted

    monkeypatch.setattr(engine, "_save_checkpoint", save_then_stop)
    with pytest.raises(Interrupted):
        train_runs(cfg, [key], tmp_path / "data", tmp_path / "runs", progress=False)
    monkeypatch.setattr(engine, "_save_checkpoint", save)
    (checkpoint,) = (tmp_path / "runs").rglob("*.checkpoint.pt")
    capsys.readouterr()
    resumed = train_runs(cfg, [key], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    lines = [line for line in capsys.readouterr().err.splitlines() if "resuming" in line]
    assert lines == [f"fedbench: resuming synthetic_1_1 fedavg stragglers=0 seed=0 from round 2 of 6 "
                     f"(checkpoint {checkpoint})"]  # checkpoint_every 2: the first one holds rounds 0 and 1
    assert resumed["param_digest"] == whole["param_digest"] and not resumed["reused"]
    assert not checkpoint.exists()  # a finished run removes its checkpoint


def test_a_dataset_made_anew_in_the_same_folder_is_trained_on_anew(tmp_path):
    """Each dataset is loaded once per call (a cached builder keyed by its folder and content hash, the cache
    dropped when the call ends): data regenerated in place (another data.seed) is what the next call trains on."""
    import shutil

    key = RunKey("synthetic_1_1", "fedavg", 0.0, 0)
    settings = {"train.rounds": 2, "train.seeds": [0], "train.device": "cpu", "train.workers": 1}
    first_cfg = load_config(ROOT / "params.yaml", settings)
    generate(first_cfg, key.dataset, root=tmp_path / "data")
    first = train_runs(first_cfg, [key], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    shutil.rmtree(tmp_path / "data" / key.dataset)
    again_cfg = load_config(ROOT / "params.yaml", {**settings, "data.seed": 1})
    folder = generate(again_cfg, key.dataset, root=tmp_path / "data")
    again = train_runs(again_cfg, [key], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    assert again["dataset_hash"] == read_meta(folder)["content_hash"] != first["dataset_hash"]
    assert again["param_digest"] != first["param_digest"] and not again["reused"]
    assert experiments._dataset.cache_info().currsize == 0 and experiments._model.cache_info().currsize == 0


def test_a_diverged_run_is_read_at_the_round_before():
    found = {"history": [{"round": r, "train/loss": v, "test/accuracy": a, "wall_time_s": 0.5}
                         for r, (v, a) in enumerate([(2.0, 0.1), (1.0, 0.4), (np.inf, 0.05)])],
             "final": {"train/loss": np.inf, "test/accuracy": 0.05}, "diverged": True, "param_digest": "d",
             "device": "cpu", "kernel": "mclr", "stack_size": 2, "about": None}
    s = summary(found, {"seed": 0}, "hash", "fp")
    assert s["diverged_at_round"] == 2 and s["reporting_reason"] == "diverged" and s["reporting_round"] == 1
    assert s["reporting_test_accuracy"] == 0.4 and s["best_test_accuracy"] == 0.4 and s["wall_time_s"] == 1.5
    assert s["final"] == {"train/loss": None, "test/accuracy": 0.05}  # not finite: null
    assert s["versions"] == {} and s["git_commit"] == "unknown"  # an outcome that did not say what computed it

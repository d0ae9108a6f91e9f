"""The train stage's store (fedbench.runner.TrainStore, issue 30 item 4): each run an outcome file named by the one
fingerprint (fedbench.study.reuse, as a claim study's simulation) and a line of results/train/index.jsonl naming it by its
settings, data and code, so that readers find it without the engine (find_run). A run read back has the summary of
the run computed; an index line cut short is skipped; a later line for the same settings wins; another code is
another run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedbench.config import load_config
from fedbench.data.format import read_meta
from fedbench.pipeline import generate, train_runs
from fedbench.provenance import TRAIN_RUN_CODE, code_hash
from fedbench.runner import INDEX, RunKey, find_run, outcome_path, read_index, run_files, summary, train_folder

ROOT = Path(__file__).resolve().parents[1]
KEYS = [RunKey("synthetic_1_1", "fedavg", 0.0, 0), RunKey("synthetic_1_1", "fedprox_mu1", 0.5, 1)]
SETTINGS = {"train.rounds": 3, "train.seeds": [0, 1], "train.device": "cpu", "train.workers": 1}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    cfg = load_config(ROOT / "params.yaml", SETTINGS)
    generate(cfg, "synthetic_1_1", root=root / "data")
    computed = train_runs(cfg, KEYS, root / "data", root / "runs", progress=False)
    return cfg, root, computed


def _without(s: dict, *keys: str) -> dict:
    return {k: v for k, v in s.items() if k not in keys}


def test_each_run_is_an_outcome_file_named_in_the_index(trained):
    cfg, root, computed = trained
    lines = [json.loads(x) for x in (train_folder(root / "runs") / INDEX).read_text().splitlines()]
    assert [x["name"] for x in lines] == [k.desc for k in KEYS]  # in the order they finished: one stack here
    assert [x["fingerprint"] for x in lines] == [s["fingerprint"] for s in computed]
    assert all(x["code"] == code_hash(TRAIN_RUN_CODE) and x["params"] == s["params"] for x, s in zip(lines, computed))
    assert all(outcome_path(root / "runs", s["fingerprint"]).is_file() for s in computed)
    assert len({s["fingerprint"] for s in computed}) == 2 and not any(s["reused"] for s in computed)


def test_a_run_read_back_has_the_summary_of_the_run_computed(trained):
    cfg, root, computed = trained
    found = [find_run(cfg, root / "data", root / "runs", k) for k in KEYS]
    assert [_without(f, "reused") for f in found] == [_without(s, "reused") for s in computed]
    again = train_runs(cfg, KEYS, root / "data", root / "runs", progress=False)  # read back, not computed
    assert all(s["reused"] for s in again) and [_without(s, "reused") for s in again] == found
    assert len((train_folder(root / "runs") / INDEX).read_text().splitlines()) == 2  # not indexed twice
    s = computed[0]
    assert s["final"]["train/loss"] == s["history"][-1]["train/loss"] and len(s["history"]) == 4  # rounds 0-3
    assert s["reporting_round"] == 3 and s["reporting_reason"] == "round budget" and s["diverged_at_round"] is None
    assert s["versions"]["torch"] and s["git_commit"]


def test_readers_see_only_the_settings_data_and_code_in_force(trained):
    cfg, root, computed = trained
    other = load_config(ROOT / "params.yaml", SETTINGS | {"train.rounds": 2})
    assert find_run(other, root / "data", root / "runs", KEYS[0]) is None  # another setting: not computed
    assert find_run(cfg, root / "data", root / "runs", KEYS[0], code="another code") is None
    assert find_run(cfg, root / "data", root / "runs", KEYS[0], dataset_hash="another") is None
    assert find_run(cfg, root / "data", root / "nowhere", KEYS[0]) is None


def test_an_index_line_cut_short_is_skipped_and_a_later_line_wins(tmp_path, trained):
    cfg, root, computed = trained
    runs = tmp_path / "runs"
    train_folder(runs).mkdir(parents=True)
    lines = (train_folder(root / "runs") / INDEX).read_text().splitlines()
    first = json.loads(lines[0])
    later = json.dumps(first | {"fingerprint": "0123456789abcdef"})
    (train_folder(runs) / INDEX).write_text("\n".join([lines[0], "not json", lines[1][:40], later]) + "\n")
    index = read_index(runs)
    assert sorted(index.values()) == ["0123456789abcdef"]  # the cut line skipped, the later line for run 0 kept
    assert find_run(cfg, root / "data", runs, KEYS[0]) is None  # named, but its outcome is not there


def test_a_run_indexed_after_a_line_cut_short_is_found(tmp_path, trained):
    """A crash mid-append left the index without its last newline; the next run's line was glued to the fragment,
    unreadable, and its run not found by any reader until indexed again (an interrupt-and-resume audit)."""
    cfg, root, computed = trained
    runs = tmp_path / "runs"
    train_folder(runs).mkdir(parents=True)
    (train_folder(runs) / "outcomes").symlink_to(train_folder(root / "runs") / "outcomes")
    (train_folder(runs) / INDEX).write_text('{"code": "025fb75a7')  # the fragment a crash left
    found = train_runs(cfg, KEYS[:1], root / "data", runs, progress=False)
    assert found[0]["reused"] and (train_folder(runs) / INDEX).read_text().splitlines()[0] == '{"code": "025fb75a7'
    assert _without(find_run(cfg, root / "data", runs, KEYS[0]), "reused") == _without(computed[0], "reused")


def test_run_files_are_what_a_person_opens(tmp_path, trained):
    cfg, root, computed = trained
    s = computed[1]
    files = run_files(root / "runs", root / "data", s, tmp_path / "files")
    assert [f.name for f in files] == ["history.csv", "per_device.csv", "summary.json"]
    meta = read_meta(root / "data" / "synthetic_1_1")
    per_device = pd.read_csv(tmp_path / "files" / "per_device.csv")
    assert list(per_device.columns) == ["client_id", "train_samples", "test_samples", "train_loss", "test_accuracy"]
    assert list(per_device.client_id) == meta["client_ids"]
    assert per_device.train_samples.sum() == meta["train_samples"] and per_device.test_samples.sum() == meta["test_samples"]
    history = pd.read_csv(tmp_path / "files" / "history.csv")
    assert len(history) == len(s["history"]) and history["train/loss"].tolist() == [r["train/loss"] for r in s["history"]]
    body = json.loads((tmp_path / "files" / "summary.json").read_text())
    assert "history" not in body and body["fingerprint"] == s["fingerprint"] and body["final"] == s["final"]


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

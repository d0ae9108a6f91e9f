"""The train stage's runs (fedbench.runner, through the one runner): a run restarted after an interruption says, in one line, that it resumes from its checkpoint and
from which round (issue 29.6: it printed nothing), and ends with the numbers of an uninterrupted run."""

from __future__ import annotations

from pathlib import Path

import pytest

import fedbench.engine.simulation as simulation
from fedbench.config import load_config
from fedbench.pipeline import generate, train_runs
from fedbench.runner import RunKey

ROOT = Path(__file__).resolve().parents[1]
KEY = RunKey("synthetic_1_1", "fedavg", 0.0, 0)


class Interrupted(Exception):
    """Stands for the kill that stops a run after its first checkpoint is on disk."""


def test_a_resumed_run_says_from_which_round_of_its_checkpoint(tmp_path, monkeypatch, capsys):
    cfg = load_config(ROOT / "params.yaml", {"train.rounds": 6, "train.checkpoint_every": 2, "train.seeds": [0],
                                             "train.device": "cpu", "train.workers": 1})
    generate(cfg, KEY.dataset, root=tmp_path / "data")
    whole = train_runs(cfg, [KEY], tmp_path / "data", tmp_path / "whole", progress=False)[0]
    assert "resuming" not in capsys.readouterr().err  # no checkpoint: nothing to say

    save = simulation._save_checkpoint

    def save_then_stop(*args, **kwargs):
        save(*args, **kwargs)
        raise Interrupted

    monkeypatch.setattr(simulation, "_save_checkpoint", save_then_stop)
    with pytest.raises(Interrupted):
        train_runs(cfg, [KEY], tmp_path / "data", tmp_path / "runs", progress=False)
    monkeypatch.setattr(simulation, "_save_checkpoint", save)
    (checkpoint,) = (tmp_path / "runs").rglob("*.checkpoint.pt")
    capsys.readouterr()
    resumed = train_runs(cfg, [KEY], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    lines = [line for line in capsys.readouterr().err.splitlines() if "resuming" in line]
    assert lines == [f"fedbench: resuming synthetic_1_1 fedavg stragglers=0 seed=0 from round 2 of 6 "
                     f"(checkpoint {checkpoint})"]  # checkpoint_every 2: the first one holds rounds 0 and 1
    assert resumed["param_digest"] == whole["param_digest"] and not resumed["reused"]
    assert not checkpoint.exists()  # a finished run removes its checkpoint


def test_a_dataset_made_anew_in_the_same_folder_is_trained_on_anew(tmp_path):
    """The train stage loads each dataset once per call (a cached builder keyed by its folder and content hash, the
    cache dropped when the call ends): data regenerated in place (another data.seed) is what the next call trains on,
    never the copy loaded before."""
    settings = {"train.rounds": 2, "train.seeds": [0], "train.device": "cpu", "train.workers": 1}
    first_cfg = load_config(ROOT / "params.yaml", settings)
    generate(first_cfg, KEY.dataset, root=tmp_path / "data")
    first = train_runs(first_cfg, [KEY], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    import shutil

    shutil.rmtree(tmp_path / "data" / KEY.dataset)
    again_cfg = load_config(ROOT / "params.yaml", {**settings, "data.seed": 1})
    folder = generate(again_cfg, KEY.dataset, root=tmp_path / "data")
    again = train_runs(again_cfg, [KEY], tmp_path / "data", tmp_path / "runs", progress=False)[0]
    from fedbench.data.format import read_meta

    assert again["dataset_hash"] == read_meta(folder)["content_hash"] != first["dataset_hash"]
    assert again["param_digest"] != first["param_digest"] and not again["reused"]
    from fedbench.runner import _dataset, _model

    assert _dataset.cache_info().currsize == 0 and _model.cache_info().currsize == 0  # dropped after each call

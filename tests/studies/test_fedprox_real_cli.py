"""`fedbench study list` and `fedbench study run` cover FedProx's real-data studies (fedbench.study.registry.FEDPROX_REAL,
fedbench.studies.stage.runnable): each listed with its one budget and what runs it; run by the one driver as `fedbench
paper run` runs it (fedbench.studies.fedprox_real.run_real_study), under params.yaml with the study added."""

from pathlib import Path

import pytest

from fedbench import cli
from fedbench.config import ConfigError, load_config
from fedbench.studies import fedprox_real, stage
from fedbench.study import registry

CFG = load_config("params.yaml")


def test_listed_with_their_one_budget_and_what_runs_them(tmp_path):
    assert set(registry.FEDPROX_REAL) <= set(stage.runnable()) and len(stage.runnable()) == len(registry.names()) + 10
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in stage.list_studies(CFG, tmp_path)[1:]}
    assert rows["fedprox_femnist"] == [
        "paper", "paper-scale: fedbench paper run fedprox_femnist            see `fedbench paper list`"]
    assert rows["fedprox_sent140_e1"][0] == "paper" and rows["fedprox_mnist5k"][0] == "pipeline"
    assert rows["fedprox_mnist5k"][1].startswith("dvc repro (main_job)")  # params.yaml lists it: its runs the main job's


def test_run_by_the_one_driver_at_its_one_budget(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(fedprox_real, "run_real_study", lambda *args: calls.append(args) or ["entry"])
    assert stage.run_study(CFG, "fedprox_mnist5k", workers=3, root=tmp_path) == ["entry"]
    assert calls == [(CFG, "fedprox_mnist5k", tmp_path, Path("data/real"), 3)]
    with pytest.raises(ConfigError, match=r"--budget \(study fedprox_femnist\): 'pipeline' is not allowed; allowed: "
                                          r"paper"):
        stage.run_study(CFG, "fedprox_femnist", "pipeline", root=tmp_path)
    with pytest.raises(ConfigError, match="--workers: must be >= 1, got 0"):
        stage.run_study(CFG, "fedprox_femnist", workers=0, root=tmp_path)


def test_the_command_runs_it_under_params_yaml_with_the_study_added(monkeypatch):
    seen = []
    monkeypatch.setattr(stage, "run_study", lambda cfg, name, budget, workers: seen.append((cfg, name, budget, workers)))
    cli.main(["study", "run", "fedprox_femnist", "--workers", "1"])
    ((cfg, name, budget, workers),) = seen
    assert (name, budget, workers) == ("fedprox_femnist", None, 1) and "fedprox_femnist" not in CFG.studies
    assert list(cfg.studies[name].datasets) == ["femnist_fedprox"]  # the profile's study, as `fedbench paper run` adds it

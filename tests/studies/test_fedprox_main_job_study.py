"""The main job as a study run by the one driver (fedbench.studies.fedprox_main_job's hooks): params.yaml's grid, its
budgets and seeds; and, on a tiny grid, the same runs and entries as the train stage's path (fedbench.pipeline
train_runs into the train store, judged by fedbench.studies.train_claims): every record's digest, history and final
values and every entry equal."""

import dataclasses
import json

import pytest

from fedbench.config import load_config
from fedbench.errors import ConfigError
from fedbench.studies import fedprox_main_job as study
from fedbench.study.contract import seeded

CFG = load_config("params.yaml")


def test_the_grid_is_params_yaml_s_studies_each_run_once():
    keys = study.grid(CFG)
    # stragglers: 2 sets x 3 arms x 4 levels; heterogeneity: 2 x 2 x 1; fedprox_mnist5k: 1 x 2 x 3; 5 seeds each
    assert len(keys) == len(set(keys)) == (24 + 4 + 6) * 5 == 170
    assert keys[:2] == [("synthetic_1_1", "fedavg", 0.0, 0), ("synthetic_1_1", "fedavg", 0.0, 1)]
    assert study.name(keys[0]) == "synthetic_1_1 fedavg stragglers=0 seed=0"


def test_budget_and_seeds_come_from_params_yaml_unless_named():
    cfg = load_config("params.yaml", {"train.rounds": 7, "train.seeds": [3, 4]})
    assert (study.settings(seeded(study.DECLARATION, "pipeline", config=cfg)).train.rounds,
            study.settings(seeded(study.DECLARATION, "pipeline", config=cfg)).train.seeds) == (7, (3, 4))
    assert study.settings(seeded(study.DECLARATION, "paper", config=cfg)).train.rounds == 200
    block = study.settings(seeded(study.DECLARATION, "pipeline", (1000, 1001), config=cfg))
    assert block.train.seeds == (1000, 1001) and block.train.rounds == 7
    with pytest.raises(ConfigError, match="study fedprox_main_job: its grid is params.yaml's"):
        study.settings(seeded(study.DECLARATION, "pipeline"))


def test_the_study_gives_the_train_stage_s_runs_and_entries(tmp_path, monkeypatch):
    from fedbench.pipeline import generate, study_runs, train_runs
    from fedbench.studies import train_claims
    from fedbench.study.output import run_claim_study

    cfg = load_config("params.yaml", {"train.rounds": 2, "train.seeds": [0, 1], "train.local_epochs": 2,
                                      "train.workers": 1, "studies.stragglers.stragglers": [0.0, 0.5, 0.9]})
    cfg = dataclasses.replace(cfg, studies={k: v for k, v in cfg.studies.items() if k != "fedprox_mnist5k"})
    data = tmp_path / "data"
    for name in ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1"):
        generate(cfg, name, data)
    monkeypatch.setattr(study, "DATA_ROOT", data)
    train_runs(cfg, list(study_runs(cfg)), data, tmp_path / "old", progress=False)
    train_claims.write(cfg, tmp_path / "old", data)
    run_claim_study("fedprox_main_job", tmp_path / "new", workers=1, config=cfg)

    def records(folder):
        return {r["name"]: r for r in map(json.loads, (folder / "simulations.jsonl").read_text().splitlines())}
    old, new = records(tmp_path / "old" / "fedprox_main_job" / "pipeline"), records(tmp_path / "new")
    assert len(old) == len(new) == (18 + 4) * 2
    for name, r in old.items():
        assert {k: new[name][k] for k in ("param_digest", "history", "final", "diverged", "params")} == \
            {k: r[k] for k in ("param_digest", "history", "final", "diverged", "params")}, name
    judged = [c for c in json.loads((tmp_path / "old" / "fedprox_main_job" / "pipeline" / "claims.json").read_text())
              ["claims"] if c["study"] == "main job"]
    assert [{k: v for k, v in c.items() if k != "study"} for c in judged] == \
        json.loads((tmp_path / "new" / "claims.json").read_text())["claims"]
    assert {p.name for p in (tmp_path / "new").glob("*.png")} == {
        "fig1_stragglers_synthetic_1_1.png", "fig2_heterogeneity.png", "fig5_iid_stragglers.png"}

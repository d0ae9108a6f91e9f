"""FedProx's real-data studies run by the one driver (fedbench.studies.fedprox_real, issue 50 item 1): one study per
PaperStudy, generated, registered; on fixture MNIST-5k the former train store's runs (a ready-made one:
tests/studies/old_train_store.py) move into the study's store (none recomputed) and the study's records and entries
equal those of the same runs made one experiment at a time (fedbench.study.experiments.train_runs, judged by
fedbench.studies.real_claims); ``fedbench compare``'s lookup (fedbench.study.experiments.find_run) then reads the
study's store."""

from __future__ import annotations

import json

import pytest

from fedbench.config import ConfigError, load_config
from fedbench.studies import fedprox_main_job, fedprox_real, real_claims
from fedbench.studies.fedprox_real_data import MNIST5K_STUDY, declaration
from fedbench.study import registry
from fedbench.study.contract import follows_contract, seeded
from fedbench.study.paper_profile import STUDIES

PARAMS = "params.yaml"


def test_one_study_per_fedprox_paper_study_generated_and_registered():
    assert registry.FEDPROX_REAL == fedprox_real.NAMES == (
        "fedprox_mnist5k", "fedprox_mnist", "fedprox_femnist", "fedprox_shakespeare", "fedprox_sent140",
        "fedprox_shakespeare_plays", "fedprox_mnist_e1", "fedprox_femnist_e1", "fedprox_shakespeare_e1",
        "fedprox_sent140_e1")
    for name in fedprox_real.NAMES:
        m = registry.module(name)
        assert follows_contract(m) and m is fedprox_real.study(name) and m.DECLARATION.name == name
        if not name.endswith("_e1"):
            assert m.DECLARATION == declaration(fedprox_real.paper_study(name)) and len(m.DECLARATION.claims) == 4
    e1 = registry.declaration("fedprox_femnist_e1")  # its runs are read by PARTIAL_WORK's claim, over four datasets
    assert ([a.name for a in e1.arms], e1.claims, e1.budgets) == (["fedavg", "fedprox_mu0"], (), {"paper": 200})
    assert registry.budgets("fedprox_mnist5k") == ["pipeline"] and registry.budgets("fedprox_femnist") == ["paper"]
    with pytest.raises(ConfigError, match="no FedProx real-data study; allowed: fedprox_mnist5k, fedprox_mnist"):
        fedprox_real.paper_study("fedprox_emnist")


def test_the_grid_is_the_study_s_own_under_params_yaml():
    cfg = load_config(PARAMS, {"train.seeds": [0, 1]})
    run = seeded(registry.declaration("fedprox_mnist5k"), "pipeline", config=cfg)
    only = fedprox_real.settings(MNIST5K_STUDY, run)
    assert list(only.studies) == ["fedprox_mnist5k"] and only.train.seeds == (0, 1)
    assert only.train_for("mnist5k_fedprox").rounds == 100 and only.train_for("mnist5k_fedprox").lr == 0.03
    assert len(fedprox_main_job.grid(only)) == 2 * 3 * 2  # 2 arms x 3 straggler levels x 2 seeds
    femnist = fedprox_real.settings(STUDIES["fedprox_femnist"], seeded(
        registry.declaration("fedprox_femnist"), "paper", (7,), config=cfg))  # a confirmatory block's seeds
    assert list(femnist.studies) == ["fedprox_femnist"] and femnist.train.seeds == (7,)
    from fedbench.paper import study_config  # params.yaml with a profile study added, as `fedbench paper run` loads it

    e1 = study_config(PARAMS, "fedprox_mnist_e1")
    e1 = fedprox_real.settings(STUDIES["fedprox_mnist_e1"], seeded(registry.declaration("fedprox_mnist_e1"), "paper",
                                                                     config=e1))
    assert len(fedprox_main_job.grid(e1)) == 2 * 2 * 5 and e1.train_for("mnist_fedprox").local_epochs == 1
    with pytest.raises(ConfigError, match="study fedprox_mnist5k: its grid is params.yaml's"):
        fedprox_real.settings(MNIST5K_STUDY, seeded(registry.declaration("fedprox_mnist5k"), "pipeline"))


def test_mnist5k_train_store_runs_move_in_and_the_study_gives_the_old_path_s_entries(tmp_path, monkeypatch, capsys):
    from fedbench.data import stages
    from fedbench.study.experiments import find_run, outcome_path, study_runs
    from tests.data import fixtures
    from tests.studies.old_train_store import write_old_train_store

    raw = tmp_path / "raw_copy"
    raw.mkdir()
    (raw / "mnist_5k.csv.gz").write_bytes(fixtures.mnist5k_csv(per_digit=20))
    stages.prepare_dataset("mnist5k_fedprox", tmp_path, raw=raw, verify=False, variant_params={"num_clients": 10})
    cfg = load_config(PARAMS, {"train.seeds": [0, 1], "train.workers": 1, "train.clients_per_round": 3,
                               "data.variants.mnist5k_fedprox": {"num_clients": 10},
                               "studies.fedprox_mnist5k.train": {"lr": 0.03, "rounds": 3, "local_epochs": 2}})
    results, generated, apart = tmp_path / "results", tmp_path / "generated", tmp_path / "apart"
    keys = list(study_runs(cfg, ["fedprox_mnist5k"]))
    # the runs one experiment at a time, in a results root of their own, and as the train store of ``results`` kept them
    old = write_old_train_store(cfg, keys, generated, results, apart, commit="0123abc-dirty")
    assert not (results / "fedprox_main_job").exists()  # nothing in ``results`` but the train store
    before = [real_claims.gain_at_90, real_claims.dissimilarity, real_claims.gain_at_0_50, real_claims.stragglers_hurt]
    before = [fn(cfg, MNIST5K_STUDY, apart, generated) for fn in before]
    # judged, two seeds each (the test holds the new path to the old one's on the same runs)
    assert [len(e["effect"]["per_seed"]) for e in before] == [2, 2, 2, 2]
    assert {e["verdict"] for e in before} <= {"reproduced", "not-reproduced", "inconclusive"}
    assert fedprox_real.adopt_train_store(cfg, "fedprox_mnist5k", results, tmp_path / "real") == (0, 12)  # dirty
    monkeypatch.setattr(fedprox_main_job, "_same_run_code", lambda commit, code: True)
    assert fedprox_real.adopt_train_store(cfg, "fedprox_mnist5k", results, tmp_path / "real") == (12, 12)
    capsys.readouterr()
    claims = fedprox_real.run_real_study(cfg, "fedprox_mnist5k", results, tmp_path / "real")
    assert "12 of 12 simulations reused" in capsys.readouterr().out  # none recomputed
    folder = results / "fedprox_mnist5k" / "pipeline"
    assert json.loads(json.dumps(claims)) == json.loads((folder / "claims.json").read_text())["claims"] == \
        json.loads(json.dumps(before))  # the same entries, cost (the runs' own wall time) included
    assert (folder / "fedprox_mnist5k.png").stat().st_size > 10_000
    records = [json.loads(line) for line in (folder / "simulations.jsonl").read_text().splitlines()]
    assert [r["param_digest"] for r in records] == [s["param_digest"] for s in old]
    for key, s in zip(keys, old):  # the lookup `fedbench compare` and the report use now reads the study's store
        found = find_run(cfg, generated, results, key)
        assert outcome_path(results, found["fingerprint"]).parent == folder / "outcomes"
        assert (found["history"], found["final"], found["param_digest"]) == (s["history"], s["final"],
                                                                               s["param_digest"])
    # the main_job stage's case: the runs are the main job's (the same Simulations, so the same fingerprints), offered
    # from its store; the study computes none (here the train store and the study's folder are gone)
    import shutil

    (results / "fedprox_main_job" / "pipeline").mkdir(parents=True)
    shutil.move(folder / "outcomes", results / "fedprox_main_job" / "pipeline" / "outcomes")
    shutil.rmtree(folder)
    shutil.rmtree(results / "train")
    capsys.readouterr()
    assert fedprox_real.run_real_study(cfg, "fedprox_mnist5k", results, tmp_path / "real") == claims
    assert "12 of 12 simulations reused" in capsys.readouterr().out

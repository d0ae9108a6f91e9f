"""The main job as a study run by the one driver (fedbench.studies.fedprox_main_job's hooks): params.yaml's grid, its
budgets and seeds; on a tiny grid, the same runs and entries as the runs made one experiment at a time
(fedbench.study.experiments.train_runs, what `fedbench run` and regression use, judged as the main_job stage judged
the train stage's runs): every record's digest, history and final values and every entry equal; and the former train
store's runs moved into the study's store, none recomputed."""

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


def test_the_study_gives_the_per_experiment_runs_and_entries(tmp_path, monkeypatch):
    """The runs made one experiment at a time (fedbench.study.experiments.train_runs in a results root of their own,
    what `fedbench run` uses), judged from their records as the main_job stage judged the train stage's runs
    (evaluate_claims), against the study run by the one driver."""
    from types import SimpleNamespace

    from fedbench.pipeline import generate
    from fedbench.study.experiments import load_runs, study_runs, train_runs
    from fedbench.study.output import run_claim_study
    from fedbench.study.record import record

    cfg = load_config("params.yaml", {"train.rounds": 2, "train.seeds": [0, 1], "train.local_epochs": 2,
                                      "train.workers": 1, "studies.stragglers.stragglers": [0.0, 0.5, 0.9]})
    cfg = dataclasses.replace(cfg, studies={k: v for k, v in cfg.studies.items() if k != "fedprox_mnist5k"})
    data = tmp_path / "data"
    for name in ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1"):
        generate(cfg, name, data)
    monkeypatch.setattr(study, "DATA_ROOT", data)
    keys = list(study_runs(cfg))
    summaries = train_runs(cfg, keys, data, tmp_path / "old", progress=False)
    run_claim_study("fedprox_main_job", tmp_path / "new", workers=1, config=cfg)

    new = {r["name"]: r for r in map(json.loads, (tmp_path / "new" / "simulations.jsonl").read_text().splitlines())}
    assert len(summaries) == len(new) == (18 + 4) * 2
    for key, s in zip(keys, summaries):
        old = record(key.desc, s["params"], SimpleNamespace(history=s["history"], final=s["final"], device=s["device"],
                                                            diverged=s["diverged"], param_digest=s["param_digest"]))
        assert {k: new[key.desc][k] for k in ("param_digest", "history", "final", "diverged", "params")} == \
            {k: old[k] for k in ("param_digest", "history", "final", "diverged", "params")}, key.desc
    hist, _ = load_runs(cfg, tmp_path / "old", data)  # the runs read back from their records, not the study's
    assert study.evaluate_claims(cfg, hist) == json.loads((tmp_path / "new" / "claims.json").read_text())["claims"]
    assert {p.name for p in (tmp_path / "new").glob("*.png")} == {
        "fig1_stragglers_synthetic_1_1.png", "fig2_heterogeneity.png", "fig5_iid_stragglers.png"}


def test_the_train_store_s_runs_move_into_the_study_s_store_and_none_is_recomputed(tmp_path, monkeypatch, capsys):
    """Issue 50 item 1's one-time move: the runs the train stage finished (a ready-made train store,
    tests/studies/old_train_store.py) are linked into the study's store under the study's fingerprints; the study then
    reads every one back and computes none; a run whose code cannot be shown to be today's (an unknown or -dirty
    commit) is not moved."""
    from fedbench.pipeline import generate
    from fedbench.study.experiments import study_runs
    from fedbench.study.output import run_claim_study
    from tests.studies.old_train_store import write_old_train_store

    cfg = load_config("params.yaml", {"train.rounds": 1, "train.seeds": [0], "train.local_epochs": 2,
                                      "train.workers": 1, "studies.stragglers.stragglers": [0.0, 0.5]})
    cfg = dataclasses.replace(cfg, studies={k: v for k, v in cfg.studies.items() if k != "fedprox_mnist5k"})
    data = tmp_path / "data"
    for name in ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1"):
        generate(cfg, name, data)
    monkeypatch.setattr(study, "DATA_ROOT", data)
    keys = list(study_runs(cfg))
    write_old_train_store(cfg, keys, data, tmp_path, tmp_path / "scratch", commit="0123abc-dirty")  # a dirty tree's
    assert len(keys) == len((tmp_path / "train" / "index.jsonl").read_text().splitlines()) == 16
    assert study._same_run_code("unknown", "x") is False and study._same_run_code("0123abc-dirty", "x") is False
    assert study.adopt_train_store(cfg, tmp_path) == (0, 16)  # its run code not in git: not shown to be today's
    monkeypatch.setattr(study, "_same_run_code", lambda commit, code: True)
    assert study.adopt_train_store(cfg, tmp_path) == (16, 16)  # 2 sets x 3 arms x 2 levels + 2 x 2 x 1, one seed
    assert study.adopt_train_store(cfg, tmp_path) == (0, 16)  # once: already there
    capsys.readouterr()
    run_claim_study("fedprox_main_job", tmp_path / "fedprox_main_job" / "pipeline", workers=1, config=cfg)
    assert "16 of 16 simulations reused" in capsys.readouterr().out
    assert len(list((tmp_path / "train" / "outcomes").glob("*.json"))) == 16  # the train store left as it was


def test_the_main_job_s_store_is_shared_one_process_a_run(tmp_path):
    """Its variations and `fedbench study run` beside its stage share one store (nothing pruned): a run is locked
    while a process works on it, as the train store's were (fedbench.study.reuse.OutcomeStore.shared)."""
    import fcntl
    import os
    from types import SimpleNamespace

    from fedbench.study.reuse import OutcomeStore

    assert study.DECLARATION.keeps_outcomes
    with OutcomeStore(tmp_path, shared=True).lock(SimpleNamespace(name="a run"), "0123"):
        fd = os.open(tmp_path / ".0123.lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    with OutcomeStore(tmp_path / "own").lock(SimpleNamespace(name="a run"), "0123"):  # a study's own: no lock file
        assert not (tmp_path / "own").exists()


def test_an_old_run_moves_only_where_its_commit_s_run_code_with_runner_py_is_its_index_line_s(tmp_path, monkeypatch):
    """The one-time move's code check (_same_run_code) on a checkout committed as the train store's runs were: the
    numbers' code as today, and fedbench/runner.py, which the old index lines' code hashed
    (provenance.LEGACY_TRAIN_RUN_CODE) and which this tree no longer has."""
    import shutil
    import subprocess

    from fedbench import provenance

    pkg = tmp_path / "repo" / "fedbench"
    for f in provenance.code_files(provenance.STUDY_RUN_CODE):
        rel = f.relative_to(provenance.PACKAGE)
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, pkg / rel)
    (pkg / "runner.py").write_text("TRAIN_STORE = 'results/train'\n")  # the train stage's module, as it was
    git = dict(cwd=tmp_path / "repo", check=True, capture_output=True, text=True)
    subprocess.run(["git", "init", "-q"], **git)
    subprocess.run(["git", "add", "-A"], **git)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "old"], **git)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.strip()
    old_code = provenance.code_hash(provenance.LEGACY_TRAIN_RUN_CODE, pkg)
    assert old_code != provenance.code_hash(provenance.STUDY_RUN_CODE, pkg)  # runner.py is in it
    monkeypatch.setattr(provenance, "PACKAGE", pkg)  # the checkout the move asks git about
    assert study._same_run_code(commit, old_code) is True
    assert study._same_run_code(commit, provenance.code_hash(provenance.STUDY_RUN_CODE, pkg)) is False  # no runner.py
    (pkg / "engine" / "local.py").write_text((pkg / "engine" / "local.py").read_text() + "\nSTEP = 1\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "new engine"], **git)
    changed = subprocess.run(["git", "rev-parse", "HEAD"], **git).stdout.strip()
    # its numbers' code is not today's: not moved, though its index line's code matches its commit
    assert study._same_run_code(changed, provenance.code_hash(provenance.LEGACY_TRAIN_RUN_CODE, pkg)) is False

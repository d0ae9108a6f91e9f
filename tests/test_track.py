"""The track stage's claim-study logging: one MLflow run per study with one nested run per recorded simulation,
logged once (a second pass adds nothing; a rerun study is logged anew)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from fedbench.studies import delta_fl_triangle
from fedbench.study.output import run_claim_study
from fedbench.study.record import read_simulations
from fedbench.track import track_study


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    """The delta_fl_triangle study at 5 rounds, run once for the module: (its root folder, its claims)."""
    root = tmp_path_factory.mktemp("studies")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(delta_fl_triangle, "ROUNDS", 5)
        claims = run_claim_study("delta_fl_triangle", root / "delta_fl_triangle")
    return root, claims


@pytest.fixture(scope="module")
def store_template(tmp_path_factory) -> Path:
    """An empty tracking store as fedbench makes it on first use (fedbench.tracking._create_sqlite_store: MLflow's
    tables built, Default deleted), made once for the module: making one costs about 1.3 s of CPU and 5 s of disk
    syncs, in each test that logs."""
    from fedbench.tracking import _create_sqlite_store

    db = tmp_path_factory.mktemp("store-template") / "store.db"
    _create_sqlite_store(db)
    return db


@pytest.fixture
def store_uri(tmp_path, store_template, monkeypatch) -> str:
    """MLFLOW_TRACKING_URI set to ``tmp_path/store.db``, a copy of the module's empty store (a store fedbench made
    earlier, then moved here): for the tests of what is logged and read. The tests of how a store is made (WAL mode,
    a deleted store's log, an older store, a moved one, a bad URI) make their own."""
    shutil.copyfile(store_template, tmp_path / "store.db")
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return uri


def _copy_study(study_run, tmp_path):
    """A private copy of the study's root folder (a test may change the files), and the claims."""
    root, claims = study_run
    shutil.copytree(root, tmp_path / "studies")
    return tmp_path / "studies", claims


def test_study_logged_once_with_a_nested_run_per_simulation(tmp_path, store_uri, study_run):
    uri = store_uri
    root, claims = _copy_study(study_run, tmp_path)
    records = read_simulations(root / "delta_fl_triangle")
    assert len(records) == 5

    parent_id = track_study("delta_fl_triangle", root / "delta_fl_triangle")
    assert track_study("delta_fl_triangle", root / "delta_fl_triangle") == parent_id  # logged already: nothing added
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name("claims-delta_fl_triangle").experiment_id
    runs = client.search_runs([exp_id])
    children = {r.info.run_name: r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent_id}
    assert len(runs) == len(records) + 1 and set(children) == {r["name"] for r in records}
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED" and parent.data.tags[f"verdict.{claims[0]['id']}"] == claims[0]["verdict"]
    assert {a.path for a in client.list_artifacts(parent_id)} >= {"claims.json", "simulations.jsonl"}
    # the artifacts beside the store, not in ./mlruns of the folder the test runs in (the checkout)
    assert (tmp_path / "mlruns" / "claims-delta_fl_triangle" / parent_id / "artifacts" / "claims.json").is_file()
    assert parent.info.run_name == f"delta_fl_triangle pipeline #{parent.data.tags['fedbench.fingerprint'][:6]}"
    assert {k: parent.data.tags[k] for k in ("study", "budget")} == {"study": "delta_fl_triangle", "budget": "pipeline"}
    # the records carry no arm or method param: the arm is the name's first part (delta_fl_filter's record reads
    # delta_fl/theta=0.667/filter/obtuse, so its arm reads delta_fl)
    arms = {"delta_fl/theta=0.667/exact/obtuse": "delta_fl", "fedavg/obtuse": "fedavg",
            "delta_fl/theta=0.667/filter/obtuse": "delta_fl", "delta_fl/theta=0.8/exact/obtuse": "delta_fl",
            "delta_fl/theta=0.667/exact/acute": "delta_fl"}
    for rec in records:
        run = children[rec["name"]]
        assert run.info.status == "FINISHED" and run.data.tags["param_digest"] == rec["param_digest"]
        assert {k: run.data.tags[k] for k in ("study", "budget", "seed", "rounds")} == {
            "study": "delta_fl_triangle", "budget": "pipeline", "seed": "0", "rounds": "5"}
        assert run.data.tags["arm"] == arms[rec["name"]]
        assert run.data.params == {k: str(v) for k, v in rec["params"].items()}
        w0 = client.get_metric_history(run.info.run_id, "model/w0")
        assert [(m.step, m.value) for m in w0] == list(enumerate(rec["history"]["model/w0"]))
        assert float(run.data.tags["final/train_loss"]) == rec["final"]["train/loss"] and "final/train_loss" not in run.data.metrics
    fingerprints = {r.data.tags["fedbench.fingerprint"] for r in children.values()}
    assert len(fingerprints) == len(records) and parent.data.tags["fedbench.fingerprint"] not in fingerprints
    # each simulation's tag is its one fingerprint, the name of its outcome file (fedbench.study.reuse)
    outcomes = {p.stem for p in (root / "delta_fl_triangle" / "outcomes").glob("*.json")}
    assert fingerprints == outcomes == {r["fingerprint"] for r in records}

    body = json.loads((root / "delta_fl_triangle" / "claims.json").read_text())
    (root / "delta_fl_triangle" / "claims.json").write_text(json.dumps(body | {"seconds": body["seconds"] + 1}))
    assert track_study("delta_fl_triangle", root / "delta_fl_triangle") != parent_id  # a rerun study is a new study run
    assert len(client.search_runs([exp_id])) == 2 * (len(records) + 1)


def test_interrupted_logging_is_replaced_not_duplicated(tmp_path, monkeypatch, store_uri, study_run):
    from fedbench import tracking

    uri = store_uri
    root, _ = _copy_study(study_run, tmp_path)
    records = read_simulations(root / "delta_fl_triangle")

    real, calls = tracking._log_record, []

    def fail_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise ConnectionError("store went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(tracking, "_log_record", fail_on_third)
    with pytest.raises(ConnectionError):
        track_study("delta_fl_triangle", root / "delta_fl_triangle")
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name("claims-delta_fl_triangle").experiment_id
    assert len(client.search_runs([exp_id])) == 1 + 2  # a FAILED parent and the two children it had logged
    monkeypatch.setattr(tracking, "_log_record", real)
    parent_id = track_study("delta_fl_triangle", root / "delta_fl_triangle")
    runs = client.search_runs([exp_id])
    assert len(runs) == len(records) + 1 and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags.get("mlflow.parentRunId") for r in runs} == {None, parent_id}


def _summary(fingerprint: str = "fp-1", rounds: int = 3) -> dict:
    """A finished run's summary as fedbench.study.experiments gives it: round r took r seconds (round 0: none)."""
    history = [{"round": r, "train/loss": 2.0 - r / 10, "test/accuracy": 0.5 + r / 100,
                "wall_time_s": float(r)} for r in range(rounds)]
    return {"fingerprint": fingerprint, "dataset_hash": "d0", "device": "cpu", "param_digest": "p0",
            "diverged": False, "diverged_at_round": None, "git_commit": "abc", "versions": {"torch": "2"},
            "params": {"dataset": "synthetic_1_1", "algorithm": "fedprox", "variant": "fedprox_mu1", "algo.mu": 1.0,
                       "straggler_fraction": 0.9, "seed": 3, "rounds": rounds},
            "final": {"train/loss": 1.8, "test/accuracy": 0.52, "train/dissimilarity": None},
            "reporting_round": rounds - 1, "reporting_reason": "final", "reporting_test_accuracy": 0.52,
            "history": history}


def log_train(experiment: str, name: str, summary: dict, artifacts, description: str = "",
              finished_ms: int | None = None) -> str:
    """Log a training run's summary as the track stage does (fedbench.track.run_record, tracking.log_runs)
    into ``experiment`` (``train-<study>``), with no defaults to tell it apart from."""
    from fedbench import tracking
    from fedbench.track import run_record

    record = run_record(experiment.removeprefix("train-"), name, summary, None, artifacts, finished_ms)
    return tracking.log_runs(experiment, [record], description)[0]


def test_training_run_in_the_ui_model_training_experiment_with_tags_and_real_round_times(monkeypatch, store_uri):
    """Issue 23 item 2: a model-training experiment with a description and no `Default` beside it; a short run
    name with dataset, algorithm, stragglers, mu and seed as tags; rounds stamped with the cumulated round times
    ending at the run's finish (not one timestamp: curves in time were vertical lines); final values as tags."""
    from fedbench import tracking
    from fedbench.track import run_name, train_description, train_experiment

    uri = store_uri
    name = run_name(_summary()["params"])
    assert name == "fedprox mu=1 90% s3 synthetic_1_1"
    run_id = log_train(train_experiment("stragglers"), name, _summary(), lambda: [],
                              train_description("stragglers"), finished_ms=1_000_000)
    monkeypatch.setenv("DVC_EXP_NAME", "rounds-4")  # as `dvc exp run` sets it for the stage commands
    tagged = log_train(train_experiment("stragglers"), "x", _summary() | {"fingerprint": "fp-exp"}, lambda: [],
                              train_description("stragglers"), finished_ms=1_000_000)
    client = MlflowClient(uri)
    assert client.get_run(tagged).data.tags["dvc.experiment"] == "rounds-4"
    assert client.get_run(run_id).data.tags["dvc.experiment"] == "workspace"
    client.delete_run(tagged)
    (exp,) = client.search_experiments()  # Default is deleted
    assert exp.name == "train-stragglers" and exp.tags["mlflow.experimentKind"] == "custom_model_development"
    assert exp.tags["mlflow.note.content"].startswith("FedProx (Li et al., MLSys 2020) Figures 1 and 5")
    run = client.get_run(run_id)
    assert run.info.run_name == name
    assert "mlflow.parentRunId" not in run.data.tags  # top-level: MLflow's UI hides nested runs from its charts
    assert {k: run.data.tags[k] for k in ("dataset", "algorithm", "variant", "stragglers", "mu", "seed", "rounds")} == {
        "dataset": "synthetic_1_1", "algorithm": "fedprox", "variant": "fedprox_mu1", "stragglers": "0.9", "mu": "1",
        "seed": "3", "rounds": "3"}
    loss = client.get_metric_history(run_id, "train/loss")
    assert [(m.step, m.timestamp) for m in loss] == [(0, 997_000), (1, 998_000), (2, 1_000_000)]
    assert (run.info.start_time, run.info.end_time) == (997_000, 1_000_000)  # the duration is the training's
    assert set(run.data.metrics) == {"train/loss", "test/accuracy", "wall_time_s"}  # no one-point final/* charts
    assert run.data.tags["final/test_accuracy"] == "0.52" and "final/train_dissimilarity" not in run.data.tags
    assert tracking.list_runs("train-stragglers")[0]["final/test_accuracy"] == 0.52


def test_a_run_logged_by_the_main_job_is_not_logged_again_by_fedbench_run(store_uri):
    """Issue 23 item 10: `fedbench run` reusing a run of the main job logged it again under `adhoc`."""
    from fedbench import tracking

    uri = store_uri
    first = log_train("train-stragglers", "a", _summary(), lambda: [])
    assert log_train("train-adhoc", "a", _summary(), lambda: []) == first
    assert tracking.find_logged("fp-1") == ("train-stragglers", first)
    assert tracking.find_logged("fp-2") is None
    assert len(MlflowClient(uri).search_runs([e.experiment_id for e in MlflowClient(uri).search_experiments()])) == 1


def test_empty_default_of_an_older_store_is_deleted_and_its_experiments_marked(tmp_path, monkeypatch):
    from fedbench import tracking

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    MlflowClient(uri).create_experiment("train-stragglers")  # a store made by MLflow itself: Default is there
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    log_train("train-heterogeneity", "a", _summary(), lambda: [])
    log_train("train-stragglers", "b", _summary("fp-2"), lambda: [], "a note")
    exps = {e.name: e for e in MlflowClient(uri).search_experiments()}
    assert set(exps) == {"train-stragglers", "train-heterogeneity"}
    assert exps["train-stragglers"].tags == {"mlflow.experimentKind": "custom_model_development",
                                             "mlflow.note.content": "a note"}


def test_round_times_cumulate_wall_times_to_the_finish():
    from fedbench.track import round_times

    assert round_times([{"wall_time_s": 0.0}, {"wall_time_s": 1.5}, {}, {"wall_time_s": float("nan")},
                        {"wall_time_s": 0.25}], 10_000) == (8_250, [8_250, 9_750, 9_750, 9_750, 10_000])


def test_sqlite_store_in_wal_mode_and_a_deleted_stores_log_never_read(tmp_path, monkeypatch):
    """The store commits without waiting for the disk (write-ahead log, synchronous=NORMAL); a new store never
    picks up the log of a store that was deleted beside it."""
    import sqlite3

    from fedbench import tracking

    db = tmp_path / "store.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    stale = tmp_path / "store.db-wal"
    stale.write_bytes(b"not this store's log")
    with tracking._store() as client:
        tracking.experiment_id(client, "train-x", "a study")
    assert not stale.exists() or stale.read_bytes() != b"not this store's log"
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        names = {r[0] for r in con.execute("SELECT name FROM experiments WHERE lifecycle_stage = 'active'")}
    assert names == {"train-x"}
    assert not list(tmp_path.glob(".store.db.init-*"))


def test_wal_mode_only_for_fedbenchs_own_store(tmp_path, monkeypatch):
    """Importing fedbench.tracking changes no other SQLite database that SQLAlchemy opens in the process."""
    from sqlalchemy import create_engine, text

    from fedbench import tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'store.db'}")
    with tracking._store() as client:
        tracking.experiment_id(client, "train-x")
    engine = create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    with engine.connect() as con:
        assert con.execute(text("PRAGMA journal_mode")).scalar() == "delete"
        assert con.execute(text("PRAGMA synchronous")).scalar() == 2  # SQLite's default, FULL
    engine.dispose()


def test_metric_histories_bulk_inserted_exactly_as_log_batch_writes_them(tmp_path, monkeypatch):
    """The SQL store's bulk insert (tracking._insert_new_history) leaves the rows log_batch leaves: every value
    (NaN as 0 with is_nan, infinities as the largest doubles), step and timestamp, duplicates once, and the latest
    value per key by (step, timestamp, value) whatever the order they come in."""
    import sqlite3

    from mlflow.entities import Metric

    from fedbench import tracking

    db = tmp_path / "store.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    nan, inf = float("nan"), float("inf")
    metrics = [Metric("train/loss", v, 1_000 + s, s) for s, v in enumerate([2.0, 1.5, nan, inf, -inf, 0.25])]
    metrics += [Metric("test/accuracy", 0.5, 2_000, 3), Metric("test/accuracy", 0.7, 2_000, 1),
                Metric("test/accuracy", 0.5, 2_000, 3), Metric("test/accuracy", 0.6, 2_000, 3),
                Metric("diverging", nan, 5, 0)]
    real, taken = tracking._insert_new_history, []

    def bulk_insert(*args):
        taken.append(real(*args))
        return taken[-1]

    with tracking._store() as client:
        exp = tracking.experiment_id(client, "train-x")
        ids = []
        for bulk in (True, False):
            monkeypatch.setattr(tracking, "_insert_new_history", bulk_insert if bulk else lambda *a: False)
            record = tracking.Record(f"bulk={bulk}", f"fp-{bulk}", {}, {}, [], 0, 1)
            with tracking._mlflow_run(client, exp, record) as run_id:
                tracking._log_batched(client, run_id, metrics, [tracking.Param("a", "1"), tracking.Param("b", "x y")])
            ids.append(run_id)
    assert taken == [True]  # the SQL store took the bulk insert
    with sqlite3.connect(db) as con:
        def rows(table: str, run_id: str) -> list:
            return sorted(con.execute(f"SELECT key, value, timestamp, step, is_nan FROM {table} WHERE run_uuid = ?",
                                      (run_id,)))
        assert len(rows("metrics", ids[1])) == 10  # the duplicate once
        assert rows("metrics", ids[0]) == rows("metrics", ids[1])
        assert rows("latest_metrics", ids[0]) == rows("latest_metrics", ids[1]) == [
            ("diverging", 0.0, 5, 0, 1), ("test/accuracy", 0.6, 2000, 3, 0), ("train/loss", 0.25, 1005, 5, 0)]
    runs = [MlflowClient(f"sqlite:///{db}").get_run(i).data for i in ids]
    assert runs[0].params == runs[1].params == {"a": "1", "b": "x y"}
    assert repr(runs[0].metrics) == repr(runs[1].metrics)  # NaN included (NaN != NaN)


def test_curves_drawn_ahead_in_workers_are_the_figures_drawn_in_turn(tmp_path):
    """track_all draws the runs' curves in worker processes (fedbench.track.Curves) while it logs: the same PNG
    bytes as run_curves drawn in the logging process, and the temporary folder is gone once closed."""
    from contextlib import closing

    from fedbench.plotting import run_curves
    from fedbench.track import Curves

    history = [{"round": r, "train/loss": 2.0 / (r + 1), "test/accuracy": 0.5 + r / 50, "train/dissimilarity": 0.1 * r}
               for r in range(12)]
    summaries = [{"fingerprint": f"fp-{i}", "params": {"seed": i}, "history": history[: 6 + i]} for i in range(3)]
    with closing(Curves(2)) as curves:
        for s in summaries:
            curves.draw(s, f"title {s['fingerprint']}")
        drawn = {s["fingerprint"]: curves.wait(s["fingerprint"]) for s in summaries}
        assert "fp-9" not in curves and all(s["fingerprint"] in curves for s in summaries)
        for s in summaries:
            alone = run_curves(s["history"], tmp_path / f"{s['fingerprint']}.png", title=f"title {s['fingerprint']}")
            assert drawn[s["fingerprint"]].read_bytes() == alone.read_bytes()
    assert not any(p.exists() for p in drawn.values())


def test_simulation_arm_from_its_arm_or_method_param_else_its_name():
    from fedbench.track import simulation_tags

    sim = {"name": "paper-sampling/fedavg/seed=0", "param_digest": "d", "params": {"arm": "fedavg", "seed": 0}}
    assert simulation_tags(sim) | {"fedbench.fingerprint": "-"} == {"arm": "fedavg", "seed": "0",
                                                                    "fedbench.fingerprint": "-"}
    mime = {"name": "Mime (SGDm)/lr=0.001/seed=100", "param_digest": "d",
            "params": {"method": "Mime (SGDm)", "variant": "mime", "seed": 100, "rounds": 100}}
    assert {k: simulation_tags(mime)[k] for k in ("arm", "seed", "rounds")} == {"arm": "Mime (SGDm)", "seed": "100",
                                                                                "rounds": "100"}
    other = mime | {"param_digest": "e"}  # same settings, other final parameters: another fingerprint
    assert simulation_tags(other)["fedbench.fingerprint"] != simulation_tags(mime)["fedbench.fingerprint"]
    assert len(simulation_tags(mime)["fedbench.fingerprint"]) == 16


def test_a_training_run_and_a_claim_simulation_are_one_kind_of_record():
    """Issue 30 item 5: one path. A training run and a claim study's simulation become the same tracking.Record,
    tagged alike (study, budget, arm, seed, rounds, commit, digest, device, final values), their histories as step
    metrics ending when they finished."""
    from fedbench.track import run_record, simulation_record

    summary = _summary()
    train = run_record("stragglers", "a", summary, summary["params"], lambda: [], finished_ms=1_000_000)
    sim = {"name": "fedprox/seed=3", "param_digest": "p0", "device": "cpu", "diverged": False, "seconds": 3.0,
           "params": {"arm": "fedprox", "seed": 3, "rounds": 3}, "final": {"train/loss": 1.8},
           "metrics": {"gain": 0.25}, "history": {"train/loss": [2.0, 1.9, 1.8]}}
    claim = simulation_record(sim, {"study": "fedprox_synthetic", "budget": "pipeline", "git_commit": "abc"}, 1_000_000)
    shared = ("study", "budget", "arm", "seed", "rounds", "git_commit", "param_digest", "device", "diverged",
              "final/train_loss")
    assert {k: train.tags[k] for k in shared} == {
        "study": "stragglers", "budget": "pipeline", "arm": "fedprox_mu1", "seed": "3", "rounds": "3",
        "git_commit": "abc", "param_digest": "p0", "device": "cpu", "diverged": "False", "final/train_loss": "1.8"}
    assert {k: claim.tags[k] for k in shared} == {
        "study": "fedprox_synthetic", "budget": "pipeline", "arm": "fedprox", "seed": "3", "rounds": "3",
        "git_commit": "abc", "param_digest": "p0", "device": "cpu", "diverged": "False", "final/train_loss": "1.8"}
    assert "fedbench.fingerprint" not in train.tags | claim.tags  # the record's own field, one tag when logged
    assert (train.fingerprint, len(claim.fingerprint), claim.tags["gain"]) == ("fp-1", 16, "0.25")
    assert [p for p in train.points if p[0] == "train/loss"] == [("train/loss", 2.0, 997_000, 0),
                                                                ("train/loss", 1.9, 998_000, 1),
                                                                ("train/loss", 1.8, 1_000_000, 2)]
    assert claim.points == [("train/loss", 2.0, 998_000, 0), ("train/loss", 1.9, 999_000, 1),
                            ("train/loss", 1.8, 1_000_000, 2)]
    assert (train.start_ms, train.end_ms, claim.start_ms, claim.end_ms) == (997_000, 1_000_000, 997_000, 1_000_000)


def test_runs_differing_only_in_rounds_differ_in_name_tags_and_show(tmp_path, monkeypatch, capsys, store_uri):
    """Issue 29 item 4: a 10-round and a 200-round run of one cell were both "fedavg 90% s0 synthetic_1_1" in
    MLflow and `fedbench show`. Now the name carries what differs from params.yaml (rounds=10), the tags rounds,
    budget and study are columns, and `show` lists both apart."""
    from fedbench import tracking
    from fedbench.cli import main
    from fedbench.config import load_config
    from fedbench.study.experiments import run_params
    from fedbench.track import track_runs

    repo_params = Path(__file__).resolve().parents[1] / "params.yaml"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(repo_params.read_text())  # the defaults `fedbench run` is told apart from
    defaults = load_config("params.yaml")
    assert defaults.train.rounds == 200  # params.yaml's: the main job's budget
    main_run, short_run = _summary("a1b2c3d4e5f60718"), _summary("0f1e2d3c4b5a6978")
    main_run["params"] = run_params(defaults, "synthetic_1_1", "fedavg", 0.9, 0)
    short_run["params"] = run_params(load_config("params.yaml", {"train.rounds": 10}), "synthetic_1_1", "fedavg", 0.9, 0)
    for s in (main_run, short_run):
        s["history"] = [row | {"train/dissimilarity": 0.1} for row in s["history"]]  # the curves figure draws it
    # the track stage passes its config; `fedbench run --set train.rounds=10` leaves the defaults to params.yaml
    (main_id,) = track_runs("stragglers", [main_run], tmp_path / "runs", defaults=defaults)
    (short_id,) = track_runs("adhoc", [short_run], tmp_path / "runs")

    client = MlflowClient(f"sqlite:///{tmp_path / 'store.db'}")
    main_mlflow, short_mlflow = client.get_run(main_id), client.get_run(short_id)
    assert main_mlflow.info.run_name == "fedavg 90% s0 synthetic_1_1"
    assert short_mlflow.info.run_name == "fedavg 90% s0 rounds=10 synthetic_1_1"
    tags = ("rounds", "budget", "study", "fedbench.fingerprint")
    assert {k: main_mlflow.data.tags[k] for k in tags} == {"rounds": "200", "budget": "pipeline", "study": "stragglers",
                                                           "fedbench.fingerprint": "a1b2c3d4e5f60718"}
    assert {k: short_mlflow.data.tags[k] for k in tags} == {"rounds": "10", "budget": "custom", "study": "adhoc",
                                                            "fedbench.fingerprint": "0f1e2d3c4b5a6978"}
    listed = {r["run"]: r for r in tracking.list_runs()}
    assert {name: (r["experiment"], r["rounds"], r["budget"]) for name, r in listed.items()} == {
        "fedavg 90% s0 synthetic_1_1": ("train-stragglers", "200", "pipeline"),
        "fedavg 90% s0 rounds=10 synthetic_1_1": ("train-adhoc", "10", "custom")}
    main(["show"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["experiment", "run", "rounds", "budget", "status", "final/train_loss",
                              "final/test_accuracy", "reporting/test_accuracy"]
    rows = sorted(line.split() for line in out[1:])
    assert rows == [["train-adhoc", "fedavg", "90%", "s0", "rounds=10", "synthetic_1_1", "10", "custom",
                     "FINISHED", "1.8000", "0.5200", "0.5200"],
                    ["train-stragglers", "fedavg", "90%", "s0", "synthetic_1_1", "200", "pipeline",
                     "FINISHED", "1.8000", "0.5200", "0.5200"]]


def test_a_run_differs_by_each_setting_that_is_not_the_defaults():
    from fedbench.track import differs, run_name

    defaults = {"dataset": "d", "variant": "fedprox_mu1", "algo.mu": 1.0, "seed": 0, "rounds": 200, "lr": 0.01}
    run = defaults | {"seed": 3, "algo.mu": 0.5, "lr": 0.03, "dissimilarity_samples": 100}
    assert differs(run, defaults) == {"algo.mu": 0.5, "lr": 0.03, "dissimilarity_samples": 100}  # not seed: named
    assert differs({k: v for k, v in defaults.items() if k != "lr"}, defaults) == {"lr": "-"}
    assert differs(run, None) == {}  # defaults unknown: the fingerprint alone tells runs apart
    named = run | {"algorithm": "fedprox", "straggler_fraction": 0.1}
    # the hyperparameter once, in the algorithm's label (the run's value), the other differences after the seed
    assert run_name(named, differs(run, defaults)) == "fedprox mu=0.5 10% s3 lr=0.03 dissimilarity_samples=100 d"
    assert run_name(named | {"algo.mu": 1.0}) == "fedprox mu=1 10% s3 d"  # defaults unknown: no differences
    assert run_name({"algorithm": "fedavg", "straggler_fraction": 0.0, "seed": 0, "dataset": "d"}) == "fedavg 0% s0 d"


ALLOWED = ("allowed: sqlite:///<path> (a SQLite file), http(s)://<host>:<port> (an MLflow server), another store MLflow "
           "opens (e.g. postgresql://...), or unset (mlflow.db in the working directory)")
FILE_STORE = "is not allowed (a path or a file: URI is MLflow's file store, which MLflow 3 refuses)"


@pytest.mark.parametrize("command", [["show"], ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg",
                                                "--stragglers", "0", "--seed", "0"]], ids=["show", "run"])
@pytest.mark.parametrize("value, problem", [
    ("{tmp}/x", FILE_STORE),
    ("file://{tmp}/x", FILE_STORE),
    ("sqlite://{tmp.name}.db", "is not allowed (a SQLite store is sqlite:/// followed by its file's path)"),
], ids=["path", "file-uri", "sqlite-without-a-path"])
def test_a_tracking_uri_fedbench_cannot_use_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys,
                                                                                   command, value, problem):
    """`MLFLOW_TRACKING_URI=/tmp/x fedbench show` printed MLflow's traceback ("The filesystem tracking backend ... is in
    maintenance mode") and exited 1; `fedbench run` failed so once its runs had finished. Now both say it in one line,
    exit 2, and write nothing (no data, runs, store or lock file)."""
    from fedbench.cli import main
    from fedbench.tracking_index import store_lock_path

    repo_params = Path(__file__).resolve().parents[1] / "params.yaml"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(repo_params.read_text())
    uri = value.format(tmp=tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    with pytest.raises(SystemExit) as exited:
        main(command)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"fedbench: config error: MLFLOW_TRACKING_URI: {uri!r} {problem}; {ALLOWED}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["params.yaml"] and not store_lock_path(uri).exists()


def test_a_tracking_uri_mlflow_cannot_open_is_one_line(tmp_path, monkeypatch, capsys):
    from fedbench.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "nosuch://store")
    with pytest.raises(SystemExit) as exited:
        main(["show"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and err.endswith(f"; {ALLOWED}\n")
    assert err.startswith("fedbench: config error: MLFLOW_TRACKING_URI: 'nosuch://store' cannot be opened (")


@pytest.mark.parametrize("uri, env", [("{tmp}/mlruns", {"MLFLOW_ALLOW_FILE_STORE": "true"}), ("databricks", {}),
                                      ("postgresql://u@host/db", {}), ("http://127.0.0.1:5000", {})],
                         ids=["file-store-opted-in", "databricks", "postgresql", "server"])
def test_a_tracking_uri_mlflow_takes_is_not_refused(uri, env, tmp_path, monkeypatch):
    """The check refuses only what fedbench cannot use: MLflow's file store where MLflow's own opt-in allows it, its
    named URIs without a scheme and other stores' schemes pass to MLflow."""
    from fedbench.tracking import checked_uri

    uri = uri.format(tmp=tmp_path)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert checked_uri() == uri


@pytest.mark.parametrize("set_uri", [False, True], ids=["default-store", "MLFLOW_TRACKING_URI"])
def test_a_store_that_is_no_sqlite_database_or_lies_under_a_file_is_one_line(set_uri, tmp_path, monkeypatch, capsys):
    """`echo garbage > mlflow.db` made `fedbench show` and `run` end in SQLAlchemy's DatabaseError traceback; a store
    whose folder is a file, in a FileExistsError traceback once the runs had trained."""
    from fedbench.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlflow.db").write_text("garbage\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    if set_uri:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    else:
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    given = "MLFLOW_TRACKING_URI" if set_uri else "the tracking store (the default)"
    with pytest.raises(SystemExit) as exited:
        main(["show"])
    assert exited.value.code == 2 and capsys.readouterr().err == (
        f"fedbench: config error: {given}: {uri!r} is no SQLite database ({tmp_path / 'mlflow.db'} holds something "
        f"else: move it away, and a new store is made there); {ALLOWED}\n")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri + "/x.db")
    with pytest.raises(SystemExit) as exited:
        main(["show"])
    assert exited.value.code == 2 and capsys.readouterr().err == (
        f"fedbench: config error: MLFLOW_TRACKING_URI: {uri + '/x.db'!r} cannot be created ({tmp_path / 'mlflow.db'} "
        f"is a file, not a folder); {ALLOWED}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlflow.db"]


def test_each_headline_chart_selects_its_two_algorithms_runs_and_no_more_than_the_chart_view_draws():
    """`fedbench ui` prints a chart link per headline comparison (issue 52, item 6): each filter, as MLflow parses
    it, selects exactly the runs of its variants on its dataset and straggler level: at most 10 (the chart view draws
    the first 10 visible runs)."""
    from mlflow.utils.search_utils import SearchUtils

    from fedbench.config import load_config
    from fedbench.track import HEADLINE_CHARTS, headline_charts

    cfg = load_config(Path(__file__).resolve().parents[1] / "params.yaml")
    charts = headline_charts(cfg)
    assert [c[1] for c in charts] == ["train-stragglers", "train-heterogeneity", "train-fedprox_mnist5k"]
    for chart, (_, _, search) in zip(HEADLINE_CHARTS, charts):
        parsed = SearchUtils.parse_search_filter(search)
        cells = [(s, d, v, f) for s, d, v, f in cfg.cells([chart.study])]

        def selected(d, v, f):
            tags = {"dataset": d, "variant": v, "stragglers": f"{f:g}"}
            return all((tags[c["key"]] == c["value"]) == (c["comparator"] == "=") for c in parsed)

        chosen = sorted({v for _, d, v, f in cells if selected(d, v, f)})
        assert chosen == sorted(chart.variants)
        assert len(chosen) * len(cfg.train.seeds) <= 10


def _three_runs(experiment: str = "train-stragglers") -> list[dict]:
    """FedAvg seed 0, FedProx mu=1 seeds 0 and 1, logged as the track stage logs them; their summaries."""
    from fedbench.track import run_name

    out = []
    for fp, variant, seed in (("fp-0", "fedavg", 0), ("fp-1", "fedprox_mu1", 0), ("fp-2", "fedprox_mu1", 1)):
        s = _summary(fp)
        s["params"] |= {"variant": variant, "algorithm": variant.split("_")[0], "seed": seed}
        if variant == "fedavg":
            del s["params"]["algo.mu"]
        log_train(experiment, run_name(s["params"]), s, lambda: [])
        out.append(s)
    return out


def test_the_ui_links_open_views_with_the_params_that_differ_and_the_metrics_as_columns(store_uri):
    """Issue 52 item 5: MLflow 3.17's runs table shows no params or metrics by default, and only a shared view
    (an experiment tag) lets a link choose its columns. `fedbench ui` saves one per experiment (the params that take
    two values or more, or are set on some runs only; the metrics), one per chart link with its search filter,
    and prints the links that open them; a nested study run's parent does not count."""
    import json

    from fedbench import tracking
    from fedbench.track import TABLE_METRICS, TABLE_PARAMS

    uri = store_uri
    _three_runs()
    child = tracking.Record("sim", "fp-c", {}, {"arm": "a", "seed": "0"}, [("test/loss", 1.0, 1, 0)], 0, 1)
    tracking.log_study("claims-toy", tracking.Record("toy", "fp-s", {}, {"study": "toy"}, [], 0, 1),
                       [child, child.__class__(**{**child.__dict__, "fingerprint": "fp-d",
                                                  "params": {"arm": "b", "seed": "0"}})])
    search = "tags.variant != 'fedprox_mu0'"
    tables, charts = tracking.ui_links("http://h:1", [("FedProx vs FedAvg", "train-stragglers", search),
                                                      ("not logged", "train-other", "x")], TABLE_PARAMS, TABLE_METRICS)
    client = MlflowClient(uri)
    ids = {e.name: e.experiment_id for e in client.search_experiments()}
    train, toy = ids["train-stragglers"], ids["claims-toy"]
    runs = "runs?workflowType=machine_learning&viewStateShareKey"
    assert tables == [("claims-toy", f"http://h:1/#/experiments/{toy}/{runs}=fedbench"),
                      ("train-stragglers", f"http://h:1/#/experiments/{train}/{runs}=fedbench")]
    key = tracking.view_key(search)
    assert key.startswith("fedbench-") and len(key) == len("fedbench-") + 8
    assert charts == [("FedProx vs FedAvg", f"http://h:1/#/experiments/{train}/{runs}={key}&compareRunsMode=CHART")]
    width = {"columnOrder": ["attributes.`Run Name`"], "columnWidths": {"attributes.`Run Name`": 300}}
    tags = client.get_experiment(train).tags
    assert json.loads(tags["mlflow.sharedViewState.fedbench"]) == {
        "selectedColumns": ["params.`algorithm`", "params.`algo.mu`", "params.`seed`", "params.`variant`",
                            "metrics.`test/accuracy`", "metrics.`train/loss`", "metrics.`wall_time_s`"],
        "searchFilter": "", **width}
    assert json.loads(tags[f"mlflow.sharedViewState.{key}"])["searchFilter"] == search
    assert json.loads(client.get_experiment(toy).tags["mlflow.sharedViewState.fedbench"]) == {
        "selectedColumns": ["params.`arm`", "metrics.`test/loss`"], "searchFilter": "", **width}  # not the study's
    assert tracking.experiments_link("http://h:1") == "http://h:1/#/experiments?workflowType=machine_learning"


def test_a_moved_store_points_at_its_own_artifacts(tmp_path, monkeypatch):
    """Issue 52, item 7: mlflow.db keeps absolute artifact locations, so a checkout moved with its store showed the
    old folder's artifacts in the UI (or none once it was gone). Opening the store points them beside it."""
    from fedbench import tracking

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    (tmp_path / "curves.png").write_bytes(b"png")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{old / 'mlflow.db'}")
    run_id = log_train("train-stragglers", "a", _summary(), lambda: [tmp_path / "curves.png"])
    shutil.copytree(old, new)
    shutil.rmtree(old)
    uri = f"sqlite:///{new / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    assert tracking.experiment_names() == ["train-stragglers"]  # any opening of the store moves them
    client = MlflowClient(uri)
    (exp,) = client.search_experiments()
    assert exp.artifact_location == (new / "mlruns" / "train-stragglers").as_uri()
    assert client.get_run(run_id).info.artifact_uri.startswith((new / "mlruns" / "train-stragglers").as_uri() + "/")
    assert [a.path for a in client.list_artifacts(run_id)] == ["curves.png"]
    assert tracking.relocate_artifacts(new / "mlflow.db") == 0  # in place: nothing to move

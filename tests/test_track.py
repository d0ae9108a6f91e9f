"""The track stage's claim-study logging: one MLflow run per study with one nested run per recorded simulation,
logged once (a second pass adds nothing; a rerun study is logged anew)."""

from __future__ import annotations

import json
import shutil

import pytest
from mlflow.tracking import MlflowClient

from fedbench.studies import delta_fl_triangle, run_claim_study
from fedbench.studies.record import read_simulations
from fedbench.track import track_study


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    """The delta_fl_triangle study at 5 rounds, run once for the module: (its root folder, its claims)."""
    root = tmp_path_factory.mktemp("studies")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(delta_fl_triangle, "ROUNDS", 5)
        claims = run_claim_study("delta_fl_triangle", root)
    return root, claims


def _copy_study(study_run, tmp_path):
    """A private copy of the study's root folder (a test may change the files), and the claims."""
    root, claims = study_run
    shutil.copytree(root, tmp_path / "studies")
    return tmp_path / "studies", claims


def test_study_logged_once_with_a_nested_run_per_simulation(tmp_path, monkeypatch, study_run):
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    root, claims = _copy_study(study_run, tmp_path)
    records = read_simulations(root / "delta_fl_triangle")
    assert len(records) == 5

    parent_id = track_study("delta_fl_triangle", root)
    assert track_study("delta_fl_triangle", root) == parent_id  # logged already: nothing added
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name("study-delta_fl_triangle").experiment_id
    runs = client.search_runs([exp_id])
    children = {r.info.run_name: r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent_id}
    assert len(runs) == len(records) + 1 and set(children) == {r["name"] for r in records}
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED" and parent.data.tags[f"verdict.{claims[0]['id']}"] == claims[0]["verdict"]
    assert {a.path for a in client.list_artifacts(parent_id)} >= {"claims.json", "simulations.jsonl"}
    for rec in records:
        run = children[rec["name"]]
        assert run.info.status == "FINISHED" and run.data.tags["param_digest"] == rec["param_digest"]
        assert run.data.params == {k: str(v) for k, v in rec["params"].items()}
        w0 = client.get_metric_history(run.info.run_id, "model/w0")
        assert [(m.step, m.value) for m in w0] == list(enumerate(rec["history"]["model/w0"]))
        assert run.data.metrics["final/train_loss"] == rec["final"]["train/loss"]

    body = json.loads((root / "delta_fl_triangle" / "claims.json").read_text())
    (root / "delta_fl_triangle" / "claims.json").write_text(json.dumps(body | {"seconds": body["seconds"] + 1}))
    assert track_study("delta_fl_triangle", root) != parent_id  # a rerun study is a new study run
    assert len(client.search_runs([exp_id])) == 2 * (len(records) + 1)


def test_interrupted_logging_is_replaced_not_duplicated(tmp_path, monkeypatch, study_run):
    from fedbench import tracking

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    root, _ = _copy_study(study_run, tmp_path)
    records = read_simulations(root / "delta_fl_triangle")

    real, calls = tracking._log_simulation, []

    def fail_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise ConnectionError("store went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(tracking, "_log_simulation", fail_on_third)
    with pytest.raises(ConnectionError):
        track_study("delta_fl_triangle", root)
    client = MlflowClient(uri)
    exp_id = client.get_experiment_by_name("study-delta_fl_triangle").experiment_id
    assert len(client.search_runs([exp_id])) == 1 + 2  # a FAILED parent and the two children it had logged
    monkeypatch.setattr(tracking, "_log_simulation", real)
    parent_id = track_study("delta_fl_triangle", root)
    runs = client.search_runs([exp_id])
    assert len(runs) == len(records) + 1 and all(r.info.status == "FINISHED" for r in runs)
    assert {r.data.tags.get("mlflow.parentRunId") for r in runs} == {None, parent_id}

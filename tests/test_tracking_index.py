"""fedbench.tracking_index: whether a run is logged, read from a SQLite store's file without MLflow (issue 29 item 6:
reusing a finished run spent about 10 of its 15 s loading MLflow and opening its store). Its answers are MLflow's
own (fedbench.tracking.find_logged) on a real store, case by case."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.test_track import _summary, log_train

ROOT = Path(__file__).resolve().parents[1]


def test_the_store_files_answer_is_mlflows(tmp_path, monkeypatch):
    from fedbench import tracking, tracking_index

    db = tmp_path / "store.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    assert tracking_index.find_logged("fp-1") is None and not db.exists()  # no store: none, and none made
    finished = log_train("train-a", "finished", _summary("fp-1"), lambda: [])
    deleted_run = log_train("train-a", "deleted run", _summary("fp-2"), lambda: [])
    in_deleted_exp = log_train("train-b", "in a deleted experiment", _summary("fp-3"), lambda: [])
    client = MlflowClient(f"sqlite:///{db}")
    client.delete_run(deleted_run)
    client.delete_experiment(client.get_experiment_by_name("train-b").experiment_id)
    failed = client.create_run(client.get_experiment_by_name("train-a").experiment_id,
                               tags={"fedbench.fingerprint": "fp-4"}).info.run_id
    client.set_terminated(failed, "FAILED")
    running = client.create_run(client.get_experiment_by_name("train-a").experiment_id,
                                tags={"fedbench.fingerprint": "fp-5"}).info.run_id  # being logged: not yet
    assert in_deleted_exp and running
    answers = {fp: tracking_index.find_logged_in_sqlite(db, fp) for fp in ("fp-1", "fp-2", "fp-3", "fp-4", "fp-5", "fp-6")}
    assert answers == {"fp-1": ("train-a", finished), "fp-2": None, "fp-3": None, "fp-4": None, "fp-5": None,
                       "fp-6": None}
    assert answers == {fp: tracking.find_logged(fp) for fp in answers}  # MLflow's own answers


def test_a_file_it_cannot_read_is_asked_of_mlflow(tmp_path, monkeypatch):
    import sqlite3

    from fedbench import tracking, tracking_index
    from fedbench.track import logged

    odd = tmp_path / "odd.db"
    with sqlite3.connect(odd) as con:  # a SQLite file without MLflow's tables (another schema)
        con.execute("CREATE TABLE runs (x)")
    with pytest.raises(tracking_index.Unanswered, match="no such table"):
        tracking_index.find_logged_in_sqlite(odd, "fp-1")
    asked = []
    monkeypatch.setattr(tracking, "find_logged", lambda fp: asked.append(fp) or ("train-x", "r1"))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{odd}")
    assert logged("fp-1") == ("train-x", "r1") and asked == ["fp-1"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")  # not a file: MLflow answers
    with pytest.raises(tracking_index.Unanswered, match="not a SQLite store"):
        tracking_index.find_logged("fp-2")
    assert logged("fp-2") == ("train-x", "r1") and asked == ["fp-1", "fp-2"]
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'none.db'}")
    assert logged("fp-3") is None and asked == ["fp-1", "fp-2"]  # no store yet: answered from the file system


PROBE = """
import sys
from pathlib import Path
from fedbench.study.experiments import outcome_path
from fedbench.track import track_runs
s = {"fingerprint": "fp-1", "params": {"seed": 3}}  # a logged run's summary: only its fingerprint is read
ids = track_runs("adhoc", [s], Path(sys.argv[1]))
assert outcome_path(Path(sys.argv[1]), s["fingerprint"]).name == "fp-1.json"
print(ids[0], sorted(m for m in ("mlflow", "matplotlib", "torch") if m in sys.modules))
"""


def test_a_logged_run_is_found_without_loading_mlflow(tmp_path, monkeypatch):
    """What `fedbench run` does for a run it reuses (fedbench.cli: track_runs, then the run's location) loads
    neither MLflow nor matplotlib when the run is logged already."""
    from fedbench import tracking

    uri = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    run_id = log_train("train-stragglers", "a", _summary("fp-1"), lambda: [])
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "runs")], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": uri})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split(maxsplit=1) == [run_id, "[]\n"]

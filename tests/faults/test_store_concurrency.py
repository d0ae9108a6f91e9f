"""Item 2: runs sharing a fresh MLflow store at once. Before: two `fedbench run` at once on a fresh store
crashed in MLflow's migrations ("table ... already exists", once leaving mlflow.db unusable); the same seed twice
at once logged duplicate FINISHED runs, or a FAILED one after both wrote the same temporary figure file. Now the
store is created once under a lock, "is it logged? log it" is atomic, and the same run is computed once."""

import sqlite3
from collections import Counter

import pytest


@pytest.mark.slow
def test_processes_on_a_fresh_store(ws):
    args = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg"]
    procs = [ws.start(*args, "--seed", str(seed)) for seed in (1, 1, 2, 2)]
    results = [ws.finish(p) for p in procs]
    for p, err in zip(procs, results):
        assert p.returncode == 0, err[-3000:]
    runs = ws.runs()
    assert all(r.info.status == "FINISHED" for r in runs), [(r.info.run_name, r.info.status) for r in runs]
    names = Counter(r.info.run_name for r in runs)  # the workspace's params.yaml is the defaults: no differences
    assert names == {f"fedavg 0% s{s} synthetic_1_1": 1 for s in (1, 2)}, names  # none twice
    with sqlite3.connect(ws.store) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    computed = sum("(reused)" not in err for err in results)  # the same seed twice: computed once
    assert computed == 2, [err[-300:] for err in results]
    leftovers = [p.name for p in ws.path.rglob("*") if p.name.startswith(".curves") or p.suffix == ".tmp"]
    assert leftovers == []
    from mlflow.tracking import MlflowClient

    MlflowClient(ws.uri).create_experiment("later")  # the store is usable afterwards

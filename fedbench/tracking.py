"""MLflow tracking: the only module that imports mlflow.

The store is a local SQLite file (``mlflow.db`` in the working directory, ignored by git) unless
``MLFLOW_TRACKING_URI`` says otherwise. One experiment per study (names: fedbench.track), each marked a model
training experiment (MLFLOW_KIND) and described (``mlflow.note.content``); MLflow's empty ``Default``
experiment is deleted. One run per (algorithm variant, setting, seed), named by fedbench.track (``fedprox_mu1 90% s0
synthetic_1_1 #3f2a1b``: what differs from params.yaml, then the start of its fingerprint) with dataset, algorithm,
variant, stragglers, mu, seed, rounds, study and budget as tags; per-round metrics are step
metrics named ``split/name``, stamped with the run's real round times (its start plus the cumulated
``wall_time_s``), so the UI's time axes and the run's duration are its training's; final values are tags
(``final/<name>``), summary values rather than one-point charts; tags also record the git commit, dataset
content hash, device and library versions; the per-device final metrics, the history and a figure of the run's
curves are artifacts. A claim study is one run with one nested run per simulation it ran, each tagged study,
budget, arm, seed, rounds and its fingerprint. A run already logged
with the same fingerprint, in any experiment, is not logged again, so rerunning the pipeline, or `fedbench run`
reusing a run of the pipeline, does not duplicate runs (fedbench.tracking_index answers "is it logged?" from a
SQLite store's file without loading MLflow).

The UI: MLflow 3.17 opens in its GenAI mode (runs hidden) unless told otherwise: its mode is the link's
``?workflowType=`` query, else the browser's ``mlflow.workflowType`` setting, default ``genai``; the experiment
tag ``mlflow.experimentKind`` (MLFLOW_KIND marks model training) does not win over it (checked in headless
Chromium: ``#/experiments/<id>`` opens GenAI's overview). ``fedbench ui`` prints, once the server answers, each
experiment's runs link carrying ``?workflowType=machine_learning``.

Concurrent writers: every use of the store holds its lock (``mlflow.db.lock`` beside a SQLite store; for
other stores a lock file in the temporary folder keyed by the URI, which serialises this machine's writers
only). So one process at a time creates a fresh store (two at once break MLflow's migrations: "table ...
already exists", which can leave the file unusable), a SQLite store appears complete or not at all (built in
a temporary file, then renamed), and "is this fingerprint logged? if not, log it" is atomic: the same run
logged by two processes at once is logged once, and an attempt cut short (a killed process) is replaced, not
kept beside the new one. Reading (``fedbench show``) never creates a store.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

import mlflow
from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from fedbench.locking import file_lock
from fedbench.parallel import Terminated, supervised
from fedbench.tracking_index import DEFAULT_DB, SQLITE, store_lock_path, tracking_uri  # noqa: F401 (also ours)
MLFLOW_KIND = ("mlflow.experimentKind", "custom_model_development")  # the UI's "Model training" experiments
NOTE = "mlflow.note.content"  # the experiment's (and a run's) description in the UI
DEFAULT_EXPERIMENT = "0"  # MLflow's "Default", made with every store; fedbench logs nothing there
UI_MODE = "workflowType=machine_learning"  # the UI query that opens MLflow 3 on runs, not GenAI traces
UI_READY_TIMEOUT_S = 300.0  # `fedbench ui` waits this long for the server to answer: 12 s idle, 90 s at load 10 here
UI_POLL_S = 0.5  # between two health checks while it starts
METRIC_KEYS = ("train/loss", "train/accuracy", "test/loss", "test/accuracy", "train/dissimilarity",
               "test/error_p90", "diverging", "wall_time_s")
LISTED_TAGS = ("rounds", "budget")  # the tags `fedbench show` lists beside a run's name


_WAL_STORES: set[str] = set()  # the SQLite stores fedbench opens (resolved paths): the only ones _sqlite_wal touches


@event.listens_for(Engine, "connect")
def _sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    """A SQLite store in write-ahead-log mode with ``synchronous=NORMAL``: a commit appends to the log without
    waiting for the disk (SQLite's default waits, about 15 ms a commit here, and logging the main job's runs
    commits about 7,000 times); the store stays consistent after a killed process or a power loss, which may
    lose only the last commits. A store being created (the temporary file renamed into place) keeps SQLite's
    default journal, so that the rename moves everything it wrote. Any other SQLite database that SQLAlchemy
    opens in the same process (another library's, a user's) is left as it is."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    main = next((row[2] for row in dbapi_connection.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not main or str(Path(main).resolve()) not in _WAL_STORES:
        return
    dbapi_connection.execute("PRAGMA journal_mode=WAL")
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


@contextmanager
def _store(create: bool = True) -> Iterator[MlflowClient | None]:
    """A client of the tracking store, for use while this block holds the store's lock. With ``create=False``,
    a SQLite store that does not exist yet is not created: the block gets None."""
    uri = tracking_uri()
    if not create and uri.startswith(SQLITE) and not Path(uri[len(SQLITE):]).exists():
        yield None  # nothing to read, and nothing (not even the lock file) is created
        return
    with file_lock(store_lock_path(uri)):
        if uri.startswith(SQLITE):
            db = Path(uri[len(SQLITE):])
            if not db.exists():
                _create_sqlite_store(db)
            _WAL_STORES.add(str(db.resolve()))
        mlflow.set_tracking_uri(uri)
        yield MlflowClient(uri)


def _create_sqlite_store(db: Path) -> None:
    """Create the SQLite store ``db`` all at once (the caller holds its lock): MLflow builds its tables in a
    temporary file beside it, renamed into place once complete, so a process killed meanwhile leaves no
    half-made store behind, only a temporary file that the next creation removes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    for stale in db.parent.glob(f".{db.name}.init-*"):  # from a creation that was killed
        stale.unlink()
    tmp = db.with_name(f".{db.name}.init-{os.getpid()}")
    client = MlflowClient(f"{SQLITE}{tmp}")
    client.delete_experiment(DEFAULT_EXPERIMENT)  # empty; a deleted one is not made again
    for log in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        log.unlink(missing_ok=True)  # a deleted store's write-ahead log must never be read as the new one's
    os.replace(tmp, db)


def artifact_location(experiment: str) -> str | None:
    """Where a new experiment's artifacts go: for a SQLite store, ``mlruns/<experiment>/`` beside the store file, so
    they stay with their store whatever folder the command runs in (MLflow's default, ``./mlruns`` of the current
    folder, scattered them, and left a test's artifacts in the checkout); for a server, None (the server decides)."""
    uri = tracking_uri()
    if not uri.startswith(SQLITE):
        return None
    return (Path(uri[len(SQLITE):]).resolve().parent / "mlruns" / experiment).as_uri()


def experiment_id(client: MlflowClient, name: str, description: str = "") -> str:
    """The id of experiment ``name``, created if needed, marked a model-training experiment and described by
    ``description`` (when given): an experiment of an older store gets both the next time it is logged to."""
    exp = client.get_experiment_by_name(name)
    tags = {MLFLOW_KIND[0]: MLFLOW_KIND[1], **({NOTE: description} if description else {})}
    if exp is None:
        _delete_empty_default(client)
        return client.create_experiment(name, artifact_location=artifact_location(name), tags=tags)
    for key, value in tags.items():
        if exp.tags.get(key) != value:
            client.set_experiment_tag(exp.experiment_id, key, value)
    return exp.experiment_id


def _delete_empty_default(client: MlflowClient) -> None:
    """Delete MLflow's ``Default`` experiment where it is active and holds no run (a store made before fedbench
    deleted it at creation, or by MLflow itself)."""
    try:
        default = client.get_experiment(DEFAULT_EXPERIMENT)
    except MlflowException:
        return
    if default.lifecycle_stage == "active" and not client.search_runs([DEFAULT_EXPERIMENT], max_results=1,
                                                                        run_view_type=ViewType.ALL):
        client.delete_experiment(DEFAULT_EXPERIMENT)


def _finished_or_cleared(client: MlflowClient, exp_id: str, fingerprint: str) -> str | None:
    """The id of the FINISHED run tagged with ``fingerprint``, if there is one in any experiment (a run the main
    job logged is not logged again by `fedbench run` under another). Otherwise every earlier attempt with that
    fingerprint in ``exp_id`` (a FAILED or killed run, and the nested runs it had logged) is deleted, so that
    the attempt about to be made leaves no duplicate behind."""
    tag = f"tags.`fedbench.fingerprint` = '{fingerprint}'"
    found = _finished(client, fingerprint)
    if found:
        return found[0].info.run_id
    stale = client.search_runs([exp_id], filter_string=tag, max_results=1000)
    stale += client.search_runs([exp_id], filter_string=f"tags.`fedbench.parent_fingerprint` = '{fingerprint}'",
                                max_results=50_000)
    for run in stale:
        client.delete_run(run.info.run_id)
    return None


def _finished(client: MlflowClient, fingerprint: str) -> list:
    """The FINISHED run tagged with ``fingerprint`` in any active experiment ([] or one run)."""
    ids = [e.experiment_id for e in client.search_experiments()]
    return client.search_runs(ids, filter_string=f"tags.`fedbench.fingerprint` = '{fingerprint}' and "
                                                 "attributes.status = 'FINISHED'", max_results=1) if ids else []


def find_logged(fingerprint: str) -> tuple[str, str] | None:
    """(experiment name, run id) of the finished run logged with ``fingerprint``, or None (no store: None)."""
    with _store(create=False) as client:
        runs = [] if client is None else _finished(client, fingerprint)
        return (client.get_experiment(runs[0].info.experiment_id).name, runs[0].info.run_id) if runs else None


def log_run(experiment: str, run_name: str, summary: dict[str, Any], artifacts: Callable[[], Iterable[Path]],
            description: str = "", finished_ms: int | None = None, tags: dict[str, str] | None = None) -> str:
    """Log one finished run (its summary with ``history`` rows) into ``experiment`` (described by ``description``);
    returns the MLflow run id. ``artifacts`` is called for the files to attach only when the run is not logged
    already, so they are made only then. ``finished_ms``: when the run finished (default: now), the end of its
    timeline (round_times). ``tags``: more tags (the run's study and budget: fedbench.track)."""
    with _store() as client:
        return _log_run(client, experiment, run_name, summary, artifacts, description, finished_ms, tags or {})


def dvc_experiment() -> str:
    """The DVC experiment this process runs in: ``dvc exp run`` names it in DVC_EXP_NAME for the stage commands;
    "workspace" for a plain ``dvc repro`` or a command run by hand. A run is logged once, by the first experiment
    that computed it; a variation that reuses it logs nothing again."""
    return os.environ.get("DVC_EXP_NAME") or "workspace"


def run_tags(params: dict[str, Any]) -> dict[str, str]:
    """The tags that say which run this is, as columns of the UI's runs table: dataset, algorithm, variant,
    stragglers, mu (``-`` for an algorithm without one), seed and rounds."""
    return {"dataset": str(params["dataset"]), "algorithm": str(params["algorithm"]),
            "variant": str(params["variant"]), "stragglers": f"{float(params['straggler_fraction']):g}",
            "mu": f"{float(params['algo.mu']):g}" if "algo.mu" in params else "-", "seed": str(params["seed"]),
            "rounds": str(params["rounds"])}


def round_times(history: list[dict[str, Any]], finished_ms: int) -> tuple[int, list[int]]:
    """The run's start and each history row's timestamp (ms): the rows' ``wall_time_s`` cumulated from the start,
    which is ``finished_ms`` less their sum (a row without a wall time takes none)."""
    walls = [float(row.get("wall_time_s") or 0.0) for row in history]
    walls = [w if math.isfinite(w) else 0.0 for w in walls]
    start = finished_ms - int(round(1000 * sum(walls)))
    out, t = [], 0.0
    for w in walls:
        t += w
        out.append(start + int(round(1000 * t)))
    return start, out


def _log_run(client: MlflowClient, experiment: str, run_name: str, summary: dict[str, Any],
             artifacts: Callable[[], Iterable[Path]], description: str = "", finished_ms: int | None = None,
             extra_tags: dict[str, str] | None = None) -> str:
    fp = summary["fingerprint"]
    logged = _finished(client, fp)  # in any experiment: `fedbench run` reusing the main job's run adds nothing
    if logged:
        return logged[0].info.run_id
    exp_id = experiment_id(client, experiment, description)
    found = _finished_or_cleared(client, exp_id, fp)
    if found:
        return found
    paths = list(artifacts())
    tags = {
        "mlflow.runName": run_name, "fedbench.fingerprint": fp, "git_commit": summary.get("git_commit", "unknown"),
        **run_tags(summary["params"]),
        "dataset_hash": summary["dataset_hash"], "device": summary["device"], "param_digest": summary["param_digest"],
        "diverged": str(summary["diverged"]), **{f"version.{k}": v for k, v in summary["versions"].items()},
        **_final_tags(summary["final"]), "reporting_reason": summary["reporting_reason"],
        "reporting/round": str(summary["reporting_round"]),
        "dvc.experiment": dvc_experiment(), **(extra_tags or {}),
    }
    if summary["reporting_test_accuracy"] is not None:
        tags["reporting/test_accuracy"] = repr(float(summary["reporting_test_accuracy"]))
    if summary.get("diverged_at_round") is not None:
        tags["diverged_at_round"] = str(summary["diverged_at_round"])
    start, stamps = round_times(summary["history"], int(time.time() * 1000) if finished_ms is None else finished_ms)
    with _mlflow_run(client, exp_id, run_name, tags, start, stamps[-1] if stamps else start) as run_id:
        params = [Param(k, str(v)) for k, v in summary["params"].items()]
        metrics = [
            Metric(key, float(row[key]), stamp, int(row["round"]))
            for row, stamp in zip(summary["history"], stamps) for key in METRIC_KEYS
            if key in row and row[key] is not None and math.isfinite(float(row[key]))
        ]
        _log_batched(client, run_id, metrics, params)
        for path in paths:
            client.log_artifact(run_id, str(path))
    return run_id


@contextmanager
def _mlflow_run(client: MlflowClient, exp_id: str, run_name: str, tags: dict[str, str], start_ms: int | None = None,
                end_ms: int | None = None) -> Iterator[str]:
    """Create a run (started at ``start_ms``, default now) and yield its id; it ends FINISHED (at ``end_ms``,
    default now) when the block completes and FAILED if it raises."""
    run_id = client.create_run(exp_id, start_time=start_ms, run_name=run_name, tags=tags).info.run_id
    try:
        yield run_id
        client.set_terminated(run_id, "FINISHED", end_time=end_ms)
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise


def _final_tags(final: dict[str, float | None]) -> dict[str, str]:
    """``final/<name>`` (slashes in the name become underscores) for each final value that exists, as tags: a
    summary value in the runs table, not a one-point chart."""
    return {f"final/{k.replace('/', '_')}": repr(float(v)) for k, v in final.items() if v is not None}


def _log_batched(client: MlflowClient, run_id: str, metrics: list[Metric], params: Sequence[Param] = (),
                 tags: Sequence[RunTag] = ()) -> None:
    """Log a run's params, tags and metric histories; the run was just created and holds no params or metrics yet.
    Into a SQL store the params and histories go in one bulk insert (:func:`_insert_new_history`); elsewhere (and
    with tags) through log_batch, which takes at most 1000 entities (at most 100 params and tags): the metrics go
    900 at a time, the params and tags with the first batch (one batch even when there are no metrics)."""
    if not tags and _insert_new_history(client, run_id, metrics, params):
        return
    for i in range(0, max(len(metrics), 1), 900):
        client.log_batch(run_id, metrics=metrics[i:i + 900], params=list(params) if i == 0 else [],
                         tags=list(tags) if i == 0 else [])


def _insert_new_history(client: MlflowClient, run_id: str, metrics: list[Metric], params: Sequence[Param] = ()) -> bool:
    """Write the params and metric histories of run ``run_id`` (just created: nothing logged yet) into a SQL
    store's ``params``, ``metrics`` and ``latest_metrics`` tables, one executemany per table and one commit; False
    (nothing written) where the store is not MLflow's SQL store, so the caller logs them through log_batch.

    The rows are those log_batch writes, value for value: MLflow's checks on each metric and param name, NaN stored
    as 0 with is_nan, infinities as the largest doubles (the store's sanitize_metric_value), duplicates dropped,
    and per key the latest (greatest step, timestamp, value; the first of equals). log_batch builds an ORM object
    per metric and updates the latest value metric by metric: the main job's 438,000 metric values took most of
    the track stage's time (about 55 of its 92 s on 2 cores); this takes a few seconds."""
    try:
        from mlflow.store.tracking.dbmodels.models import SqlLatestMetric, SqlMetric, SqlParam
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
        from mlflow.utils.validation import _validate_metric, _validate_param
        from sqlalchemy import insert
        from sqlalchemy.exc import SQLAlchemyError
    except ImportError:  # another MLflow layout: the public API
        return False
    store = getattr(getattr(client, "_tracking_client", None), "store", None)
    if not isinstance(store, SqlAlchemyStore):
        return False
    rows, seen, latest = [], set(), {}
    checked: set[str] = set()
    for m in metrics:
        if m.key not in checked:
            _validate_metric(m.key, m.value, m.timestamp, m.step)
            checked.add(m.key)
        if (m.key, m.value, m.timestamp, m.step) in seen:
            continue
        seen.add((m.key, m.value, m.timestamp, m.step))
        is_nan, value = store.sanitize_metric_value(float(m.value))
        row = {"run_uuid": run_id, "key": m.key, "value": value, "timestamp": int(m.timestamp), "step": int(m.step),
               "is_nan": is_nan}
        rows.append(row)
        now = latest.get(m.key)
        if now is None or (row["step"], row["timestamp"], row["value"]) > (now["step"], now["timestamp"], now["value"]):
            latest[m.key] = row
    values: dict[str, str] = {}
    for prm in params:
        _validate_param(prm.key, prm.value)
        if prm.key in values:  # as log_batch: a key at most once
            raise MlflowException(f"Duplicate parameter keys have been submitted: {prm.key!r}")
        values[prm.key] = prm.value
    try:
        with store.ManagedSessionMaker() as session:  # commits at the end of the block, or writes nothing
            for table, table_rows in ((SqlParam, [{"run_uuid": run_id, "key": k, "value": v} for k, v in values.items()]),
                                      (SqlMetric, rows), (SqlLatestMetric, list(latest.values()))):
                if table_rows:  # the tables themselves: one executemany each
                    session.execute(insert(table.__table__), table_rows)
    except (SQLAlchemyError, MlflowException):  # e.g. an MLflow whose tables want more columns: nothing was
        return False                             # written (rolled back), so log_batch writes it all
    return True


def list_runs(experiment: str | None = None) -> list[dict[str, Any]]:
    """The runs (experiment, name, rounds, budget, status, final metrics), newest first, for ``fedbench show``
    ([] when there is no store yet: reading creates none). Runs that differ differ in name (fedbench.track's
    run_name ends in their differences from params.yaml and their fingerprint); rounds and budget are tags
    (``-`` on a run without one)."""
    with _store(create=False) as client:
        return [] if client is None else _list_runs(client, experiment)


def _list_runs(client: MlflowClient, experiment: str | None) -> list[dict[str, Any]]:
    exps = client.search_experiments()
    ids = [e.experiment_id for e in exps if experiment is None or e.name == experiment]
    names = {e.experiment_id: e.name for e in exps}
    out = []
    for r in client.search_runs(ids, max_results=5000, order_by=["attributes.start_time DESC"]) if ids else []:
        out.append({"experiment": names[r.info.experiment_id], "run": r.info.run_name,
                    **{k: r.data.tags.get(k, "-") for k in LISTED_TAGS}, "status": r.info.status,
                    **{k: float(v) for k, v in r.data.tags.items() if k.startswith("final/") or k == "reporting/test_accuracy"}})
    return out


def experiment_names() -> list[str]:
    """The active experiments' names ([] when there is no store: reading creates none)."""
    with _store(create=False) as client:
        return [] if client is None else sorted(e.name for e in client.search_experiments())


def experiment_links(base_url: str) -> list[tuple[str, str]]:
    """(name, link to its runs table in model-training mode) of every active experiment, by name."""
    with _store(create=False) as client:
        exps = [] if client is None else client.search_experiments()
    return [(e.name, f"{base_url}/#/experiments/{e.experiment_id}/runs?{UI_MODE}") for e in sorted(exps, key=lambda e: e.name)]


def serve_ui(port: int = 5000, host: str = "127.0.0.1", ready_timeout_s: float = UI_READY_TIMEOUT_S) -> int:
    """Serve the MLflow UI on ``host:port`` against the tracking store until stopped (Ctrl-C, SIGTERM, SIGHUP;
    the caller turns SIGTERM into Terminated). The links are printed once the server answers HTTP (MLflow takes
    25-40 s to start on a busy 2-core machine: links printed at once gave "connection refused"); a server that
    exits first, or does not answer within ``ready_timeout_s``, is one line (FedbenchError). The server runs as
    its own process group (MLflow, its web server and its job workers), stopped as a whole when this process
    stops, or dies (fedbench.parallel.supervised)."""
    uri = tracking_uri()
    with _store():  # a store made here is made as fedbench makes it (all at once, no Default), not by the server
        pass
    base = f"http://{host}:{port}"
    links = experiment_links(base)
    print(f"starting the MLflow UI for {uri} on {base} ...", flush=True)
    # one web worker: a local UI for one person (MLflow's default, 4, takes 4 times the memory and start-up time)
    mlflow_ui = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", host, "--port", str(port),
                 "--workers", "1"]
    # no job workers: they run MLflow's GenAI jobs (scorers, evaluations) that a training UI never starts, and cost 8
    # processes importing MLflow (2-4 s of a 2-core machine's start-up, and memory while it serves); a user's own
    # setting of the variable is kept
    env = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **os.environ}
    server = subprocess.Popen(supervised(mlflow_ui), start_new_session=True, env=env)
    previous = signal.signal(signal.SIGHUP, signal.default_int_handler)  # a closed terminal stops it too
    try:
        waited = _wait_until_answering(server, base, ready_timeout_s)
        print(f"MLflow UI ready after {waited:.0f} s at {base}  (Ctrl-C to stop). Each experiment's runs, in "
              "model-training mode (MLflow 3.17 opens its other pages in GenAI mode, runs hidden, until 'Model "
              "training' is picked once at the top of its sidebar):")
        width = max((len(name) for name, _ in links), default=0)
        for name, link in links:  # each experiment's runs table, in model-training mode
            print(f"  {name:<{width}}  {link}")
        if not links:
            print("  no experiments yet: `dvc repro` (or `fedbench run ...`) logs the runs")
        sys.stdout.flush()
        return server.wait()
    except (KeyboardInterrupt, Terminated):
        return 0
    finally:
        signal.signal(signal.SIGHUP, previous)
        _stop_group(server)


def _wait_until_answering(server: subprocess.Popen, base: str, timeout_s: float) -> float:
    """Seconds until ``base``/health answers 200 (MLflow's health check: its web server is serving); a
    FedbenchError if ``server`` exits first or ``timeout_s`` passes (the caller then stops it)."""
    import urllib.error
    import urllib.request

    from fedbench.errors import FedbenchError

    t0 = time.monotonic()
    while True:
        code = server.poll()
        if code is not None:
            raise FedbenchError(f"the MLflow UI server exited with code {code} before it answered on {base} "
                                "(its messages are above)")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=UI_POLL_S) as reply:
                if reply.status == 200:
                    return time.monotonic() - t0
        except (urllib.error.URLError, OSError):  # refused, reset, or not serving yet
            pass
        if time.monotonic() - t0 > timeout_s:
            raise FedbenchError(f"the MLflow UI did not answer on {base} within {timeout_s:g} s; stopped it "
                                "(a busy machine: try again, or `mlflow ui` by hand to see why)")
        time.sleep(UI_POLL_S)


def _stop_group(server: subprocess.Popen) -> None:
    """Stop the server's process group (see :func:`_kill_group`) and reap its leader."""
    _kill_group(server.pid, reap=server.poll)
    server.poll()


def _kill_group(pgid: int, reap: Callable[[], object] = lambda: None, grace_s: float = 5.0) -> None:
    """SIGTERM process group ``pgid``, then SIGKILL whatever is left after ``grace_s`` (MLflow's job workers take
    their time); return once the group is gone. ``reap`` collects a zombie leader, which still counts."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            reap()
            try:
                os.killpg(pgid, 0)  # anyone left in the group?
            except ProcessLookupError:
                return
            time.sleep(0.05)


def log_study(experiment: str, name: str, claims: list[dict[str, Any]], seconds: float,
              simulations: list[dict[str, Any]], artifacts: list[Path], fingerprint: str, commit: str,
              description: str = "", budget: str = "pipeline", run_name: str | None = None) -> str:
    """Log one claim study as a run (a tag per claim verdict; figures, claims.json and the simulation records as
    artifacts) with one nested run per simulation record (fedbench.study.record): params, per-round step
    metrics, final metrics, param digest and device; ``commit`` is the commit that computed it. Skipped if a
    finished study run with ``fingerprint`` is there already; returns the study run's id. The study's seconds and
    simulation count, and each simulation's final values and study results, are tags (summary values); a
    simulation's rounds are stamped at equal shares of its recorded seconds (records keep no per-round times).
    The study run and every simulation are tagged with the study, its ``budget`` and a fingerprint, each
    simulation with its arm, seed and rounds too (simulation_tags). ``run_name``: the study run's (default
    ``name``)."""
    with _store() as client:
        return _log_study(client, experiment, name, claims, seconds, simulations, artifacts, fingerprint, commit,
                          description, budget, run_name or name)


def _log_study(client: MlflowClient, experiment: str, name: str, claims: list[dict[str, Any]], seconds: float,
               simulations: list[dict[str, Any]], artifacts: list[Path], fingerprint: str, commit: str,
               description: str = "", budget: str = "pipeline", run_name: str | None = None) -> str:
    exp_id = experiment_id(client, experiment, description)
    found = _finished_or_cleared(client, exp_id, fingerprint)
    if found:
        return found
    run_name = run_name or name
    tags = {"mlflow.runName": run_name, "fedbench.fingerprint": fingerprint, "git_commit": commit,
            "study": name, "budget": budget,
            "study/seconds": f"{float(seconds):g}", "study/simulations": str(len(simulations)),
            **{f"verdict.{c['id']}": c["verdict"] for c in claims}}
    now = int(time.time() * 1000)
    with _mlflow_run(client, exp_id, run_name, tags, now - int(1000 * float(seconds)), now) as run_id:
        _log_batched(client, run_id, [], [Param("study", name)])  # FINISHED last: only with all its children
        for sim in simulations:
            _log_simulation(client, exp_id, run_id, fingerprint, sim, commit, now, {"study": name, "budget": budget})
        for path in artifacts:
            client.log_artifact(run_id, str(path))
    return run_id


def simulation_tags(sim: dict[str, Any]) -> dict[str, str]:
    """A simulation record's columns of the runs table: its arm (the record's ``arm`` or ``method`` param, else
    the first part of its name, as the studies name them: ``scaffold/G=1/K=2``), seed and rounds (where its params
    give them), and its fingerprint (``fedbench.fingerprint``): the hash of its params and final parameters'
    digest, which tells apart simulations that computed different things."""
    params = sim["params"]
    identity = json.dumps({"params": params, "param_digest": sim["param_digest"]}, sort_keys=True, default=str)
    tags = {"arm": str(params.get("arm") or params.get("method") or sim["name"].split("/")[0]),
            "fedbench.fingerprint": hashlib.sha256(identity.encode()).hexdigest()[:16]}
    return tags | {k: str(params[k]) for k in ("seed", "rounds") if params.get(k) is not None}


def _log_simulation(client: MlflowClient, exp_id: str, parent_id: str, parent_fingerprint: str,
                    sim: dict[str, Any], commit: str, now: int, study_tags: dict[str, str] | None = None) -> None:
    tags = {"mlflow.parentRunId": parent_id, "fedbench.parent_fingerprint": parent_fingerprint,
            "mlflow.runName": sim["name"], "git_commit": commit, **(study_tags or {}), **simulation_tags(sim),
            "param_digest": sim["param_digest"], "device": sim["device"], "diverged": str(sim["diverged"]),
            **_final_tags(sim["final"]), **{k: repr(float(v)) for k, v in sim["metrics"].items() if v is not None}}
    steps = max((len(v) for k, v in sim["history"].items() if k != "round"), default=0)
    seconds = float(sim.get("seconds") or 0.0)
    start, stamps = round_times([{"wall_time_s": seconds / max(steps, 1)}] * steps, now)
    run_id = client.create_run(exp_id, start_time=start, run_name=sim["name"], tags=tags).info.run_id
    params = [Param(k, str(v)) for k, v in sim["params"].items()]
    # a record of a sparse evaluation protocol keeps its rows' rounds ("round"); else element i is round i
    rounds = sim["history"].get("round")

    def step(values: list, i: int) -> int:
        return int(rounds[i]) if rounds and len(rounds) == len(values) else i

    metrics = [Metric(key, v, stamps[i], step(values, i)) for key, values in sim["history"].items()
               if key != "round" for i, v in enumerate(values) if v is not None]
    _log_batched(client, run_id, metrics, params)
    client.set_terminated(run_id, "FINISHED", end_time=now)

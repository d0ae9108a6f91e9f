"""MLflow tracking: the only module that imports mlflow.

The store is a local SQLite file (``mlflow.db`` in the working directory, ignored by git) unless
``MLFLOW_TRACKING_URI`` says otherwise. One experiment per study (names: fedbench.track), each marked a model
training experiment (MLFLOW_KIND) and described (``mlflow.note.content``); MLflow's empty ``Default``
experiment is deleted.

One path: whatever computed a run (a training run, a claim study's simulation, the study run of a claim
study), fedbench.track turns it into a :class:`Record` (name, fingerprint, tags, params, step metrics stamped
with its rounds' times, artifacts), and this module logs records: :func:`log_runs` each as a run of its own,
:func:`log_study` a study run with its simulations nested in it. A run already logged with the same fingerprint,
in any experiment, is not logged again, so rerunning the pipeline, or `fedbench run` reusing a run of the
pipeline, does not duplicate runs (fedbench.tracking_index answers "is it logged?" from a SQLite store's file
without loading MLflow).

The UI: MLflow 3.17 opens in its GenAI mode (runs hidden) unless told otherwise: its mode is the link's
``?workflowType=`` query, else the browser's ``mlflow.workflowType`` setting, default ``genai``; the experiment
tag ``mlflow.experimentKind`` (MLFLOW_KIND marks model training) does not win over it (checked in headless
Chromium: ``#/experiments/<id>`` opens GenAI's overview, and the bare URL GenAI's home). Its runs table shows no
params or metrics unless the browser was told to, and a link can say which only through a shared view (an
experiment tag, VIEW_TAG). ``fedbench ui`` saves, for each experiment, a view with the params that differ between
its runs and its metrics as columns (runs_view), one per headline comparison with its search filter, and prints,
once the server answers, the experiments list and each link in model-training mode (ui_links).

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
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

import mlflow
from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from sqlalchemy import event
from sqlalchemy.engine import Engine

from fedbench.errors import ConfigError
from fedbench.locking import file_lock
from fedbench.parallel import Terminated, supervised
from fedbench.tracking_index import DEFAULT_DB, SQLITE, store_lock_path, tracking_uri  # noqa: F401 (also ours)

MLFLOW_KIND = ("mlflow.experimentKind", "custom_model_development")  # the UI's "Model training" experiments
NOTE = "mlflow.note.content"  # the experiment's (and a run's) description in the UI
DEFAULT_EXPERIMENT = "0"  # MLflow's "Default", made with every store; fedbench logs nothing there
UI_MODE = "workflowType=machine_learning"  # the UI query that opens MLflow 3 on runs, not GenAI traces
# MLflow's shared views: an experiment tag VIEW_TAG + <key> holding a view of its runs table as JSON (columns, widths,
# search filter), opened by a link with ?viewStateShareKey=<key> (MLflow's "Share" button makes them): the only
# way a link can choose the table's columns (without one MLflow 3.17 shows Source, Models and Dataset, no params
# or metrics, and keeps a user's choice in the browser)
VIEW_TAG = "mlflow.sharedViewState."
TABLE_VIEW = "fedbench"  # the key of the view of an experiment's whole runs table; a chart link's: view_key
RUN_NAME_COLUMN = "attributes.`Run Name`"  # the runs table's name column (MLflow's column id)
RUN_NAME_WIDTH = 300  # px: about 38 characters of a name (MLflow's default, 190 px, shows about 21)
MAX_PARAMS = 8  # params columns in a view, at most (a wider table scrolls sideways)
MAX_METRICS = 6  # metrics columns in a view, at most
UI_READY_TIMEOUT_S = 300.0  # `fedbench ui` waits this long for the server to answer: 12 s idle, 90 s at load 10 here
UI_POLL_S = 0.5  # between two health checks while it starts
LISTED_TAGS = ("rounds", "budget")  # the tags `fedbench show` lists beside a run's name
# what MLFLOW_TRACKING_URI may be (fedbench.tracking_index.tracking_uri reads it; checked_uri refuses the rest)
ALLOWED_STORES = ("sqlite:///<path> (a SQLite file), http(s)://<host>:<port> (an MLflow server), another store "
                  "MLflow opens (e.g. postgresql://...), or unset (mlflow.db in the working directory)")
NAMED_STORES = ("databricks", "databricks-uc")  # MLflow's URIs without a scheme that are no path


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


def checked_uri() -> str:
    """The tracking store's URI, refused in one line (ConfigError) before anything is written where fedbench cannot
    use it: a path or a ``file:`` URI (MLflow's file store, which MLflow 3 refuses, "maintenance mode", unless
    MLFLOW_ALLOW_FILE_STORE is true), and a
    ``sqlite:`` URI that names no file (``sqlite://x.db``; ``sqlite://`` is a store in memory, gone at exit)."""
    uri = tracking_uri()
    scheme = urlsplit(uri).scheme
    file_store_allowed = os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() in ("1", "true")  # MLflow's opt-in
    if scheme in ("", "file") and uri not in NAMED_STORES and not file_store_allowed:
        raise _refused(uri, "is not allowed (a path or a file: URI is MLflow's file store, which MLflow 3 refuses)")
    if scheme == "sqlite" and not (uri.startswith(SQLITE) and len(uri) > len(SQLITE)):
        raise _refused(uri, "is not allowed (a SQLite store is sqlite:/// followed by its file's path)")
    if uri.startswith(SQLITE):
        db = Path(uri[len(SQLITE):])
        blocking = next((p for p in db.parents if p.exists() and not p.is_dir()), None)
        if blocking is not None:
            raise _refused(uri, f"cannot be created ({blocking} is a file, not a folder)")
        if db.is_file() and db.stat().st_size and _head(db) != b"SQLite format 3\x00":
            raise _refused(uri, f"is no SQLite database ({db} holds something else: move it away, and a new store is "
                                "made there)")
    return uri


def _head(path: Path) -> bytes:
    """A file's first 16 bytes (a SQLite database's header string)."""
    with path.open("rb") as f:
        return f.read(16)


def _refused(uri: str, problem: str) -> ConfigError:
    given = "MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI") else "the tracking store (the default)"
    return ConfigError(f"{given}: {uri!r} {problem}; allowed: {ALLOWED_STORES}")


@contextmanager
def _store(create: bool = True) -> Iterator[MlflowClient | None]:
    """A client of the tracking store, for use while this block holds the store's lock. With ``create=False``,
    a SQLite store that does not exist yet is not created: the block gets None."""
    uri = checked_uri()
    if not create and uri.startswith(SQLITE) and not Path(uri[len(SQLITE):]).exists():
        yield None  # nothing to read, and nothing (not even the lock file) is created
        return
    with file_lock(store_lock_path(uri)):
        if uri.startswith(SQLITE):
            db = Path(uri[len(SQLITE):])
            if not db.exists():
                _create_sqlite_store(db)
            else:
                relocate_artifacts(db)
            _WAL_STORES.add(str(db.resolve()))
        mlflow.set_tracking_uri(uri)
        yield _client(uri)


def _client(uri: str) -> MlflowClient:
    """MLflow's client of the store at ``uri``, which opens it. A store of another kind than SQLite that MLflow
    cannot open (a scheme it has no store for, a database whose driver is not installed) is one line; a SQLite
    file's own problems (not a database, an older schema) are MLflow's to say."""
    try:
        return MlflowClient(uri)
    except (MlflowException, ImportError) as exc:
        if uri.startswith(SQLITE):
            raise
        reason = (str(exc).strip().splitlines() or [""])[0]
        raise _refused(uri, f"cannot be opened ({type(exc).__name__}: {reason})") from None


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


def relocate_artifacts(db: Path) -> int:
    """Point the artifact locations a SQLite store ``db`` holds (absolute, as MLflow needs them) into the
    ``mlruns/`` beside it where they point into another folder's ``mlruns/``: a checkout moved or copied with its
    store (its artifacts with it) showed the old folder's files in the UI, or none. Returns the experiments moved;
    the caller holds the store's lock."""
    here = (db.resolve().parent / "mlruns").as_uri()
    moved = 0
    with closing(sqlite3.connect(db)) as con, con:
        for exp_id, location in con.execute("SELECT experiment_id, artifact_location FROM experiments").fetchall():
            if not (location or "").startswith("file://") or "/mlruns/" not in location:
                continue
            old = location[: location.rindex("/mlruns/") + len("/mlruns")]
            if old == here:
                continue
            con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                        (here + location[len(old):], exp_id))
            con.execute("UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) WHERE experiment_id = ? AND "
                        "substr(artifact_uri, 1, ?) = ?", (here, len(old) + 1, exp_id, len(old), old))
            moved += 1
    return moved


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


@dataclass(frozen=True)
class Record:
    """One MLflow run to log, whatever computed it (a training run, a claim study's simulation, a study run):
    its name, fingerprint (``fedbench.fingerprint``: a run is logged once), tags, params, metric points
    ``(key, value, timestamp_ms, step)``, when it started and ended (ms), and ``artifacts``, called for the files
    to attach only when the run is logged, so they are made only then. fedbench.track builds them."""

    name: str
    fingerprint: str
    tags: dict[str, str]
    params: dict[str, str]
    points: list[tuple[str, float, int, int]]
    start_ms: int
    end_ms: int
    artifacts: Callable[[], Iterable[Path]] = tuple


def log_runs(experiment: str, records: Sequence[Record], description: str = "") -> list[str]:
    """Log each record as a run of ``experiment`` (described by ``description``), unless a finished run with its
    fingerprint is in any experiment already (a run the main job logged is not logged again by `fedbench run`);
    returns their MLflow run ids."""
    with _store() as client:
        ids, exp_id = [], None
        for record in records:
            found = _finished(client, record.fingerprint)
            if found:
                ids.append(found[0].info.run_id)
                continue
            exp_id = exp_id or experiment_id(client, experiment, description)  # made only for a run to log
            ids.append(_finished_or_cleared(client, exp_id, record.fingerprint)
                       or _log_record(client, exp_id, record))
        return ids


def log_study(experiment: str, study: Record, records: Sequence[Record], description: str = "") -> str:
    """Log ``study`` as a run of ``experiment`` with each of ``records`` nested in it (tagged with the study
    run's fingerprint, ``fedbench.parent_fingerprint``), unless a finished study run with its fingerprint is
    there already; returns the study run's id. The study run ends FINISHED only once all of them are logged; an
    attempt cut short (FAILED, or a killed process) is deleted with its nested runs by the next attempt."""
    with _store() as client:
        exp_id = experiment_id(client, experiment, description)
        found = _finished_or_cleared(client, exp_id, study.fingerprint)
        if found:
            return found
        paths = list(study.artifacts())
        with _mlflow_run(client, exp_id, study) as run_id:
            _log_batched(client, run_id, _metrics(study), _params(study))
            nested = {"mlflow.parentRunId": run_id, "fedbench.parent_fingerprint": study.fingerprint}
            for record in records:
                _log_record(client, exp_id, record, nested)
            for path in paths:
                client.log_artifact(run_id, str(path))
        return run_id


def _log_record(client: MlflowClient, exp_id: str, record: Record, extra_tags: dict[str, str] | None = None) -> str:
    paths = list(record.artifacts())
    with _mlflow_run(client, exp_id, record, extra_tags) as run_id:
        _log_batched(client, run_id, _metrics(record), _params(record))
        for path in paths:
            client.log_artifact(run_id, str(path))
    return run_id


def _metrics(record: Record) -> list[Metric]:
    return [Metric(key, float(value), int(stamp), int(step)) for key, value, stamp, step in record.points]


def _params(record: Record) -> list[Param]:
    return [Param(k, str(v)) for k, v in record.params.items()]


def dvc_experiment() -> str:
    """The DVC experiment this process runs in: ``dvc exp run`` names it in DVC_EXP_NAME for the stage commands;
    "workspace" for a plain ``dvc repro`` or a command run by hand. A run is logged once, by the first experiment
    that computed it; a variation that reuses it logs nothing again."""
    return os.environ.get("DVC_EXP_NAME") or "workspace"


@contextmanager
def _mlflow_run(client: MlflowClient, exp_id: str, record: Record,
                extra_tags: dict[str, str] | None = None) -> Iterator[str]:
    """Create ``record``'s run (with ``extra_tags``, started at its start) and yield its id; it ends FINISHED (at
    its end) when the block completes and FAILED if it raises."""
    tags = {"mlflow.runName": record.name, "fedbench.fingerprint": record.fingerprint, **record.tags,
            **(extra_tags or {})}
    run_id = client.create_run(exp_id, start_time=record.start_ms, run_name=record.name, tags=tags).info.run_id
    try:
        yield run_id
        client.set_terminated(run_id, "FINISHED", end_time=record.end_ms)
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise


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
    ([] when there is no store yet: reading creates none). Runs whose settings differ differ in name
    (fedbench.track's run_name gives their differences from params.yaml); rounds and budget are tags (``-`` on a
    run without one)."""
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


def experiments_link(base_url: str) -> str:
    """The experiments list, model-training experiments, in model-training mode: the URL `fedbench ui` gives as
    where the UI is (the bare URL opens MLflow 3.17's GenAI home on a browser's first visit)."""
    return f"{base_url}/#/experiments?{UI_MODE}"


def runs_view(client: MlflowClient, exp_id: str, params_first: Sequence[str] = (), metrics_first: Sequence[str] = (),
              search: str = "") -> dict[str, Any]:
    """The view of experiment ``exp_id``'s runs table that fedbench's links open (MLflow's shared view state, read
    from the experiment tag VIEW_TAG + key: see :func:`save_view`): as columns, the params that tell its runs apart
    (those with two values or more among its runs, or set on some and not others; a study run holding nested runs is
    left out, its nested runs count), ``params_first`` first, then by name, at most MAX_PARAMS; and its metrics (their
    last logged values: a training run's last round), ``metrics_first`` first, then by name, at most MAX_METRICS
    (the table shows its metrics, then its params, each group by name); the run name column RUN_NAME_WIDTH wide;
    ``search``, an MLflow search filter, selects the runs."""
    runs, token = [], None
    while True:
        page = client.search_runs([exp_id], max_results=1000, page_token=token)
        runs += page
        token = page.token
        if not token:
            break
    parents = {r.data.tags.get("mlflow.parentRunId") for r in runs}
    leaves = [r for r in runs if r.info.run_id not in parents]
    values: dict[str, set[str | None]] = {}
    for r in leaves:
        for key in r.data.params:
            values.setdefault(key, set())
    for r in leaves:
        for key, seen in values.items():
            seen.add(r.data.params.get(key))
    differ = [k for k, seen in values.items() if len(seen) > 1]
    metrics = {k for r in leaves for k in r.data.metrics}

    def ordered(keys: Iterable[str], first: Sequence[str], most: int) -> list[str]:
        keys = set(keys)
        return ([k for k in first if k in keys] + sorted(keys - set(first)))[:most]

    return {"selectedColumns": [*(f"params.`{k}`" for k in ordered(differ, params_first, MAX_PARAMS)),
                                *(f"metrics.`{k}`" for k in ordered(metrics, metrics_first, MAX_METRICS))],
            "columnOrder": [RUN_NAME_COLUMN], "columnWidths": {RUN_NAME_COLUMN: RUN_NAME_WIDTH}, "searchFilter": search}


def save_view(client: MlflowClient, exp_id: str, key: str, view: dict[str, Any]) -> None:
    """Store ``view`` as experiment ``exp_id``'s shared view ``key`` (tag VIEW_TAG + key, JSON), which a link with
    ``?viewStateShareKey=<key>`` opens (written only where it changed)."""
    value = json.dumps(view, sort_keys=True)
    if client.get_experiment(exp_id).tags.get(VIEW_TAG + key) != value:
        client.set_experiment_tag(exp_id, VIEW_TAG + key, value)


def view_key(search: str) -> str:
    """The shared view key of a chart link selecting ``search`` (TABLE_VIEW for the whole runs table)."""
    return f"{TABLE_VIEW}-{hashlib.sha256(search.encode()).hexdigest()[:8]}" if search else TABLE_VIEW


def runs_link(base_url: str, experiment_id: str, key: str = TABLE_VIEW) -> str:
    """The link that opens ``experiment_id``'s runs table in model-training mode with shared view ``key``."""
    return f"{base_url}/#/experiments/{experiment_id}/runs?{UI_MODE}&viewStateShareKey={key}"


def chart_link(base_url: str, experiment_id: str, key: str) -> str:
    """The link that opens ``experiment_id``'s runs selected by shared view ``key`` (its search filter: MLflow
    applies a shared view only to a link with no filter of its own) in the chart view (``compareRunsMode=CHART``:
    every selected run's curves, metric by metric, against the round), in model-training mode."""
    return f"{runs_link(base_url, experiment_id, key)}&compareRunsMode=CHART"


def ui_links(base_url: str, charts: Sequence[tuple[str, str, str]] = (), params_first: Sequence[str] = (),
             metrics_first: Sequence[str] = ()) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The links `fedbench ui` prints, each view they open saved first (:func:`runs_view`, :func:`save_view`):
    (name, runs table link) of every active experiment, by name, and (title, :func:`chart_link`) of each (title,
    experiment, search filter) of ``charts`` whose experiment exists."""
    with _store() as client:
        exps = sorted(client.search_experiments(), key=lambda e: e.name)
        ids = {e.name: e.experiment_id for e in exps}
        views = {e.experiment_id: runs_view(client, e.experiment_id, params_first, metrics_first) for e in exps}
        tables = []
        for e in exps:
            save_view(client, e.experiment_id, TABLE_VIEW, views[e.experiment_id])
            tables.append((e.name, runs_link(base_url, e.experiment_id)))
        compared = []
        for title, exp, search in charts:
            if exp in ids:
                save_view(client, ids[exp], view_key(search), views[ids[exp]] | {"searchFilter": search})
                compared.append((title, chart_link(base_url, ids[exp], view_key(search))))
    return tables, compared


def serve_ui(port: int = 5000, host: str = "127.0.0.1", ready_timeout_s: float = UI_READY_TIMEOUT_S,
             charts: Sequence[tuple[str, str, str]] = (), params_first: Sequence[str] = (),
             metrics_first: Sequence[str] = ()) -> int:
    """Serve the MLflow UI on ``host:port`` against the tracking store until stopped (Ctrl-C, SIGTERM, SIGHUP;
    the caller turns SIGTERM into Terminated). The links (the experiments list, each experiment's runs table, then a
    chart link per comparison of ``charts``: (title, experiment, search filter); the views they open are saved
    first, with ``params_first`` and ``metrics_first``: :func:`ui_links`) are printed once the server answers HTTP
    (MLflow takes 25-40 s to start on a busy 2-core machine: links printed at once gave "connection refused"); a
    server that
    exits first, or does not answer within ``ready_timeout_s``, is one line (FedbenchError). The server runs as
    its own process group (MLflow, its web server and its job workers), stopped as a whole when this process
    stops, or dies (fedbench.parallel.supervised)."""
    uri = tracking_uri()
    base = f"http://{host}:{port}"
    # a store made here is made as fedbench makes it (all at once, no Default), not by the server; the views are
    # saved before the server reads them
    links, compared = ui_links(base, charts, params_first, metrics_first)
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
        print(f"MLflow UI ready after {waited:.0f} s at {experiments_link(base)}  (Ctrl-C to stop). Each "
              "experiment's runs, the params that differ and the last round's metrics as columns:")
        width = max((len(name) for name, _ in links), default=0)
        for name, link in links:  # each experiment's runs table, in model-training mode
            print(f"  {name:<{width}}  {link}")
        if not links:
            print("  no experiments yet: `dvc repro` (or `fedbench run ...`) logs the runs")
        if compared:
            print("The headline comparisons, each run's curves in the chart view (x axis: Step = round):")
        for title, link in compared:
            print(f"  {title}\n    {link}")
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

"""MLflow tracking: the only module that imports mlflow.

The store is a local SQLite file (``mlflow.db`` in the working directory, ignored by git) unless
``MLFLOW_TRACKING_URI`` says otherwise. One experiment per study, one run per (algorithm variant,
setting, seed); per-round metrics are step metrics named ``split/name``; tags record the git commit,
dataset content hash, seed, device and library versions; the per-device final metrics, the history and
a figure of the run's curves are artifacts. A claim study (experiment ``study-<name>``) is one run with
one nested run per simulation it ran. A run already logged with the same fingerprint is not logged
again, so rerunning the pipeline does not duplicate runs.

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
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "true")

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from fedbench.locking import file_lock
from fedbench.parallel import Terminated, supervised

DEFAULT_DB = "mlflow.db"
METRIC_KEYS = ("train/loss", "train/accuracy", "test/loss", "test/accuracy", "train/dissimilarity",
               "test/error_p90", "diverging", "wall_time_s")
SQLITE = "sqlite:///"


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"{SQLITE}{Path(DEFAULT_DB).resolve()}"


def store_lock_path(uri: str) -> Path:
    """The lock every fedbench process holds while it uses the store at ``uri``."""
    if uri.startswith(SQLITE):
        db = Path(uri[len(SQLITE):])
        return db.with_name(db.name + ".lock")
    return Path(tempfile.gettempdir()) / f"fedbench-mlflow-{hashlib.sha256(uri.encode()).hexdigest()[:16]}.lock"


@contextmanager
def _store(create: bool = True) -> Iterator[MlflowClient | None]:
    """A client of the tracking store, for use while this block holds the store's lock. With ``create=False``,
    a SQLite store that does not exist yet is not created: the block gets None."""
    uri = tracking_uri()
    if not create and uri.startswith(SQLITE) and not Path(uri[len(SQLITE):]).exists():
        yield None  # nothing to read, and nothing (not even the lock file) is created
        return
    with file_lock(store_lock_path(uri)):
        if uri.startswith(SQLITE) and not Path(uri[len(SQLITE):]).exists():
            _create_sqlite_store(Path(uri[len(SQLITE):]))
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
    MlflowClient(f"{SQLITE}{tmp}").search_experiments()
    os.replace(tmp, db)


def experiment_id(client: MlflowClient, name: str) -> str:
    exp = client.get_experiment_by_name(name)
    return exp.experiment_id if exp else client.create_experiment(name)


def _finished_or_cleared(client: MlflowClient, exp_id: str, fingerprint: str) -> str | None:
    """The id of the FINISHED run tagged with ``fingerprint``, if there is one. Otherwise every earlier attempt
    with that fingerprint (a FAILED or killed run, and the nested runs it had logged) is deleted, so that the
    attempt about to be made leaves no duplicate behind."""
    tag = f"tags.`fedbench.fingerprint` = '{fingerprint}'"
    found = client.search_runs([exp_id], filter_string=f"{tag} and attributes.status = 'FINISHED'", max_results=1)
    if found:
        return found[0].info.run_id
    stale = client.search_runs([exp_id], filter_string=tag, max_results=1000)
    stale += client.search_runs([exp_id], filter_string=f"tags.`fedbench.parent_fingerprint` = '{fingerprint}'",
                                max_results=50_000)
    for run in stale:
        client.delete_run(run.info.run_id)
    return None


def log_run(experiment: str, run_name: str, summary: dict[str, Any], artifacts: Callable[[], Iterable[Path]]) -> str:
    """Log one finished run (its summary with ``history`` rows); returns the MLflow run id. ``artifacts`` is
    called for the files to attach only when the run is not logged already, so they are made only then."""
    with _store() as client:
        return _log_run(client, experiment, run_name, summary, artifacts)


def _log_run(client: MlflowClient, experiment: str, run_name: str, summary: dict[str, Any],
             artifacts: Callable[[], Iterable[Path]]) -> str:
    exp_id = experiment_id(client, experiment)
    fp = summary["fingerprint"]
    found = _finished_or_cleared(client, exp_id, fp)
    if found:
        return found
    paths = list(artifacts())
    tags = {
        "mlflow.runName": run_name, "fedbench.fingerprint": fp, "git_commit": summary.get("git_commit", "unknown"),
        "dataset_hash": summary["dataset_hash"], "seed": str(summary["params"]["seed"]),
        "device": summary["device"], "param_digest": summary["param_digest"],
        "diverged": str(summary["diverged"]), **{f"version.{k}": v for k, v in summary["versions"].items()},
    }
    if summary.get("diverged_at_round") is not None:
        tags["diverged_at_round"] = str(summary["diverged_at_round"])
    with _mlflow_run(client, exp_id, run_name, tags) as run_id:
        params = [Param(k, str(v)) for k, v in summary["params"].items()]
        now = int(time.time() * 1000)
        metrics = [
            Metric(key, float(row[key]), now, int(row["round"]))
            for row in summary["history"] for key in METRIC_KEYS
            if key in row and row[key] is not None and math.isfinite(float(row[key]))
        ]
        metrics += _final_metrics(summary["final"], now)
        if summary["reporting_test_accuracy"] is not None:
            metrics.append(Metric("reporting/test_accuracy", float(summary["reporting_test_accuracy"]), now,
                                  int(summary["reporting_round"])))
        _log_batched(client, run_id, metrics, params, [RunTag("reporting_reason", summary["reporting_reason"])])
        for path in paths:
            client.log_artifact(run_id, str(path))
    return run_id


@contextmanager
def _mlflow_run(client: MlflowClient, exp_id: str, run_name: str, tags: dict[str, str]) -> Iterator[str]:
    """Create a run and yield its id; it ends FINISHED when the block completes and FAILED if it raises."""
    run_id = client.create_run(exp_id, run_name=run_name, tags=tags).info.run_id
    try:
        yield run_id
        client.set_terminated(run_id, "FINISHED")
    except BaseException:
        client.set_terminated(run_id, "FAILED")
        raise


def _final_metrics(final: dict[str, float | None], now: int) -> list[Metric]:
    """``final/<name>`` (slashes in the name become underscores) at step 0, for each final value that exists."""
    return [Metric(f"final/{k.replace('/', '_')}", float(v), now, 0) for k, v in final.items() if v is not None]


def _log_batched(client: MlflowClient, run_id: str, metrics: list[Metric], params: Sequence[Param] = (),
                 tags: Sequence[RunTag] = ()) -> None:
    """log_batch takes at most 1000 entities (at most 100 params and tags): the metrics go 900 at a time, the
    params and tags with the first batch (one batch even when there are no metrics)."""
    for i in range(0, max(len(metrics), 1), 900):
        client.log_batch(run_id, metrics=metrics[i:i + 900], params=list(params) if i == 0 else [],
                         tags=list(tags) if i == 0 else [])


def list_runs(experiment: str | None = None) -> list[dict[str, Any]]:
    """Finished runs (name, experiment, key final metrics), newest first, for ``fedbench show`` ([] when there
    is no store yet: reading creates none)."""
    with _store(create=False) as client:
        return [] if client is None else _list_runs(client, experiment)


def _list_runs(client: MlflowClient, experiment: str | None) -> list[dict[str, Any]]:
    exps = client.search_experiments()
    ids = [e.experiment_id for e in exps if experiment is None or e.name == experiment]
    names = {e.experiment_id: e.name for e in exps}
    out = []
    for r in client.search_runs(ids, max_results=5000, order_by=["attributes.start_time DESC"]) if ids else []:
        out.append({"experiment": names[r.info.experiment_id], "run": r.info.run_name, "status": r.info.status,
                    **{k: v for k, v in r.data.metrics.items() if k.startswith("final/") or k.startswith("reporting/")}})
    return out


def serve_ui(port: int = 5000, host: str = "127.0.0.1") -> int:
    """Serve the MLflow UI on ``host:port`` against the tracking store until stopped (Ctrl-C, SIGTERM, SIGHUP;
    the caller turns SIGTERM into Terminated). The server runs as its own process group (MLflow, its web server
    and its job workers), stopped as a whole when this process stops, or dies (fedbench.parallel.supervised)."""
    uri = tracking_uri()
    print(f"MLflow UI for {uri} at http://{host}:{port}  (Ctrl-C to stop)")
    # one web worker: a local UI for one person (MLflow's default, 4, takes 4 times the memory and start-up time)
    mlflow_ui = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", host, "--port", str(port),
                 "--workers", "1"]
    server = subprocess.Popen(supervised(mlflow_ui), start_new_session=True)
    previous = signal.signal(signal.SIGHUP, signal.default_int_handler)  # a closed terminal stops it too
    try:
        return server.wait()
    except (KeyboardInterrupt, Terminated):
        return 0
    finally:
        signal.signal(signal.SIGHUP, previous)
        _stop_group(server)


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
              simulations: list[dict[str, Any]], artifacts: list[Path], fingerprint: str, commit: str) -> str:
    """Log one claim study as a run (a tag per claim verdict; figures, claims.json and the simulation records as
    artifacts) with one nested run per simulation record (fedbench.studies.record): params, per-round step
    metrics, final metrics, param digest and device; ``commit`` is the commit that computed it. Skipped if a
    finished study run with ``fingerprint`` is there already; returns the study run's id."""
    with _store() as client:
        return _log_study(client, experiment, name, claims, seconds, simulations, artifacts, fingerprint, commit)


def _log_study(client: MlflowClient, experiment: str, name: str, claims: list[dict[str, Any]], seconds: float,
               simulations: list[dict[str, Any]], artifacts: list[Path], fingerprint: str, commit: str) -> str:
    exp_id = experiment_id(client, experiment)
    found = _finished_or_cleared(client, exp_id, fingerprint)
    if found:
        return found
    tags = {"mlflow.runName": name, "fedbench.fingerprint": fingerprint, "git_commit": commit,
            **{f"verdict.{c['id']}": c["verdict"] for c in claims}}
    with _mlflow_run(client, exp_id, name, tags) as run_id:  # FINISHED last: only with all its children
        now = int(time.time() * 1000)
        _log_batched(client, run_id, [Metric("study/seconds", float(seconds), now, 0),
                                      Metric("study/simulations", float(len(simulations)), now, 0)],
                     [Param("study", name)])
        for sim in simulations:
            _log_simulation(client, exp_id, run_id, fingerprint, sim, commit, now)
        for path in artifacts:
            client.log_artifact(run_id, str(path))
    return run_id


def _log_simulation(client: MlflowClient, exp_id: str, parent_id: str, parent_fingerprint: str,
                    sim: dict[str, Any], commit: str, now: int) -> None:
    tags = {"mlflow.parentRunId": parent_id, "fedbench.parent_fingerprint": parent_fingerprint,
            "mlflow.runName": sim["name"], "git_commit": commit,
            "param_digest": sim["param_digest"], "device": sim["device"], "diverged": str(sim["diverged"])}
    run_id = client.create_run(exp_id, run_name=sim["name"], tags=tags).info.run_id
    params = [Param(k, str(v)) for k, v in sim["params"].items()]
    # a record of a sparse evaluation protocol keeps its rows' rounds ("round"); else element i is round i
    rounds = sim["history"].get("round")

    def step(values: list, i: int) -> int:
        return int(rounds[i]) if rounds and len(rounds) == len(values) else i

    metrics = [Metric(key, v, now, step(values, i)) for key, values in sim["history"].items()
               if key != "round" for i, v in enumerate(values) if v is not None]
    metrics += _final_metrics(sim["final"], now)
    metrics += [Metric(k, v, now, 0) for k, v in sim["metrics"].items() if v is not None]
    _log_batched(client, run_id, metrics, params)
    client.set_terminated(run_id, "FINISHED")

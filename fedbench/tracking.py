"""MLflow tracking: the only module that imports mlflow.

The store is a local SQLite file (``mlflow.db`` in the working directory, ignored by git) unless
``MLFLOW_TRACKING_URI`` says otherwise. One experiment per study, one run per (algorithm variant,
setting, seed); per-round metrics are step metrics named ``split/name``; tags record the git commit,
dataset content hash, seed, device and library versions; the per-device final metrics, the history and
a figure of the run's curves are artifacts. A claim study (experiment ``study-<name>``) is one run with
one nested run per simulation it ran. A run already logged with the same fingerprint is not logged
again, so rerunning the pipeline does not duplicate runs.
"""

from __future__ import annotations

import math
import os
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
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from fedbench.runner import git_commit

DEFAULT_DB = "mlflow.db"
METRIC_KEYS = ("train/loss", "train/accuracy", "test/loss", "test/accuracy", "train/dissimilarity",
               "test/error_p90", "diverging", "wall_time_s")


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(DEFAULT_DB).resolve()}"


def _client() -> MlflowClient:
    mlflow.set_tracking_uri(tracking_uri())
    return MlflowClient(tracking_uri())


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
    client = _client()
    exp_id = experiment_id(client, experiment)
    fp = summary["fingerprint"]
    found = _finished_or_cleared(client, exp_id, fp)
    if found:
        return found
    paths = list(artifacts())
    tags = {
        "mlflow.runName": run_name, "fedbench.fingerprint": fp, "git_commit": summary.get("git_commit") or git_commit(),
        "dataset_hash": summary["dataset_hash"], "seed": str(summary["params"]["seed"]),
        "device": summary["device"], "param_digest": summary["param_digest"],
        "diverged": str(summary["diverged"]), **{f"version.{k}": v for k, v in summary["versions"].items()},
    }
    with _mlflow_run(client, exp_id, run_name, tags) as run_id:
        params = [Param(k, str(v)) for k, v in summary["params"].items()]
        now = int(time.time() * 1000)
        metrics = [
            Metric(key, float(row[key]), now, int(row["round"]))
            for row in summary["history"] for key in METRIC_KEYS
            if key in row and row[key] is not None and math.isfinite(float(row[key]))
        ]
        metrics += _final_metrics(summary["final"], now)
        metrics += [Metric("reporting/test_accuracy", float(summary["reporting_test_accuracy"] or float("nan")), now,
                           int(summary["reporting_round"]))]
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
    """Finished runs (name, experiment, key final metrics), newest first, for ``fedbench show``."""
    client = _client()
    exps = client.search_experiments()
    ids = [e.experiment_id for e in exps if experiment is None or e.name == experiment]
    names = {e.experiment_id: e.name for e in exps}
    out = []
    for r in client.search_runs(ids, max_results=5000, order_by=["attributes.start_time DESC"]) if ids else []:
        out.append({"experiment": names[r.info.experiment_id], "run": r.info.run_name, "status": r.info.status,
                    **{k: v for k, v in r.data.metrics.items() if k.startswith("final/") or k.startswith("reporting/")}})
    return out


def serve_ui(port: int = 5000, host: str = "127.0.0.1") -> int:
    """Start the MLflow UI on ``host:port`` against the tracking store (blocks until stopped)."""
    uri = tracking_uri()
    print(f"MLflow UI for {uri} at http://{host}:{port}  (Ctrl-C to stop)")
    return subprocess.call([sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", uri, "--host", host, "--port", str(port)])


def log_study(experiment: str, name: str, claims: list[dict[str, Any]], seconds: float,
              simulations: list[dict[str, Any]], artifacts: list[Path], fingerprint: str) -> str:
    """Log one claim study as a run (a tag per claim verdict; figures, claims.json and the simulation records as
    artifacts) with one nested run per simulation record (fedbench.studies.record): params, per-round step
    metrics, final metrics, param digest and device. Skipped if a finished study run with ``fingerprint`` is
    there already; returns the study run's id."""
    client = _client()
    exp_id = experiment_id(client, experiment)
    found = _finished_or_cleared(client, exp_id, fingerprint)
    if found:
        return found
    commit = git_commit()
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
    metrics = [Metric(key, v, now, step) for key, values in sim["history"].items()
               for step, v in enumerate(values) if v is not None]
    metrics += _final_metrics(sim["final"], now)
    metrics += [Metric(k, v, now, 0) for k, v in sim["metrics"].items() if v is not None]
    _log_batched(client, run_id, metrics, params)
    client.set_terminated(run_id, "FINISHED")

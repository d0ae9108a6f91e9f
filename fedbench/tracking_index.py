"""Where the MLflow store is, and which runs it holds finished, answered without MLflow where it can be.

Reusing a finished run (`fedbench run` twice with the same settings) asked MLflow twice whether the run was logged:
importing MLflow and opening its store (engine, schema check) took about 10 of the 15 s the command took (issue 29
item 6). A SQLite store is a file that Python's sqlite3 reads in milliseconds: :func:`find_logged` looks the
fingerprint up there, read-only, with the query MLflow's own search runs (a FINISHED run, active, in an active
experiment, tagged ``fedbench.fingerprint``). Where that cannot answer (another kind of store, or a schema that is
not the one read here: an older or newer MLflow), it says so (Unanswered) and MLflow answers, as before
(fedbench.track.logged). A test keeps the two answers equal on a real store.

This module imports no MLflow (only fedbench.tracking does, and it imports this one's store location): `fedbench
run` on a logged run never loads MLflow.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from contextlib import closing
from pathlib import Path

DEFAULT_DB = "mlflow.db"
SQLITE = "sqlite:///"
FINGERPRINT_TAG = "fedbench.fingerprint"  # the tag holding a run's fingerprint (its folder's, or its study's)

# the FINISHED, active run tagged with the fingerprint, in an active experiment: MLflow's tables (runs, tags,
# experiments) as its SQL store writes them; the first such run by start time, as MLflow's default order
_FINISHED = """
SELECT e.name, r.run_uuid FROM tags t
JOIN runs r ON r.run_uuid = t.run_uuid
JOIN experiments e ON e.experiment_id = r.experiment_id
WHERE t.key = ? AND t.value = ? AND r.status = 'FINISHED' AND r.lifecycle_stage = 'active'
  AND e.lifecycle_stage = 'active'
ORDER BY r.start_time DESC, r.run_uuid LIMIT 1
"""


def tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"{SQLITE}{Path(DEFAULT_DB).resolve()}"


def sqlite_path(uri: str) -> Path | None:
    """The file of a SQLite store's ``uri``; None for another kind of store."""
    return Path(uri[len(SQLITE):]) if uri.startswith(SQLITE) else None


def store_lock_path(uri: str) -> Path:
    """The lock every fedbench process holds while it uses the store at ``uri``."""
    db = sqlite_path(uri)
    if db is not None:
        return db.with_name(db.name + ".lock")
    return Path(tempfile.gettempdir()) / f"fedbench-mlflow-{hashlib.sha256(uri.encode()).hexdigest()[:16]}.lock"


class Unanswered(Exception):
    """The store cannot be read here (not SQLite, or not the schema this module reads): ask MLflow."""


def find_logged_in_sqlite(db: Path, fingerprint: str) -> tuple[str, str] | None:
    """(experiment name, run id) of the finished run logged with ``fingerprint`` in SQLite store ``db``, or None
    (no store: None). Read-only and without the store's lock: a run being logged is not FINISHED yet, so it is not
    found, and the caller that then logs it takes the lock and looks again. Unanswered where the file is not a
    store this query reads."""
    if not db.exists():
        return None
    try:
        with closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=30)) as con:
            row = con.execute(_FINISHED, (FINGERPRINT_TAG, fingerprint)).fetchone()
    except sqlite3.Error as exc:  # no such table or column, not a database, ...
        raise Unanswered(f"{db}: {exc}") from None
    return (str(row[0]), str(row[1])) if row else None


def find_logged(fingerprint: str) -> tuple[str, str] | None:
    """(experiment name, run id) of the finished run logged with ``fingerprint`` in the tracking store, or None,
    read from a SQLite store's file; Unanswered for another kind of store, or a file this module cannot read
    (then MLflow answers: fedbench.track.logged)."""
    db = sqlite_path(tracking_uri())
    if db is None:
        raise Unanswered(f"{tracking_uri()} is not a SQLite store")
    return find_logged_in_sqlite(db, fingerprint)

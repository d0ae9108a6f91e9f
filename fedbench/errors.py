"""Problems a user can fix: each is reported by the CLI (and the DVC stage scripts) in one line that names what
is wrong and what to do, and exits 2 before anything is computed or written."""

from __future__ import annotations

import json
from pathlib import Path


class FedbenchError(Exception):
    """A wrong input or file; the message names it and the fix. ``label`` prefixes the CLI's one line."""

    label = "error"


class ConfigError(FedbenchError, ValueError):
    """A wrong key or value in the configuration; the message names it and what is allowed."""

    label = "config error"


class DataError(FedbenchError):
    """A dataset or run file that is missing, corrupt or made with other settings; the message says how to
    regenerate it."""

    label = "data error"


def read_json(path, key: str, remedy: str):
    """The JSON object in ``path`` with its entry ``key`` (e.g. a claims.json's "claims"); a DataError naming the file,
    what is wrong with it and ``remedy`` (how to write it anew) when it is not valid JSON or not such an object."""
    try:
        body = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); {remedy}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc}); {remedy}") from None
    if not isinstance(body, dict) or key not in body:
        raise DataError(f"{path}: expected a JSON object with {key!r}; {remedy}")
    return body


def check_folder(option: str, value: str, expected: str, must_exist: bool = False) -> None:
    """A ConfigError naming ``option`` when its ``value`` is empty, when it or a folder above it is something other
    than a folder, or (``must_exist``) when it is not there; ``expected`` says what is (e.g. "a folder for the
    report, e.g. reports")."""
    if not value:
        raise ConfigError(f"{option} '': empty; expected {expected}")
    path = Path(value)
    there = next((p for p in (path, *path.parents) if p.exists()), None)
    if there is not None and not there.is_dir():
        where = "" if there == path else f" ({there} is a file)"
        raise ConfigError(f"{option} {value}: not a folder{where}; expected {expected}")
    if must_exist and there != path:
        raise ConfigError(f"{option} {value}: no such folder; expected {expected}")

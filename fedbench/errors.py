"""Problems a user can fix: each is reported by the CLI (and the DVC stage scripts) in one line that names what
is wrong and what to do, and exits 2 before anything is computed or written."""

from __future__ import annotations


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

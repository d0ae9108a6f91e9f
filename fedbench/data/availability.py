"""Sources and variants that are not on this machine: the pipeline's marker files (torch-free).

When the DVC ``fetch`` stage can get no copy of a source (no local copy installed, the download unreachable),
it writes ``data/raw/<source>/UNAVAILABLE``, one line saying what to install or fetch, instead of failing the
whole pipeline; ``prepare`` passes the line on to ``data/prepared/<source>/UNAVAILABLE`` and ``partition`` to
``data/real/<variant>/UNAVAILABLE``. A prepared or built folder that is unavailable holds that file and nothing
else, so it can never be mistaken for data (reading it as a dataset fails: no meta.json). Code that needs a
variant asks :func:`variant_unavailable` first and reports its entries as not run, with the line as their
command. (Not re-exported by ``fedbench/data/__init__.py``: that file is part of provenance.STUDY_CODE, whose
hash every claim study's fingerprint carries.)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

MARKER = "UNAVAILABLE"


def unavailable(folder: str | os.PathLike) -> str | None:
    """The one-line reason recorded in ``folder``'s marker, or None when there is none."""
    path = Path(folder) / MARKER
    return path.read_text().strip() or "unavailable (no reason recorded)" if path.is_file() else None


def variant_unavailable(root: str | os.PathLike, variant: str) -> str | None:
    """Why real variant ``variant`` under the data folder ``root`` (``data``) is not available, in one line, or
    None when it is not marked unavailable."""
    return unavailable(Path(root) / "real" / variant)


def mark_unavailable(folder: str | os.PathLike, reason: str, keep_files: bool = False) -> Path:
    """Write ``reason`` (one line) as ``folder``'s marker. Without ``keep_files`` the folder is replaced by one
    that holds only the marker (a prepared or built folder must not keep stale data beside it); with it (a raw
    folder: an interrupted download's part files resume later) the marker is added to what is there."""
    if "\n" in reason.strip():
        raise ValueError(f"an unavailability reason is one line, got {reason!r}")
    folder = Path(folder)
    if not keep_files:
        tmp = folder.with_name(f".{folder.name}.unavailable")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        (tmp / MARKER).write_text(reason.strip() + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(tmp, folder)
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{MARKER}.tmp"
    tmp.write_text(reason.strip() + "\n")
    os.replace(tmp, folder / MARKER)
    return folder


def clear_unavailable(folder: str | os.PathLike) -> None:
    """Remove ``folder``'s marker (the source was fetched after all)."""
    (Path(folder) / MARKER).unlink(missing_ok=True)

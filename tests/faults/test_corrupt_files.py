"""Item 8: corrupt or missing data and run files give one line saying what is wrong and how to regenerate,
not a raw traceback (BadZipFile, EOFError, JSONDecodeError)."""

import pytest

from tests.faults.conftest import one_line

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]
DATA = "data/generated/synthetic_1_1"


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


@pytest.mark.slow
@pytest.mark.parametrize("damage", [
    lambda d: (d / "arrays.npz").write_bytes(b"not a zip file"),  # BadZipFile
    lambda d: _truncate(d / "arrays.npz"),  # a truncated archive
    lambda d: (d / "meta.json").write_text("{not json"),  # JSONDecodeError
    lambda d: (d / "arrays.npz").unlink(),  # missing
])
def test_corrupt_dataset_is_one_line(ws, damage):
    assert ws.fedbench("generate").returncode == 0
    damage(ws.path / DATA)
    proc = ws.fedbench(*RUN)
    assert proc.returncode == 2, proc.stderr[-2000:]
    line = one_line(proc.stderr)
    assert line.startswith(f"fedbench: data error: {DATA}") and "Traceback" not in proc.stderr
    assert line.endswith("regenerate it: fedbench generate synthetic_1_1 (or dvc repro -f generate@synthetic_1_1)")
    assert ws.fedbench("generate").returncode == 0 and ws.fedbench(*RUN).returncode == 0  # the fix it names


@pytest.mark.slow
def test_corrupt_run_files(ws):
    assert ws.fedbench(*RUN).returncode == 0
    summary = ws.run_dir("synthetic_1_1", "fedavg", 0.0, 0) / "summary.json"
    summary.write_text('{"fingerprint": ')
    report = ws.fedbench("report")  # reading it: one line naming the file and the fix
    assert report.returncode == 2 and "delete the folder and rerun" in one_line(report.stderr)
    again = ws.fedbench(*RUN)  # running it: computed again, with a warning
    assert again.returncode == 0 and "computing it again" in again.stderr
    assert ws.fedbench("report").returncode == 0

"""Item 8: corrupt or missing data and run files give one line saying what is wrong and how to regenerate,
not a raw traceback (BadZipFile, EOFError, JSONDecodeError)."""

import pytest

from tests.faults.conftest import one_line

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]
DATA = "data/generated/synthetic_1_1"
STORE = "results/fedprox_main_job/pipeline/outcomes"  # the main job's store, where `fedbench run` keeps its runs


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
    outcome = ws.stored("synthetic_1_1", "fedavg", 0.0, 0)["path"]
    outcome.write_text('{"format": ')  # cut short
    report = ws.fedbench("report")  # reading it: one line naming the file and the fix
    line = one_line(report.stderr)
    assert report.returncode == 2 and line.startswith(f"fedbench: data error: {STORE}/{outcome.name}: ")
    assert "run it again to compute it anew" in line and "Traceback" not in report.stderr
    again = ws.fedbench(*RUN)  # running it: computed again, with a warning
    assert again.returncode == 0 and f"outcome {STORE}/{outcome.name} was corrupt" in again.stderr
    assert "recomputing" in again.stderr
    assert ws.fedbench("report").returncode == 0

"""Issue 23 item 1: a run's folder is named by its fingerprint, so a variation (`dvc exp run -S train.rounds=4`,
`fedbench run --set ...`) gets runs of its own, never overwrites those of other parameters, and going back reuses
them; readers (the report) see only the runs of the parameters in force."""

import json

import pytest

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]


def _rounds_of(folder):
    return json.loads((folder / "summary.json").read_text())["params"]["rounds"]


@pytest.mark.slow
def test_a_variation_never_overwrites_and_going_back_reuses(ws):
    cell = ws.path / "runs/synthetic_1_1/fedavg/stragglers-0.0"
    first = ws.fedbench(*RUN, "--set", "train.rounds=3")
    assert first.returncode == 0, first.stderr[-2000:]
    (folder,) = cell.glob("seed-0-*")
    digest = json.loads((folder / "summary.json").read_text())["param_digest"]
    variation = ws.fedbench(*RUN, "--set", "train.rounds=2")
    assert variation.returncode == 0 and "(reused)" not in variation.stderr, variation.stderr[-2000:]
    folders = sorted(cell.glob("seed-0-*"))
    assert len(folders) == 2 and sorted(_rounds_of(f) for f in folders) == [2, 3]  # both kept
    back = ws.fedbench(*RUN, "--set", "train.rounds=3")
    assert back.returncode == 0 and "(reused)" in back.stderr, back.stderr[-2000:]
    assert json.loads((folder / "summary.json").read_text())["param_digest"] == digest  # not recomputed


@pytest.mark.slow
def test_the_report_reads_the_runs_of_the_parameters_in_force(ws):
    ws.write_params(lambda raw: raw["train"].update(rounds=3, seeds=[0]))
    assert ws.fedbench(*RUN).returncode == 0
    assert ws.fedbench(*RUN, "--set", "train.rounds=2").returncode == 0
    assert ws.fedbench("report").returncode == 0  # params.yaml says 3 rounds: only the 3-round run is read
    import pandas as pd

    runs = pd.read_csv(ws.path / "reports/runs.csv")
    summaries = {json.loads((f / "summary.json").read_text())["params"]["rounds"]: json.loads((f / "summary.json").read_text())
                 for f in (ws.path / "runs/synthetic_1_1/fedavg/stragglers-0.0").glob("seed-0-*")}
    assert sorted(summaries) == [2, 3]
    row = runs[(runs.variant == "fedavg") & (runs.stragglers == 0.0) & (runs.seed == 0)]
    assert len(row) == 1 and row.final_loss.iloc[0] == summaries[3]["final"]["train/loss"] != summaries[2]["final"]["train/loss"]


@pytest.mark.slow
def test_compare_draws_a_selection_of_the_runs_in_force(ws):
    """Issue 23 item 4: `fedbench compare` draws any selection of runs (the parameters in force) to a PNG."""
    from tests.faults.conftest import one_line

    for algorithm in ("fedavg", "fedprox_mu1"):
        assert ws.fedbench("run", "--dataset", "synthetic_1_1", "--algorithm", algorithm, "--no-track").returncode == 0
    out = ws.path / "fig.png"
    proc = ws.fedbench("compare", "--algorithm", "fedavg", "fedprox_mu1", "--stragglers", "0", "--metric",
                       "train/loss", "test/accuracy", "train/dissimilarity", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str(out) and out.stat().st_size > 10_000 and proc.stderr == ""
    partly = ws.fedbench("compare", "--algorithm", "fedavg", "fedprox_mu0", "--stragglers", "0", "--out", str(out))
    assert partly.returncode == 0 and "1 selected runs have not finished" in partly.stderr  # fedprox_mu0: not run
    other = ws.fedbench("compare", "--set", "train.rounds=2", "--out", str(out))  # runs of other parameters
    assert other.returncode == 2 and "none of the" in one_line(other.stderr) and "fedbench run --dataset" in other.stderr
    unknown = ws.fedbench("compare", "--algorithm", "fedprxo", "--out", str(out))
    assert unknown.returncode == 2
    assert one_line(unknown.stderr).startswith("fedbench: config error: --algorithm 'fedprxo' is not in params.yaml's")

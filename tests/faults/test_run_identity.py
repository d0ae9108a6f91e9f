"""Issue 23 item 1: a run is kept under its fingerprint (results/fedprox_main_job/pipeline/outcomes/<fingerprint>.json,
the one store), so a variation (`dvc exp run -S train.rounds=4`, `fedbench run --set ...`) gets runs of its own, never
overwrites those of other parameters, and going back reuses them; readers (the report) see only the runs of the
parameters in force."""

import pytest

RUN = ["run", "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--seed", "0", "--no-track"]


@pytest.mark.slow
def test_a_variation_never_overwrites_and_going_back_reuses(ws):
    first = ws.fedbench(*RUN, "--set", "train.rounds=3")
    assert first.returncode == 0, first.stderr[-2000:]
    (line,) = ws.index()
    stored = ws.stored("synthetic_1_1", "fedavg", 0.0, 0, **{"train.rounds": 3})
    written = stored["path"].stat().st_mtime_ns
    variation = ws.fedbench(*RUN, "--set", "train.rounds=2")
    assert variation.returncode == 0 and "(reused)" not in variation.stderr, variation.stderr[-2000:]
    lines = ws.index()
    assert len(lines) == 2 and sorted(x["params"]["rounds"] for x in lines) == [2, 3]  # both kept
    assert len({x["fingerprint"] for x in lines}) == 2 and lines[0] == line
    back = ws.fedbench(*RUN, "--set", "train.rounds=3")
    assert back.returncode == 0 and "(reused)" in back.stderr, back.stderr[-2000:]
    again = ws.stored("synthetic_1_1", "fedavg", 0.0, 0, **{"train.rounds": 3})
    assert again["param_digest"] == stored["param_digest"] and again["path"] == stored["path"]
    assert stored["path"].stat().st_mtime_ns == written and len(ws.index()) == 2  # not recomputed: still two runs


@pytest.mark.slow
def test_the_report_reads_the_runs_of_the_parameters_in_force(ws):
    ws.write_params(lambda raw: raw["train"].update(rounds=3, seeds=[0]))
    assert ws.fedbench(*RUN).returncode == 0
    assert ws.fedbench(*RUN, "--set", "train.rounds=2").returncode == 0
    assert ws.fedbench("report").returncode == 0  # params.yaml says 3 rounds: only the 3-round run is read
    import pandas as pd

    runs = pd.read_csv(ws.path / "reports/runs.csv")
    summaries = {r: ws.stored("synthetic_1_1", "fedavg", 0.0, 0, **{"train.rounds": r}) for r in (2, 3)}
    assert sorted(x["params"]["rounds"] for x in ws.index()) == [2, 3]
    row = runs[(runs.variant == "fedavg") & (runs.stragglers == 0.0) & (runs.seed == 0)]
    assert len(row) == 1 and row.final_loss.iloc[0] == summaries[3]["final"]["train/loss"] != summaries[2]["final"]["train/loss"]

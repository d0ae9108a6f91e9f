"""The prepared GPU check's fused part (issue 53, item 6) as far as a CPU runs it: the LSTM's round captured in one
CUDA graph is skipped off CUDA with its reason, and the part's judgement (every path that ran within 1e-4 of the
reference) reads the comparison's rows, skipped ones included."""

import json

import pytest
import torch

from fedbench.bench.gpucheck import FUSED_TOL, fused_verdict

try:  # the fused kernels built for Triton's interpreter (a module fixture), and a tiny GRU of the family
    from tests.engine.test_fused_rnn import _deltafl_gru_like, fused
except pytest.skip.Exception:  # no Triton: that module skips itself; the tests here that need no kernel still run
    @pytest.fixture
    def fused():
        pytest.skip("Triton is not installed: the fused kernels run in its interpreter here")

ROW = {"max_abs_diff": 3e-7, "launches_per_chain_step": 326.0, "us_per_chain_step": 1500.0}


def test_the_fused_part_passes_a_family_when_every_path_that_ran_is_within_its_tolerance():
    skipped = {"skipped": "no CUDA: a CUDA graph is recorded and replayed on a card only"}
    out = {"static": {"max_abs_diff": 0.0, "launches_per_chain_step": None}, "fused": ROW, "captured": skipped}
    assert fused_verdict(out) == (True, ("fused: 3.0e-07 from the reference, 326 launches and 1500.0 us a chain "
                                         "step; captured: skipped (no CUDA: a CUDA graph is recorded and replayed on "
                                         "a card only)"))
    captured = {"max_abs_diff": FUSED_TOL, "launches_per_chain_step": 326.0, "us_per_chain_step": 900.0}
    assert fused_verdict({**out, "captured": captured})[0]  # at the tolerance: within
    ok, detail = fused_verdict({**out, "captured": {**captured, "max_abs_diff": 1.5e-4}})
    assert not ok and detail.endswith("captured: 1.5e-04 from the reference, 326 launches and 900.0 us a chain step")
    assert fused_verdict({"static": out["static"], "captured": skipped})[0] is False  # nothing ran: not a pass


@pytest.mark.skipif(torch.cuda.is_available(), reason="off CUDA only; on a card the GPU check itself runs it")
def test_the_captured_round_says_why_it_is_skipped_off_cuda():
    from fedbench.bench import fused_rnn_check

    # run_static's arguments (algorithm, kernel, bcast, local, x, y, cohort): only the device of ``local`` is read
    args = (None, None, None, torch.zeros(1, 3), None, None, None)
    assert fused_rnn_check.captured(args, torch.zeros(1, 3)) == {"skipped": fused_rnn_check.NO_CUDA}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU part is what CI runs; on a GPU run the command itself")
def test_the_fused_part_names_the_captured_lstm_round_it_would_measure_on_a_card(tmp_path):
    from fedbench.bench.gpucheck import main

    assert main([str(tmp_path / "out"), "--parts", "fused", "--budget-s", "60"]) == 0
    skipped = {s["name"]: s["reason"] for s in json.loads((tmp_path / "out" / "gpucheck.json").read_text())["skipped"]}
    assert skipped["fedprox_shakespeare_lstm"].startswith(
        "no CUDA: at 1, 200 rows on a card (eager, and its round captured in one CUDA graph); ")
    assert skipped["cifar_cnn"].startswith("no CUDA: at 1, 100, 3000 rows on a card; ")



def test_the_lstm_rows_comparison_and_judgement_run_in_the_interpreter(fused):
    """What part 10 runs for the LSTM at each size (fedbench.bench.fused_rnn_check.compare, then
    :func:`fused_verdict`), on a tiny GRU in Triton's interpreter: the eager fused round within the tolerance, the
    captured one skipped with its reason, the family passed on what ran."""
    from fedbench.bench import fused_rnn_check

    out = fused_rnn_check.compare(fused_rnn_check.draw_round(_deltafl_gru_like(), rows=2, steps=2, batch=2, seq=2),
                                  "cpu")
    assert out["captured"] == {"skipped": "no CUDA: a CUDA graph is recorded and replayed on a card only"}
    assert out["fused"]["max_abs_diff"] <= 1e-5 and out["fused"]["launches_per_chain_step"] == 2 * 2 * 1 + 2 * 1 + 2
    ok, detail = fused_verdict(out)
    assert ok and detail.startswith("fused: ") and detail.endswith(
        " launches and nan us a chain step; captured: skipped (no CUDA: a CUDA graph is recorded and replayed on a "
        "card only)")

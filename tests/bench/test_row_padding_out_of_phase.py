"""Runs out of phase (issue 53, item 4), counted from drawn rounds: fedbench.bench.row_padding.out_of_phase_padding."""

import dataclasses

import numpy as np

from fedbench.bench import row_padding
from fedbench.engine.simulation import SimulationConfig

CFG = SimulationConfig(rounds=2, clients_per_round=7, local_epochs=1, batch_size=10, device="cpu")


def test_one_run_out_of_phase_is_one_run_in_lockstep():
    sizes = np.arange(10, 71, 10)  # every client each round: steps 1, ..., 7
    got = row_padding.out_of_phase_padding([(CFG, sizes, True)], rounds=2)
    lockstep = row_padding.stack_padding([(CFG, sizes, True)], rounds=2)
    assert lockstep == {"useful": 56, "lockstep": 98, "bucketed": 58}
    # a_t = 7, 6, ..., 1 each round on buckets 7, 7, 5, 4, 3, 2, 1 of 7 slots
    assert got == {"useful": 56, "out_of_phase": 98, "out_of_phase_bucketed": 58, "lockstep_chain": 14,
                   "out_of_phase_chain": 14}


def test_runs_whose_long_rounds_alternate_stop_waiting_for_each_other(monkeypatch):
    # run a: round 0 clients of 7 and 1 steps, round 1 of 1 and 1; run b the other way round
    table = {(0, 0): [7, 1], (0, 1): [1, 1], (1, 0): [1, 1], (1, 1): [7, 1]}
    monkeypatch.setattr(row_padding, "round_steps", lambda cfg, sizes, keeps, r: np.array(table[cfg.seed, r]))
    runs = [(CFG, None, True), (dataclasses.replace(CFG, seed=1), None, True)]
    # lockstep: each round 4 rows x 7 steps; at buckets a_t = 4, then 1 for 6 steps, each round
    assert row_padding.stack_padding(runs, rounds=2) == {"useful": 20, "lockstep": 56, "bucketed": 20}
    # out of phase: a's rounds at its own 2 rows x 7, then 2 x 1; b's 2 x 1, then 2 x 7 (16 each); on one step
    # axis b's round 1 starts at step 1 and a's at step 7: a_t = 4, 3, 2, 2, 2, 2, 2, 3, every one a bucket of 4
    # slots; the chain is a run's own 7 + 1, not 7 + 7
    assert row_padding.out_of_phase_padding(runs, rounds=2) == {
        "useful": 20, "out_of_phase": 32, "out_of_phase_bucketed": 20, "lockstep_chain": 14, "out_of_phase_chain": 8}
    # a third run with no clients at all adds nothing
    table |= {(2, 0): [], (2, 1): []}
    three = [*runs, (dataclasses.replace(CFG, seed=2), None, True)]
    assert row_padding.out_of_phase_padding(three, rounds=2) == row_padding.out_of_phase_padding(runs, rounds=2)

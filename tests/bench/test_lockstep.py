"""The lockstep counts (fedbench.bench.lockstep) on a hand-made schedule of three runs over four rounds."""

from __future__ import annotations

import numpy as np

from fedbench.bench.lockstep import (
    FEDPROX_SETTINGS,
    RunSteps,
    chain,
    contiguous,
    fedprox_synthetic_runs,
    out_of_phase_chain,
    padded_row_steps,
    round_robin,
)

# run i: its largest client's steps, its cohort's rows and its steps in all, per round
RUNS = [
    RunSteps(max_steps=np.array([5, 3, 8, 2]), rows=np.array([2, 2, 2, 2]), row_steps=np.array([7, 5, 10, 3])),
    RunSteps(max_steps=np.array([4, 6, 1, 2]), rows=np.array([1, 2, 1, 1]), row_steps=np.array([4, 9, 1, 2])),
    RunSteps(max_steps=np.array([9, 9, 9, 9]), rows=np.array([1, 1, 1, 1]), row_steps=np.array([9, 9, 9, 9])),
]


def test_the_chain_of_one_stack_is_each_rounds_largest_client():
    assert chain(RUNS, [[0, 1]]) == 5 + 6 + 8 + 2
    assert chain(RUNS, [[0, 1]], multiple=4) == 8 + 8 + 8 + 4
    assert chain(RUNS, [[0, 1]], block=2) == 6 + 6 + 8 + 8
    assert chain(RUNS, [[0], [1]]) == (5 + 3 + 8 + 2) + (4 + 6 + 1 + 2)  # two stacks run one after the other


def test_out_of_phase_each_stack_lasts_its_longest_runs_own_chain():
    # run 0's own rounds: 5 + 3 + 8 + 2 = 18, run 1's 4 + 6 + 1 + 2 = 13, run 2's 36
    assert out_of_phase_chain(RUNS, [[0, 1]]) == 18 < chain(RUNS, [[0, 1]]) == 21
    assert out_of_phase_chain(RUNS, [[0], [1]]) == 18 + 13 == chain(RUNS, [[0], [1]])  # alone: no waiting
    assert out_of_phase_chain(RUNS, [[0, 1, 2]]) == 36 == chain(RUNS, [[0, 1, 2]])  # run 2 is the longest each round


def test_padded_row_steps_count_the_discarded_work():
    # rows per block of 2: run 0 has 2, run 1 has 2 then 1 -> 4, 4, 3, 3; steps each round's own: 5, 6, 8, 2
    assert padded_row_steps(RUNS, [[0, 1]], 2) == (5 * 4 + 6 * 4 + 8 * 3 + 2 * 3) - (7 + 5 + 10 + 3 + 4 + 9 + 1 + 2)
    assert padded_row_steps(RUNS, [[2]], 1) == 0  # one client, always the longest: nothing padded


def test_runs_are_dealt_round_robin_or_cut_contiguously():
    assert round_robin([5, 4, 3, 2, 1], 2) == [[5, 3, 1], [4, 2]]
    assert contiguous([5, 4, 3, 2, 1], 2) == [[5, 4, 3], [2, 1]]


def test_the_measured_study_is_the_benchs_fedprox_synthetic_study():
    from fedbench.bench.studies import FEDPROX_PAPER, fedprox_study

    study = fedprox_study()
    assert fedprox_synthetic_runs() == [(r.dataset, r.algorithm, r.mu, r.stragglers, r.seed) for r in study.runs]
    assert FEDPROX_SETTINGS == FEDPROX_PAPER

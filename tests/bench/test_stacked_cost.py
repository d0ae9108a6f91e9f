"""``fedbench paper cost``'s stacked projection (fedbench.study.costs.stacked_seconds, stack_point_seconds,
stack_groups, group_sizes, project_stacked) on a hand-made study, with exact arithmetic (every unit cost is a power of two or an integer,
so the float sums are exact)."""

from __future__ import annotations

import pytest

from fedbench.study.costs import (Scale, group_sizes, project_stacked, seconds, stack_groups, stack_point_seconds,
                                  stacked_seconds)

C = {"step_s": 1.0, "round_s": 10.0, "eval_s": 100.0, "eval_sample_s": 0.5, "grad_sample_s": 0.0}
# 2 rounds, K = 2 clients of 20 samples, batch 10: 2 steps a client, 4 a round; evaluated at rounds 0, 1 and the
# final model (3 evaluations) on 5 samples
A = Scale("m", runs=3, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
          eval_samples=5, label="a")
# one run alone: training 2 x (10 + 4 x 1 + 2 x 20 x 0.5) = 68; evaluation 3 x (100 + 5 x 0.5) = 307.5
ALONE = 68.0 + 307.5
SHARED = 2 * 10.0 + 3 * 100.0  # what a stack pays once: rounds x round_s + evaluations x eval_s


def test_one_run_alone_is_the_per_run_figure():
    assert seconds(A, C) == (68.0, 307.5)
    assert stacked_seconds(A, C, 1) == ALONE


def test_a_stack_pays_the_fixed_costs_once():
    assert stacked_seconds(A, C, 3) == 3 * ALONE - 2 * SHARED == 486.5


def test_scales_equal_but_for_runs_and_label_share_stacks_and_unread_runs_are_not_counted():
    b = Scale("m", runs=2, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
              eval_samples=5, label="b")
    context = Scale("m", runs=7, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
                    eval_samples=5, read=False)
    other = Scale("m", runs=1, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=20,
                  eval_samples=5)  # another batch: its own stack (1 step a client)
    assert [st.runs for st in stack_groups([A, b, context, other])] == [5, 1]
    assert [st.runs for st in stack_groups([A, b], max_stack=2)] == [2, 2, 1]
    p = project_stacked([A, b, context, other], lambda s: C)
    other_alone = 2 * (10 + 2 * 1 + 2 * 20 * 0.5) + 307.5  # 1 step a client, 2 a round: 371.5
    assert p["runs"] == 6 and p["stacks"] == 2
    assert p["alone_seconds"] == 5 * ALONE + other_alone == 2249.0
    assert p["stacked_seconds"] == (5 * ALONE - 4 * SHARED) + other_alone == 969.0
    assert p["gain"] == round(2249.0 / 969.0, 3)
    cut = project_stacked([A, b], lambda s: C, max_stack=2)
    assert cut["stacked_seconds"] == 2 * (2 * ALONE - SHARED) + ALONE == 1237.5 and cut["stacks"] == 3


@pytest.mark.parametrize("runs", [1, 2, 5, 40])
def test_stacked_never_exceeds_one_by_one(runs):
    assert stacked_seconds(A, C, runs) <= runs * ALONE


# stacks of the unit timed (fedbench.bench.paper_cost.measure_stacks): the same costs for a stack of R runs, each a
# row of its batched work. A: one run alone 68 + 307.5 = 375.5 s (above). At 2 runs: 2 rounds x (16 + 2 x (4 x 0.5
# + 2 x 20 x 0.25)) = 2 x 40 = 80 training, 3 x (100 + 2 x 5 x 0.25) = 307.5 evaluation: 387.5. At 4 runs:
# 2 x (20 + 4 x (4 x 0.25 + 40 x 0.25)) = 128, 3 x (100 + 4 x 5 x 0.25) = 315: 443.
P2 = {"runs": 2, "round_s": 16.0, "step_s": 0.5, "eval_s": 100.0, "eval_sample_s": 0.25}
P4 = {"runs": 4, "round_s": 20.0, "step_s": 0.25, "eval_s": 100.0, "eval_sample_s": 0.25}
TIMED = {**C, "stacked": [P2, P4]}


def test_a_timed_stack_is_priced_from_its_own_costs():
    assert stack_point_seconds(A, C, P2) == 387.5 and stack_point_seconds(A, C, P4) == 443.0
    assert stack_point_seconds(A, C, {"runs": 1, **{k: C[k] for k in P2 if k != "runs"}}) == ALONE
    assert [stacked_seconds(A, TIMED, r) for r in (1, 2, 4)] == [ALONE, 387.5, 443.0]


def test_between_and_beyond_the_timed_stacks_the_chords_of_the_curve():
    assert stacked_seconds(A, TIMED, 3) == (387.5 + 443.0) / 2  # on the chord from 2 to 4
    assert stacked_seconds(A, TIMED, 8) == 443.0 + 4 * (443.0 - 387.5) / 2  # the last segment, extended
    one_point = {**C, "stacked": [P2]}
    assert stacked_seconds(A, one_point, 5) == ALONE + 4 * (387.5 - ALONE)  # from one run alone through 2
    # the fixed-cost assumption only where no stack was timed
    assert stacked_seconds(A, {**C, "stacked": []}, 3) == 3 * ALONE - 2 * SHARED


def test_a_unit_whose_stacks_do_not_fit_memory_is_cut():
    b = Scale("m", runs=5, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
              eval_samples=5, label="b")
    p = project_stacked([A, b], lambda s: {**TIMED, "stack_fit": 3})
    assert p["stacks"] == 3 and p["runs"] == 8  # 8 runs in stacks of 3, 3 and 2
    assert p["stacked_seconds"] == 2 * stacked_seconds(A, TIMED, 3) + 387.5 == 1218.0
    assert project_stacked([A, b], lambda s: {**TIMED, "stack_fit": 3}, max_stack=2)["stacks"] == 4
    assert project_stacked([A, b], lambda s: {**TIMED, "stack_fit": None})["stacks"] == 1
    assert group_sizes([A, b]) == {"m@10": 8}


def test_runs_with_and_without_the_dissimilarity_share_a_stack_and_only_those_computing_it_pay_for_it():
    """Whether a run computes the dissimilarity is a per-run setting (fedbench.engine.simulation.PER_RUN_SETTINGS):
    the runs that compute it share the stack of those that do not, and pay 3 x 4 gradients x 0.5 s = 6 s each."""
    g = {**C, "grad_sample_s": 0.5}
    computing = Scale("m", runs=2, rounds=2, clients_per_round=2, client_samples=20, local_epochs=1, batch_size=10,
                      eval_samples=5, dissimilarity_every=1, dissimilarity_samples=4, label="dissimilarity")
    assert computing.dissimilarities() == 3  # rounds 0, 1 and the final model
    stacks = stack_groups([computing, A])
    assert [(st.runs, st.dissimilarity_runs, st.scale.dissimilarity_every) for st in stacks] == [(5, 2, 1)]
    p = project_stacked([computing, A], lambda s: g)
    assert p["stacks"] == 1 and p["alone_seconds"] == 5 * ALONE + 2 * 6.0 == 1889.5
    assert p["stacked_seconds"] == 5 * ALONE - 4 * SHARED + 2 * 6.0 == 609.5
    # cut into stacks of 2: the computing runs in the first; the sum is the same wherever they go
    assert [(st.runs, st.dissimilarity_runs) for st in stack_groups([computing, A], max_stack=2)] == [
        (2, 2), (2, 0), (1, 0)]
    assert group_sizes([computing, A]) == {"m@10": 5}

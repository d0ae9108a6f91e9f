"""``fedbench paper cost``'s stacked projection (fedbench.study.costs.stacked_seconds, stack_groups,
project_stacked) on a hand-made study, with exact arithmetic (every unit cost is a power of two or an integer,
so the float sums are exact)."""

from __future__ import annotations

import pytest

from fedbench.study.costs import Scale, project_stacked, seconds, stack_groups, stacked_seconds

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
    assert [runs for _, runs in stack_groups([A, b, context, other])] == [5, 1]
    assert [runs for _, runs in stack_groups([A, b], max_stack=2)] == [2, 2, 1]
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

"""Client selection, stragglers and minibatch order (FedProx section 5.1-5.2 and the authors' trainers)."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.engine.sampling import draw_stragglers, minibatch_order, plan_round, select_clients, straggler_steps

SIZES = np.array([5, 80, 12, 40, 7, 300, 25, 60, 9, 150, 33, 18])


# ---- select_clients -------------------------------------------------------------------------------------

@pytest.mark.parametrize("round_", range(5))
def test_uniform_returns_k_distinct_sorted_clients_with_nk_weights(round_):
    clients, weights = select_clients(seed=0, round_=round_, sizes=SIZES, k=5, scheme="uniform")
    assert clients.shape == (5,) and len(set(clients.tolist())) == 5
    assert np.all(np.diff(clients) > 0)
    assert clients.min() >= 0 and clients.max() < len(SIZES)
    assert weights.dtype == np.float64
    np.testing.assert_array_equal(weights, SIZES[clients].astype(np.float64))


def test_proportional_returns_equal_weights():
    clients, weights = select_clients(0, 0, SIZES, 4, "proportional")
    assert len(set(clients.tolist())) == 4 and np.all(np.diff(clients) > 0)
    np.testing.assert_array_equal(weights, np.ones(4))


def test_all_clients():
    clients, _ = select_clients(0, 0, SIZES, len(SIZES), "uniform")
    np.testing.assert_array_equal(clients, np.arange(len(SIZES)))


def _inclusion_frequency(scheme, k, rounds):
    counts = np.zeros(len(SIZES))
    for r in range(rounds):
        clients, _ = select_clients(11, r, SIZES, k, scheme)
        counts[clients] += 1
    return counts / rounds


def test_uniform_ignores_size():
    freq = _inclusion_frequency("uniform", k=3, rounds=2000)
    # P(selected) = K / N = 0.25 for every client; sd of a frequency over 2000 rounds is ~0.01.
    np.testing.assert_allclose(freq, 3 / len(SIZES), atol=0.04)


def test_proportional_with_one_client_draws_p_k():
    freq = _inclusion_frequency("proportional", k=1, rounds=3000)
    p = SIZES / SIZES.sum()
    # sd of each frequency <= sqrt(0.4 * 0.6 / 3000) ~ 0.009
    np.testing.assert_allclose(freq, p, atol=0.025)


def test_proportional_favours_large_clients():
    freq = _inclusion_frequency("proportional", k=3, rounds=2000)
    largest, smallest = np.argmax(SIZES), np.argmin(SIZES)
    assert freq[largest] > 0.8  # p = 300/739 per draw, three draws without replacement
    assert freq[smallest] < 0.06  # p = 5/739 per draw
    # inclusion frequency increases with size (ties impossible: sizes are distinct and far apart)
    order = np.argsort(SIZES)
    big_half, small_half = order[6:], order[:6]
    assert freq[big_half].min() > freq[small_half].max() - 0.02


@pytest.mark.parametrize("k", [0, 13])
def test_invalid_cohort_size_raises(k):
    with pytest.raises(ValueError):
        select_clients(0, 0, SIZES, k, "uniform")


def test_unknown_scheme_raises():
    with pytest.raises(ValueError, match="sampling scheme"):
        select_clients(0, 0, SIZES, 3, "stratified")


# ---- draw_stragglers --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fraction,active", [(0.0, 10), (0.1, 9), (0.5, 5), (0.9, 1), (1.0, 0)])
def test_number_of_active_clients_is_round_k_times_one_minus_fraction(fraction, active):
    for r in range(20):
        straggler, epochs = draw_stragglers(seed=2, round_=r, k=10, fraction=fraction, local_epochs=20)
        assert straggler.dtype == bool and straggler.shape == (10,)
        assert int((~straggler).sum()) == active
        np.testing.assert_array_equal(epochs[~straggler], 20)


def test_authors_code_straggler_epochs_in_1_to_e_minus_1():
    seen = set()
    for r in range(200):
        straggler, epochs = draw_stragglers(0, r, 10, 0.5, local_epochs=4, mode="authors_code")
        seen |= set(epochs[straggler].tolist())
        np.testing.assert_array_equal(epochs[~straggler], 4)
    assert seen == {1, 2, 3}


def test_paper_straggler_epochs_in_1_to_e():
    seen = set()
    for r in range(200):
        straggler, epochs = draw_stragglers(0, r, 10, 0.5, local_epochs=4, mode="paper")
        seen |= set(epochs[straggler].tolist())
    assert seen == {1, 2, 3, 4}


def test_authors_code_with_one_epoch_raises():
    with pytest.raises(ValueError, match="local_epochs >= 2"):
        draw_stragglers(0, 0, 10, 0.5, local_epochs=1, mode="authors_code")
    # the paper's rule is defined for E = 1: the stragglers run the one epoch
    straggler, epochs = draw_stragglers(0, 0, 10, 0.5, local_epochs=1, mode="paper")
    assert straggler.sum() == 5
    np.testing.assert_array_equal(epochs, 1)


@pytest.mark.parametrize("fraction", [-0.1, 1.5, float("nan")])
def test_invalid_fraction_raises(fraction):
    with pytest.raises(ValueError, match="fraction"):
        draw_stragglers(0, 0, 10, fraction, local_epochs=20)


def test_unknown_straggler_mode_raises():
    with pytest.raises(ValueError, match="straggler_epochs"):
        draw_stragglers(0, 0, 10, 0.5, local_epochs=20, mode="uniform")


def test_minibatch_stragglers_keep_e_epochs_and_draw_the_other_modes_stragglers():
    for r in range(20):
        straggler, epochs = draw_stragglers(4, r, 10, 0.5, local_epochs=1, mode="minibatches")
        np.testing.assert_array_equal(epochs, 1)  # E = 1 is allowed: the cut is in steps (straggler_steps)
        np.testing.assert_array_equal(straggler, draw_stragglers(4, r, 10, 0.5, local_epochs=1, mode="paper")[0])


def test_straggler_steps_cut_stragglers_to_1_to_s_minus_1_and_leave_the_others_whole():
    full = np.array([1, 2, 3, 8, 8, 8])
    straggler = np.array([True, True, True, True, False, True])
    seen = {2: set(), 3: set(), 8: set()}
    for r in range(300):
        steps = straggler_steps(0, r, straggler, full)
        assert steps[0] == 1 and steps[4] == 8  # one step: its one step; an active client: all its steps
        for i in (1, 2, 3, 5):
            seen[int(full[i])].add(int(steps[i]))
    assert seen == {2: {1}, 3: {1, 2}, 8: set(range(1, 8))}  # U{1..S_k-1}, every value reached
    np.testing.assert_array_equal(straggler_steps(0, 5, straggler, full), straggler_steps(0, 5, straggler, full))


def test_plan_round_in_minibatches_caps_the_stragglers_steps_at_e_ceil_n_over_b():
    plan = plan_round(3, 4, SIZES, 6, "uniform", 0.5, 2, "minibatches", batch_size=10)
    full = 2 * -(-SIZES[plan.clients] // 10)
    np.testing.assert_array_equal(plan.steps, straggler_steps(3, 4, plan.straggler, full))
    np.testing.assert_array_equal(plan.steps[~plan.straggler], full[~plan.straggler])
    assert np.all(plan.steps[plan.straggler] < np.maximum(full[plan.straggler], 2))
    np.testing.assert_array_equal(plan.clients, plan_round(3, 4, SIZES, 6, "uniform", 0.5, 2, "paper").clients)
    assert plan_round(3, 4, SIZES, 6, "uniform", 0.5, 2, "paper").steps is None  # the epochs decide
    with pytest.raises(ValueError, match="batch_size"):
        plan_round(3, 4, SIZES, 6, "uniform", 0.5, 2, "minibatches")


# ---- replay ------------------------------------------------------------------------------------------------

def test_same_seed_and_round_replay_the_same_draws():
    for r in (0, 7):
        a = plan_round(5, r, SIZES, 6, "uniform", 0.5, 20)
        b = plan_round(5, r, SIZES, 6, "uniform", 0.5, 20)
        for field in ("clients", "straggler", "epochs", "weights"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_different_round_or_seed_gives_different_draws():
    base_clients = select_clients(5, 0, SIZES, 6, "uniform")[0]
    base_strag = draw_stragglers(5, 0, 10, 0.5, 20)
    for seed, r in [(5, 1), (5, 2), (6, 0)]:
        assert not np.array_equal(select_clients(seed, r, SIZES, 6, "uniform")[0], base_clients)
        straggler, epochs = draw_stragglers(seed, r, 10, 0.5, 20)
        assert not (np.array_equal(straggler, base_strag[0]) and np.array_equal(epochs, base_strag[1]))


def test_plan_round_combines_selection_and_stragglers():
    plan = plan_round(3, 4, SIZES, 6, "uniform", 0.5, 5, "paper")
    clients, weights = select_clients(3, 4, SIZES, 6, "uniform")
    straggler, epochs = draw_stragglers(3, 4, 6, 0.5, 5, "paper")
    np.testing.assert_array_equal(plan.clients, clients)
    np.testing.assert_array_equal(plan.weights, weights)
    np.testing.assert_array_equal(plan.straggler, straggler)
    np.testing.assert_array_equal(plan.epochs, epochs)


def test_stragglers_do_not_depend_on_the_sampling_scheme():
    # Two runs that differ only in the sampling scheme still share the straggler draw of each round.
    a = plan_round(3, 4, SIZES, 6, "uniform", 0.5, 5)
    b = plan_round(3, 4, SIZES, 6, "proportional", 0.5, 5)
    np.testing.assert_array_equal(a.straggler, b.straggler)
    np.testing.assert_array_equal(a.epochs, b.epochs)


# ---- minibatch_order ---------------------------------------------------------------------------------------

def test_each_epoch_is_a_permutation_cut_into_batches():
    n, batch, epochs = 7, 3, 4
    order = minibatch_order(seed=1, round_=2, client_id=3, num_samples=n, epochs=epochs, batch_size=batch)
    per_epoch = 3  # ceil(7 / 3)
    assert order.shape == (epochs * per_epoch, batch) and order.dtype == np.int64
    perms = []
    for e in range(epochs):
        block = order[e * per_epoch:(e + 1) * per_epoch]
        flat = block.ravel()
        # the permutation fills the epoch's first n slots, padding -1 only at the end of its last batch
        assert sorted(flat[:n].tolist()) == list(range(n))
        np.testing.assert_array_equal(flat[n:], [-1, -1])
        assert np.all(block[:-1] >= 0)
        perms.append(tuple(flat[:n]))
    assert len(set(perms)) > 1  # a fresh permutation each epoch


def test_no_padding_when_batch_divides_samples():
    order = minibatch_order(0, 0, 0, num_samples=6, epochs=2, batch_size=3)
    assert order.shape == (4, 3) and np.all(order >= 0)
    for e in range(2):
        assert sorted(order[2 * e:2 * e + 2].ravel().tolist()) == list(range(6))


def test_batch_larger_than_data_is_one_partial_batch_per_epoch():
    order = minibatch_order(0, 0, 0, num_samples=3, epochs=2, batch_size=10)
    assert order.shape == (2, 10)
    for row in order:
        assert sorted(row[:3].tolist()) == [0, 1, 2] and np.all(row[3:] == -1)


def test_fewer_epochs_are_a_prefix_of_the_full_schedule():
    full = minibatch_order(4, 9, 2, num_samples=11, epochs=5, batch_size=4)
    for e in range(1, 5):
        part = minibatch_order(4, 9, 2, num_samples=11, epochs=e, batch_size=4)
        np.testing.assert_array_equal(part, full[: e * 3])


def test_minibatch_order_replays_and_depends_on_round_and_client():
    a = minibatch_order(4, 9, 2, 11, 2, 4)
    np.testing.assert_array_equal(a, minibatch_order(4, 9, 2, 11, 2, 4))
    assert not np.array_equal(a, minibatch_order(4, 10, 2, 11, 2, 4))
    assert not np.array_equal(a, minibatch_order(4, 9, 3, 11, 2, 4))
    assert not np.array_equal(a, minibatch_order(5, 9, 2, 11, 2, 4))

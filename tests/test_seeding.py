"""fedbench.seeding: every stream is fixed by (seed, round, purpose, *extra), the same on every call and in every
release (the values below were drawn before the uint32 fast path existed), and a bad purpose or seed is refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.seeding import CODES, PURPOSES, rng, seed_sequence, torch_generator


def test_streams_are_the_values_they_have_always_been():
    assert rng(0, 0, "select").integers(0, 1000, 5).tolist() == [934, 807, 142, 54, 30]
    assert rng(7, -1, "init").integers(0, 1000, 5).tolist() == [698, 977, 624, 182, 796]
    assert rng(3, 12, "minibatch", 29).integers(0, 1000, 5).tolist() == [700, 963, 390, 336, 152]
    assert rng(2**40, 5, "data", 2**33).integers(0, 1000, 5).tolist() == [245, 461, 294, 452, 543]  # list path
    assert torch.randint(0, 1000, (5,), generator=torch_generator(1, -1, "init")).tolist() == [595, 842, 263, 44, 417]


@pytest.mark.parametrize("words", [(0, 0), (0, 0, 5), (2**32 - 1, 1, 0, 2**32 - 1), (5, 2**32 - 1, 7)])
def test_the_uint32_words_are_the_entropy_numpy_makes_of_the_list(words):
    seed, round_plus_one, *extra = words
    got = seed_sequence(seed, round_plus_one - 1, "minibatch", *extra).generate_state(8)
    want = np.random.SeedSequence([seed, round_plus_one, CODES["minibatch"], *extra]).generate_state(8)
    np.testing.assert_array_equal(got, want)


def test_purposes_have_distinct_codes_and_a_typo_is_refused():
    assert len(set(CODES.values())) == len(PURPOSES)
    with pytest.raises(ValueError, match="unknown random purpose 'minibtach'"):
        rng(0, 0, "minibtach")


def test_a_negative_seed_is_refused_as_numpy_refuses_it():
    with pytest.raises(ValueError, match="expected non-negative integer"):
        rng(-1, 0, "select")

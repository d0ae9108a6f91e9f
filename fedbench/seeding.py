"""Every random draw in fedbench comes from a generator derived from (seed, round, purpose, ...).

Two runs with the same seed therefore see the same client selection, stragglers, availability and
minibatch order, whatever algorithm they run and in whatever order rounds are replayed (a resumed run
draws exactly what an uninterrupted one would have drawn). Nothing here touches global RNG state.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch

# Purposes are fixed names; a typo would silently give a different stream, so they are checked.
PURPOSES = frozenset(
    {"data", "split", "select", "stragglers", "minibatch", "init", "availability", "algorithm", "partition", "evaluation"}
)


# each purpose's code: the first 4 bytes of its name's sha256, little-endian (computed once: the engine draws a few
# streams per client per round)
CODES = {p: int.from_bytes(hashlib.sha256(p.encode()).digest()[:4], "little") for p in PURPOSES}
WORD = 2**32


def _purpose_code(purpose: str) -> int:
    code = CODES.get(purpose)
    if code is None:
        raise ValueError(f"unknown random purpose {purpose!r}; allowed: {sorted(PURPOSES)}")
    return code


def seed_sequence(seed: int, round_: int, purpose: str, *extra: int) -> np.random.SeedSequence:
    """The seed sequence for one (seed, round, purpose, *extra) stream. round_ = -1 means 'before training'.

    numpy turns each integer of a list into its 32-bit words, so where every integer is below 2**32 (always, but a
    huge seed) they are given as one uint32 array: the same entropy, the same stream (tests/test_seeding.py), at
    half the cost of coercing a list (a stream is drawn per client per round)."""
    words = [int(seed), int(round_) + 1, _purpose_code(purpose), *map(int, extra)]
    if all(0 <= w < WORD for w in words):
        return np.random.SeedSequence(np.array(words, dtype=np.uint32))
    return np.random.SeedSequence(words)


def rng(seed: int, round_: int, purpose: str, *extra: int) -> np.random.Generator:
    """A numpy Generator for one stream."""
    return np.random.Generator(np.random.PCG64(seed_sequence(seed, round_, purpose, *extra)))


def torch_generator(seed: int, round_: int, purpose: str, *extra: int) -> torch.Generator:
    """A CPU torch.Generator for one stream (draw on CPU, then move: identical on every device)."""
    import torch  # here: the numpy streams, and config checks that use them, need no torch

    state = seed_sequence(seed, round_, purpose, *extra).generate_state(2, np.uint64)
    g = torch.Generator(device="cpu")
    g.manual_seed(int(state[0] % (2**63 - 1)))
    return g

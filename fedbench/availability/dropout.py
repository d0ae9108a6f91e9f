"""Independent random dropout: in every round each client is available with probability q, independently of
the other clients and of other rounds. Drawn from the (seed, round, 'availability') stream, so every
algorithm run with one seed sees the same clients drop out, and any round replays on its own."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedbench.seeding import rng


@dataclass(frozen=True)
class RandomDropout:
    num_clients: int
    probability: float  # q: probability that a client is available in a round

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"dropout availability: probability q={self.probability} must be in [0, 1]")

    def mask(self, seed: int, round_: int) -> np.ndarray:
        return rng(seed, round_, "availability").random(self.num_clients) < self.probability

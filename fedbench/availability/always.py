"""Every client can be selected in every round (the FedProx, SCAFFOLD and Delta-FL experiments)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AlwaysAvailable:
    num_clients: int

    def mask(self, seed: int, round_: int) -> np.ndarray:
        return np.ones(self.num_clients, dtype=bool)

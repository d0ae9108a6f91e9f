"""FedLaAvg's diurnal two-group availability (Yan et al., arXiv 2002.07399 v1, section 5.1 and Figure 1).

Clients are split into two groups. Group 0 is available for P rounds, then group 1 for int(beta P)
rounds, and the pattern repeats: in round r, with period = P + int(beta P), group 0 is available when
r mod period < P and group 1 otherwise. Exactly one group is available in every round. This is the authors'
train/prepare_clients.py, diurnal_available (their `E` is P, their `alpha` is beta).

In the paper's CIFAR-10 setup group 0 is the clients holding classes 0-4 and group 1 those holding classes
5-9; :func:`majority_label_groups` generalises this to any dataset: group 0 are the clients whose most
frequent training label is in the first half of the classes (label < num_classes // 2).

Deviation: int(beta P) = 0 (e.g. beta = 0.5 with P = 1, the caveat in the setups file) would leave
group 1 never available, silently in the authors' code; here it is an error. Note that int() truncates:
int(0.29 * 100) = 28, exactly as in the authors' code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from fedbench.data.format import FederatedDataset


def off_rounds(period: int, beta: float) -> int:
    """int(beta P): the rounds group 1 is available in each period (the authors' E1 = int(alpha * E))."""
    return int(beta * period)


def check_diurnal(period: int, beta: float) -> None:
    if period < 1:
        raise ValueError(f"diurnal availability: period P={period} must be >= 1")
    if beta <= 0 or off_rounds(period, beta) < 1:
        raise ValueError(f"diurnal availability: int(beta * P) = int({beta} * {period}) = {off_rounds(period, beta)}, "
                         "so group 1 would never be available; choose beta * P >= 1")


@dataclass(frozen=True, eq=False)
class DiurnalAvailability:
    groups: np.ndarray = field(repr=False)  # [N] 0 or 1
    period: int  # P: rounds group 0 is available in each period
    beta: float  # group 1 is then available for int(beta * P) rounds

    def __post_init__(self) -> None:
        groups = np.asarray(self.groups)
        if groups.ndim != 1 or not np.all((groups == 0) | (groups == 1)):
            raise ValueError("diurnal availability: groups must be a 1-D array of 0s and 1s, one per client")
        check_diurnal(self.period, self.beta)
        object.__setattr__(self, "groups", groups.astype(np.int64))

    @property
    def num_clients(self) -> int:
        return len(self.groups)

    def group_available(self, round_: int) -> int:
        """The group available in ``round_`` (0 or 1)."""
        return 0 if round_ % (self.period + off_rounds(self.period, self.beta)) < self.period else 1

    def mask(self, seed: int, round_: int) -> np.ndarray:
        return self.groups == self.group_available(round_)


def majority_label_groups(dataset: FederatedDataset) -> np.ndarray:
    """Group 0 for clients whose most frequent training label is < num_classes // 2, else group 1 (ties go
    to the smaller label; a client without training data is in group 0)."""
    out = np.zeros(dataset.num_clients, dtype=np.int64)
    half = dataset.num_classes // 2
    for k in range(dataset.num_clients):
        _, y = dataset.train.client(k)
        if len(y):
            out[k] = int(np.bincount(y, minlength=dataset.num_classes).argmax() >= half)
    return out

"""The five dataset-model pairs of Delta-FL's Tables 2 and 3 (fedbench.studies.delta_fl_real), each with the paper's
settings (rounds, cohort, step size, batch, the authors' evaluation cadence) and the estimates its cost projection
uses. Kept apart from the study module (declaration, runs, claims, figure) for its size; it imports nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    """One dataset-model pair of Tables 2 and 3 with its paper settings. ``client_samples`` and ``eval_samples``
    (the mean training samples of a device and the samples the engine evaluates every round) are for the cost
    projection only: estimates from the paper's Table 1 and LEAF's totals."""

    key: str
    label: str
    variant: str
    model: str
    rounds: int
    clients_per_round: int
    lr: float
    batch_size: int
    subsample: bool  # EMNIST: the authors keep int(0.5 n) train and as many test users per run seed
    client_samples: float
    eval_samples: int
    eval_every: int  # the authors' scripts' eval_every (simplicial-fl models/scripts/exp/*)
    schedule_note: str = ""


PAIRS = (
    Pair("emnist_linear", "EMNIST linear", "femnist_deltafl", "deltafl_emnist_linear", 3000, 100, 1.0, 10, True,
         227, 196_000, 50),
    Pair("emnist_cnn", "EMNIST ConvNet", "femnist_deltafl", "deltafl_emnist_cnn", 1000, 100, 0.32, 16, True,
         227, 196_000, 10, "the paper halves it every 400 rounds"),
    Pair("sent140_linear", "Sent140 linear", "sent140_deltafl_linear", "deltafl_sent140_linear", 2000, 100, 0.01, 10,
         False, 80, 70_000, 20),
    Pair("sent140_rnn", "Sent140 RNN", "sent140_deltafl", "deltafl_sent140_lstm", 600, 50, 2.0, 10, False, 80,
         70_000, 25, "the paper halves it every 200 rounds"),
    Pair("shakespeare_rnn", "Shakespeare RNN", "shakespeare_deltafl", "deltafl_shakespeare_gru", 400, 100, 0.1, 16,
         False, 3_870, 4_200_000, 10, "the paper halves it every 200 rounds"),
)


def pair(key: str) -> Pair:
    by_key = {p.key: p for p in PAIRS}
    if key not in by_key:
        raise ValueError(f"pair {key!r}; allowed: {', '.join(by_key)}")
    return by_key[key]

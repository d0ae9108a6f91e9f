"""Which clients can be selected in a round: availability models, one per file.

A model is a frozen object with ``num_clients`` and ``mask(seed, round_) -> np.ndarray`` (bool [N], True for
the clients available in that round). Random models draw from the fedbench.seeding stream
(seed, round, 'availability'), so every algorithm run with one seed sees the same availability and any
round replays on its own. The engine selects only among available clients, K = min(K, #available), and
draws stragglers among the selected clients afterwards, so stragglers combine with any model here.

``AvailabilityConfig`` is the config-as-data form (``SimulationConfig.availability``); every field is used by
one model only, named in its comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.availability.always import AlwaysAvailable
from fedbench.availability.diurnal import DiurnalAvailability, check_diurnal, majority_label_groups
from fedbench.availability.dropout import RandomDropout
from fedbench.availability.trace import TraceAvailability
from fedbench.data.format import FederatedDataset

AVAILABILITY_MODELS = ("always", "diurnal", "dropout", "trace")

__all__ = ["AVAILABILITY_MODELS", "AlwaysAvailable", "AvailabilityConfig", "DiurnalAvailability", "RandomDropout",
           "TraceAvailability", "build_availability", "majority_label_groups"]


@dataclass(frozen=True)
class AvailabilityConfig:
    model: str = "always"  # always | diurnal | dropout | trace
    period: int = 10  # diurnal: P, rounds group 0 is available in each period (FedLaAvg code default E=10)
    beta: float = 0.5  # diurnal: group 1 is then available for int(beta * P) rounds (FedLaAvg code default)
    groups: tuple[int, ...] = ()  # diurnal: group (0 or 1) of each client; () = by majority training label
    probability: float = 1.0  # dropout: q, each client available with probability q in each round
    trace: str = ""  # trace: CSV file with client_id, available_from, available_to (rounds, inclusive)

    def __post_init__(self) -> None:
        if self.model not in AVAILABILITY_MODELS:
            raise ValueError(f"availability.model: {self.model!r} is not allowed; allowed: {', '.join(AVAILABILITY_MODELS)}")
        if self.model == "diurnal":
            check_diurnal(self.period, self.beta)
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"availability.probability: {self.probability} must be in [0, 1]")
        if self.model == "trace" and not self.trace:
            raise ValueError("availability.trace: model 'trace' needs the path of a CSV trace file")


def build_availability(cfg: AvailabilityConfig, dataset: FederatedDataset):
    """The availability model ``cfg`` describes, for the clients of ``dataset``."""
    n = dataset.num_clients
    if cfg.model == "always":
        return AlwaysAvailable(n)
    if cfg.model == "diurnal":
        if cfg.groups and len(cfg.groups) != n:
            raise ValueError(f"availability.groups: {len(cfg.groups)} groups given for {n} clients")
        groups = list(cfg.groups) if cfg.groups else majority_label_groups(dataset)
        return DiurnalAvailability(groups=groups, period=cfg.period, beta=cfg.beta)
    if cfg.model == "dropout":
        return RandomDropout(n, cfg.probability)
    if cfg.model == "trace":
        return TraceAvailability.from_csv(cfg.trace, dataset.client_ids)
    raise ValueError(f"unknown availability model {cfg.model!r}")  # pragma: no cover (checked in the config)

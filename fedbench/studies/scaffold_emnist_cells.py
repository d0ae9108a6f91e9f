"""The cells of SCAFFOLD's EMNIST tables (fedbench.studies.scaffold_emnist: Tables 3, 4 and 5 and the slides'
client-count figure): the study's settings, fixed before any run, and :class:`Cell`, one algorithm in one cell of a
table (its clients, model and data variant), with :func:`cells`, every cell the study runs. Kept apart from the
study module (declaration, runs, claims, figure) for its size; it imports nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.studies.scaffold_tables import SAMPLED, SGD_EPOCHS

# Every setting of the study, fixed before any run.
PAPER_ROUNDS = 1000
EPOCHS = (1, 5, 10, 20)  # Table 3's local epochs
TABLE4_SAMPLED = (0.20, 0.05, 0.01)
TABLE4_EPOCHS = TABLE5_EPOCHS = 5
TABLE3_SIMILARITY = (0, 10, 100)  # 100% is run and reported, not judged (the claim is about 0% and 10%)
JUDGED_SIMILARITY = (0, 10)
CLIENT_FIGURE = {"scaffold": 5, "fedavg": 50}  # the slides' client-count figure: clients sampled of 400, 1 epoch
CLIENT_FIGURE_EPOCHS = 1
TARGET_T3, TARGET_T4 = 0.5, 0.45  # test accuracy targets of Tables 3 and 4 (and the client-count figure)
FEDPROX_MU = 1.0
EMNIST_TRAIN, EMNIST_TEST = 112800, 18800
LABELS = {"scaffold": "SCAFFOLD", "fedavg": "FedAvg", "fedprox": "FedProx (mu=1)", "sgd": "SGD (large batch)"}


def variant(clients: int, similarity: int) -> str:
    return f"emnist_scaffold_n{clients}_s{similarity}"


@dataclass(frozen=True)
class Cell:
    """One algorithm in one cell of a table: the runs that differ only in step size and seed."""

    table: int  # 3, 4 or 5; 6: the slides' client-count figure
    method: str  # an arm of DECLARATION
    epochs: int
    similarity: int
    sampled: float = SAMPLED

    @property
    def clients(self) -> int:
        return 400 if self.table in (4, 6) else 100

    @property
    def model(self) -> str:
        return "scaffold_mlp" if self.table == 5 else "mclr"

    @property
    def variant(self) -> str:
        return variant(self.clients, self.similarity)

    def label(self) -> str:
        return (f"table{self.table}/{self.method}/E={self.epochs}/s={self.similarity}"
                + (f"/sampled={100 * self.sampled:g}%" if self.table in (4, 6) else ""))


def cells() -> list[Cell]:
    """Every cell of Tables 3, 4 and 5 the study runs."""
    out = [Cell(3, m, e, s) for s in TABLE3_SIMILARITY for m in ("scaffold", "fedavg", "fedprox") for e in EPOCHS]
    out += [Cell(3, "sgd", SGD_EPOCHS, s) for s in TABLE3_SIMILARITY]
    out += [Cell(4, m, TABLE4_EPOCHS, s, f) for s in JUDGED_SIMILARITY for f in TABLE4_SAMPLED for m in ("scaffold", "fedavg")]
    out += [Cell(5, m, TABLE5_EPOCHS, s) for s in JUDGED_SIMILARITY for m in ("scaffold", "fedavg")]
    out += [Cell(5, "sgd", SGD_EPOCHS, s) for s in JUDGED_SIMILARITY]
    out += [client_cell(m) for m in CLIENT_FIGURE]
    return out


def client_cell(method: str) -> Cell:
    """A cell of the slides' client-count figure: ``method`` sampling CLIENT_FIGURE[method] of the 400 clients."""
    return Cell(6, method, CLIENT_FIGURE_EPOCHS, 0, CLIENT_FIGURE[method] / 400)

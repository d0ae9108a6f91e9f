"""The cells of SCAFFOLD's EMNIST tables (fedbench.studies.scaffold_emnist: Tables 3, 4 and 5 and the slides'
client-count figure): the study's settings, fixed before any run, and :func:`cells`, every cell the study runs (one
algorithm in one cell of a table: fedbench.studies.scaffold_tables.Cell). Kept apart from the study module
(declaration, entries' texts) for its size; it imports nothing of it.
"""

from __future__ import annotations

from fedbench.studies.scaffold_tables import SGD_EPOCHS, Cell

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


def cells() -> list[Cell]:
    """Every cell of Tables 3, 4 and 5 and of the client-count figure the study runs, in the order they run."""
    out = [Cell("emnist", 3, m, e, s) for s in TABLE3_SIMILARITY for m in ("scaffold", "fedavg", "fedprox")
           for e in EPOCHS]
    out += [Cell("emnist", 3, "sgd", SGD_EPOCHS, s) for s in TABLE3_SIMILARITY]
    out += [Cell("emnist", 4, m, TABLE4_EPOCHS, s, f) for s in JUDGED_SIMILARITY for f in TABLE4_SAMPLED
            for m in ("scaffold", "fedavg")]
    out += [Cell("emnist", 5, m, TABLE5_EPOCHS, s) for s in JUDGED_SIMILARITY for m in ("scaffold", "fedavg")]
    out += [Cell("emnist", 5, "sgd", SGD_EPOCHS, s) for s in JUDGED_SIMILARITY]
    out += [client_cell(m) for m in CLIENT_FIGURE]
    return out


def client_cell(method: str) -> Cell:
    """A cell of the slides' client-count figure: ``method`` sampling CLIENT_FIGURE[method] of the 400 clients."""
    return Cell("emnist", 6, method, CLIENT_FIGURE_EPOCHS, 0, CLIENT_FIGURE[method] / 400)

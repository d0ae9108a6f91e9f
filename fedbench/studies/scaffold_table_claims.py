"""How SCAFFOLD's Table 3-5 studies (fedbench.studies.scaffold_emnist and its stand-in scaffold_fashion) judge and
report their tables, once for both: the verdict that SCAFFOLD needs fewer rounds than a comparator (:func:`rounds_gap`,
Tables 3 and 4 and the slides' client-count figure), Table 5's accuracy verdict (:func:`table5_result`), the tables
of rounds an entry reports (:func:`rounds_table`), the deviations both list and the judged entry with each cell's
step selection (:func:`table_entry`). The setup and the runs: fedbench.studies.scaffold_tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fedbench.claims.verdict import Rule
from fedbench.studies.scaffold_tables import ACCURACY_READINGS, ROUNDS_READINGS, Runs, mean
from fedbench.study.declaration import StudyDeclaration

# The rules both studies' claims declare for their parts (their DECLARATIONs) and judge them by: a comparator's rounds
# to the target minus SCAFFOLD's (Tables 3 and 4, the client-count figure), SCAFFOLD's best accuracy minus a
# comparator's (Table 5)
ROUNDS_RULE = Rule("greater", 0.0, "rounds")
ACCURACY_RULE = Rule("greater", 0.0, "accuracy points")


def rounds_gap(runs: Runs, pairs: Sequence[tuple[str, Any, Any]], target: float, **judge_args: Any) -> dict[str, Any]:
    """The verdict (fedbench.claims.verdict.judge) that SCAFFOLD needs fewer rounds: per part ``(label, cell,
    comparator)`` and judged seed, the comparator cell's rounds to ``target`` minus the (SCAFFOLD) cell's, each at its
    selected step, greater than 0 (:data:`ROUNDS_RULE`); "first" (primary) and "held" readings."""
    from fedbench.claims.verdict import Part, judge

    def measure(reading: str, fraction: float) -> list[list[float]]:
        return [[a - b for a, b in zip(runs.reached(other, target, reading, fraction),
                                       runs.reached(mine, target, reading, fraction))] for _, mine, other in pairs]

    return judge([Part(label, ROUNDS_RULE) for label, _, _ in pairs], measure, "first",
                 tuple(ROUNDS_READINGS), reading_names=ROUNDS_READINGS, **judge_args)


def table3_result(runs: Runs, rows: Sequence[tuple[int, int, str]], target: float, labels: dict[str, str],
                  cell: Callable[[str, int, int], Any], **judge_args: Any) -> dict[str, Any]:
    """Table 3's verdict (:func:`rounds_gap`): per row (similarity, epochs, comparator), the comparator's rounds to
    ``target`` minus SCAFFOLD's, each cell ``cell(method, epochs, similarity)``."""
    return rounds_gap(runs, [(f"{s}% similarity, {e} epochs: {labels[comp]} - SCAFFOLD", cell("scaffold", e, s),
                              cell(comp, e, s)) for s, e, comp in rows], target, **judge_args)


def rounds_table(runs: Runs, cells: Sequence[Any], target: float,
                 key: Callable[[Any], tuple] | None = None) -> dict[tuple, dict[str, Any]]:
    """Each cell's selected step, per-seed rounds to ``target`` ("first") and their mean, by ``key(cell)`` (default
    (method, epochs, similarity))."""
    out = {}
    for c in cells:
        lr, r = runs.tuned_rounds(c, target, "first", 1.0)
        out[key(c) if key else (c.method, c.epochs, c.similarity)] = {"lr": lr, "per_seed": r, "mean": mean(r)}
    return out


def table_json(table: dict[tuple, dict[str, Any]]) -> dict[str, Any]:
    """:func:`rounds_table` with its keys joined into strings, for an entry."""
    return {", ".join(str(x) for x in k): v for k, v in table.items()}


def table5_result(runs: Runs, similarities: Sequence[int], labels: dict[str, str], cell: Callable[[str, int], Any],
                  **judge_args: Any) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Table 5's verdict, reproduced cells and observation (without the paper's numbers): per judged seed and
    similarity, SCAFFOLD's best test accuracy minus FedAvg's and SGD's, in points, each cell (``cell(method,
    similarity)``) at its selected step, greater than 0 (:data:`ACCURACY_RULE`); "best" (primary) and "tail" readings."""
    from fedbench.claims.verdict import Part, judge

    rows = [(s, comp) for s in similarities for comp in ("fedavg", "sgd")]
    parts = [Part(f"{s}% similarity: SCAFFOLD - {labels[comp]}", ACCURACY_RULE) for s, comp in rows]

    def measure(reading: str, fraction: float) -> list[list[float]]:
        return [[100 * (a - b) for a, b in zip(runs.accuracy(cell("scaffold", s), reading, fraction),
                                               runs.accuracy(cell(comp, s), reading, fraction))]
                for s, comp in rows]

    result = judge(parts, measure, "best", tuple(ACCURACY_READINGS), reading_names=ACCURACY_READINGS, **judge_args)
    table = {}
    for s in similarities:
        for m in ("sgd", "fedavg", "scaffold"):
            lr, acc = runs.tuned_accuracy(cell(m, s), "best", 1.0)
            table[f"{m}, {s}% similarity"] = {"lr": lr, "per_seed": [round(a, 4) for a in acc],
                                              "mean": round(mean(acc), 4)}
    observed = ("mean best test accuracy (selected step), SGD / FedAvg / SCAFFOLD: " + "; ".join(
        f"{s}%: " + " / ".join(f"{table[f'{m}, {s}% similarity']['mean']:.3f}" for m in ("sgd", "fedavg", "scaffold"))
        for s in similarities))
    return result, {"unit": "best test accuracy over the rounds run", "cells": table}, observed


# deviations both studies list
SGD_DEVIATION = ("SGD is large-batch minibatch SGD: each sampled client's full local gradient (one epoch of its 5 "
                 "minibatch gradients, all at the server model), one server step per round")
SPLIT_DEVIATION = "the similarity split is one reading of the paper's sentence (fedbench.data.partition.similarity)"
WIDTH_DEVIATION = "2-layer network width 256 (not given in the paper; fedbench.models.scaffold_mlp)"
FLOAT_DEVIATION = "float32 on the GPU when there is one; PyTorch's default initialisation from our seeded generator"


def table_entry(d: StudyDeclaration, claim_id: str, runs: Runs, result: dict[str, Any], reproduced: dict[str, Any],
                observed: str, panel: str, scale: dict[str, Any], deviations: list[str], cells: Sequence[Any],
                fidelity: str | None = None) -> dict[str, Any]:
    """Claim ``claim_id``'s judged entry (``result``: fedbench.claims.verdict.judge) at the runs' budget: its
    ``reproduced`` cells (each with its selected "lr"), the selection of each cell it reads (``cells``: the step,
    the grid, the per-seed tuning readings, why), the cells whose choice stayed at an end of its grid listed and
    said in ``observed`` with the grids widened; data seed 0; ``fidelity`` the claim's unless given."""
    from fedbench.claims.entry import judged

    b = runs.budget
    sel = {c.label(): runs.selections[c] for c in cells}
    edge = [name for name, s in sel.items() if not s.interior]
    widened = [f"{name} to {', '.join(f'{x:g}' for x in s.added)}" for name, s in sel.items() if s.added]
    reproduced = reproduced | {"selected_at_grid_edge": edge, "selection": {k: s.record() for k, s in sel.items()}}
    observed += ((f". Grid {', '.join(f'{x:g}' for x in b.lr_grid)} widened for {len(widened)} of {len(sel)} cells "
                  f"({'; '.join(widened)})" if widened else "")
                 + f". Selected step still at an end of its grid in {len(edge)} of {len(sel)} cells"
                 + (f" ({'; '.join(edge)}): a wider grid could change those cells" if edge else ""))
    e = d.entry(claim_id, scale=scale, deviations=deviations,
                figure={"path": f"figures/{d.name}/{d.name}.png", "panel": panel}, rounds_run=b.rounds,
                training_seeds=list(b.seeds), data_seeds=[0], observed=observed, reproduced=reproduced,
                **({"fidelity": fidelity} if fidelity is not None else {}))
    return judged(e, result)

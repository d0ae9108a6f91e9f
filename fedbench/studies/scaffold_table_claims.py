"""How SCAFFOLD's Table 3-5 studies (fedbench.studies.scaffold_emnist and its stand-in scaffold_fashion) measure and
report their tables, once for both (:func:`measure`, the hook a study binds to its
fedbench.studies.scaffold_tables.TableStudy): that SCAFFOLD needs fewer rounds than a comparator (:func:`rounds_gap`,
Tables 3 and 4 and the slides' client-count figure), Table 5's accuracy gaps (:func:`table5`), the tables of rounds
an entry reports (:func:`rounds_table`), the deviations both list and each entry's fields with each cell's step
selection (:func:`entry`). The setup and the runs: fedbench.studies.scaffold_tables.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fedbench.claims.verdict import Part, Rule
from fedbench.studies.scaffold_tables import ACCURACY_READINGS, ROUNDS_READINGS, Runs, fmt_rounds, mean
from fedbench.study.contract import Measurement

if TYPE_CHECKING:
    from fedbench.studies.scaffold_tables import Budget, Cell, TableStudy
    from fedbench.study.contract import StudyRun
    from fedbench.study.declaration import Claim, StudyDeclaration

# The rules both studies' claims declare for their parts (their DECLARATIONs): a comparator's rounds to the target
# minus SCAFFOLD's (Tables 3 and 4, the client-count figure), SCAFFOLD's best accuracy minus a comparator's (Table 5)
ROUNDS_RULE = Rule("greater", 0.0, "rounds")
ACCURACY_RULE = Rule("greater", 0.0, "accuracy points")


def measure(study: TableStudy, claim: Claim, run: StudyRun, runs: Runs | None = None) -> Measurement:
    """A table study's measure hook (a study binds it to its TableStudy): claim ``claim``'s measurement from the
    judged ``runs`` (default: the run's), or why it is not run where the budget leaves its table out."""
    if not run.budget.runs_table(study.claims[claim.id]):
        return not_run(study, claim, run.declaration, run.budget)
    return measurement(study, claim, run.declaration, runs or study.runs(run))


def not_run(study: TableStudy, claim: Claim, d: StudyDeclaration, b: Budget) -> Measurement:
    """Claim ``claim`` not run at budget ``b``, which leaves its table out: why, and what runs it."""
    why, what = study.not_run
    return Measurement(not_run=(why, what.format(rounds=b.rounds)), entry={
        "scale": {"study": d.name, "variants": list(d.variants), "rounds": b.rounds},
        "deviations": study.deviations(b), "figure": None, "rounds_run": None, "training_seeds": list(b.seeds),
        "data_seeds": [0], "fidelity": claim.fidelity})


def measurement(study: TableStudy, claim: Claim, d: StudyDeclaration, runs: Runs) -> Measurement:
    """Claim ``claim``'s measurement from the judged ``runs``, by the table it reads (``study.claims``)."""
    b, table = runs.budget, study.claims[claim.id]
    cells = [c for c in study.cells if c.table == table]
    target = study.targets.get(table)
    paper_budget = claim.rounds_paper / b.rounds if study.budget_rule else 1.0
    unit = {"unit": f"rounds to {target} test accuracy (never: rounds run)"}
    if table == 3:
        comparators = [a.name for a in d.arms if a.name != "scaffold"]
        pairs = [(f"{s}% similarity, {e} epochs: {study.labels[m]} - SCAFFOLD", study.cell(3, "scaffold", s, e),
                  study.cell(3, m, s, e))
                 for s in study.judged_similarity for e in d.knobs["epochs"] for m in comparators]
        rounds = rounds_table(runs, cells, target)
        observed = f"mean rounds to {target} (selected step): " + "; ".join(f"{s}%: " + ", ".join(
            f"{study.labels[m]}{'' if m == 'sgd' else f' E={e}'} {fmt_rounds(v['mean'], b.rounds, study.decimals)}"
            for (m, e, ss), v in rounds.items() if ss == s) for s in d.knobs["similarity"])
        gap, reproduced = rounds_gap(claim, runs, pairs, target, paper_budget), unit | {"cells": table_json(rounds)}
    elif table == 4:
        rows = [(s, f) for s in study.judged_similarity for f in d.knobs["table4_sampled"]]
        pairs = [(f"{s}% similarity, {100 * f:g}% sampled: FedAvg - SCAFFOLD", study.cell(4, "scaffold", s, sampled=f),
                  study.cell(4, "fedavg", s, sampled=f)) for s, f in rows]
        rounds = rounds_table(runs, cells, target, key=lambda c: (c.method, c.sampled, c.similarity))
        observed = f"mean rounds to {target} (selected step), SCAFFOLD vs FedAvg: " + "; ".join(
            f"{s}%, {100 * f:g}% sampled: {fmt_rounds(rounds[('scaffold', f, s)]['mean'], b.rounds)} vs "
            f"{fmt_rounds(rounds[('fedavg', f, s)]['mean'], b.rounds)}" for s, f in rows)
        gap, reproduced = rounds_gap(claim, runs, pairs, target, paper_budget), unit | {"cells": table_json(rounds)}
    elif table == 5:
        gap, reproduced, observed = table5(claim, runs, study.judged_similarity, study.labels,
                                         lambda m, s: study.cell(5, m, s), paper_budget)
    else:  # the slides' client-count figure: SCAFFOLD sampling a few clients against FedAvg sampling many
        clients = {c.method: round(c.sampled * c.clients) for c in cells}
        mine, other = (next(c for c in cells if c.method == m) for m in ("scaffold", "fedavg"))
        pairs = [(f"FedAvg ({clients['fedavg']} clients) - SCAFFOLD ({clients['scaffold']} clients)", mine, other)]
        rounds = rounds_table(runs, cells, target, key=lambda c: (c.method, round(c.sampled * c.clients)))
        observed = (f"mean rounds to {target} (selected step), {mine.clients} clients, {mine.epochs} epoch, "
                    f"{mine.similarity}% similarity: " + ", ".join(
                        f"{study.labels[m]} with {k} clients {fmt_rounds(rounds[(m, k)]['mean'], b.rounds)}"
                        for m, k in clients.items()))
        gap, reproduced = rounds_gap(claim, runs, pairs, target, paper_budget), unit | {"cells": table_json(rounds)}
    observed += study.observed.get(table, "").format(rounds=b.rounds)
    return dataclasses.replace(gap, entry=entry(study, claim, d, runs, reproduced, observed, table, cells))


def rounds_gap(claim: Claim, runs: Runs, pairs: Sequence[tuple[str, Any, Any]], target: float,
               paper_budget: float = 1.0) -> Measurement:
    """That SCAFFOLD needs fewer rounds: per part ``(label, cell, comparator)`` and judged seed, the comparator
    cell's rounds to ``target`` minus the (SCAFFOLD) cell's, each at its selected step, judged by the claim's rule
    (:data:`ROUNDS_RULE`); "first" (primary) and "held" readings."""
    def values(reading: str, fraction: float) -> list[list[float]]:
        return [[a - b for a, b in zip(runs.reached(other, target, reading, fraction),
                                       runs.reached(mine, target, reading, fraction))] for _, mine, other in pairs]

    return Measurement([Part(label, claim.rule_for()) for label, _, _ in pairs], values, "first",
                       tuple(ROUNDS_READINGS), paper_budget=paper_budget, reading_names=ROUNDS_READINGS)


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


def table5(claim: Claim, runs: Runs, similarities: Sequence[int], labels: dict[str, str],
           cell: Callable[[str, int], Any], paper_budget: float = 1.0) -> tuple[Measurement, dict[str, Any], str]:
    """Table 5's measurement, reproduced cells and observation (without the paper's numbers): per judged seed and
    similarity, SCAFFOLD's best test accuracy minus FedAvg's and SGD's, in points, each cell (``cell(method,
    similarity)``) at its selected step, judged by the claim's rule (:data:`ACCURACY_RULE`); "best" (primary) and
    "tail" readings."""
    rows = [(s, comp) for s in similarities for comp in ("fedavg", "sgd")]

    def values(reading: str, fraction: float) -> list[list[float]]:
        return [[100 * (a - b) for a, b in zip(runs.accuracy(cell("scaffold", s), reading, fraction),
                                               runs.accuracy(cell(comp, s), reading, fraction))]
                for s, comp in rows]

    gap = Measurement([Part(f"{s}% similarity: SCAFFOLD - {labels[comp]}", claim.rule_for()) for s, comp in rows],
                      values, "best", tuple(ACCURACY_READINGS), paper_budget=paper_budget,
                      reading_names=ACCURACY_READINGS)
    table = {}
    for s in similarities:
        for method in ("sgd", "fedavg", "scaffold"):
            lr, acc = runs.tuned_accuracy(cell(method, s), "best", 1.0)
            table[f"{method}, {s}% similarity"] = {"lr": lr, "per_seed": [round(a, 4) for a in acc],
                                                   "mean": round(mean(acc), 4)}
    observed = ("mean best test accuracy (selected step), SGD / FedAvg / SCAFFOLD: " + "; ".join(
        f"{s}%: " + " / ".join(f"{table[f'{m}, {s}% similarity']['mean']:.3f}" for m in ("sgd", "fedavg", "scaffold"))
        for s in similarities))
    return gap, {"unit": "best test accuracy over the rounds run", "cells": table}, observed


# deviations both studies list
SGD_DEVIATION = ("SGD is large-batch minibatch SGD: each sampled client's full local gradient (one epoch of its 5 "
                 "minibatch gradients, all at the server model), one server step per round")
SPLIT_DEVIATION = "the similarity split is one reading of the paper's sentence (fedbench.data.partition.similarity)"
WIDTH_DEVIATION = "2-layer network width 256 (not given in the paper; fedbench.models.scaffold_mlp)"
FLOAT_DEVIATION = "float32 on the GPU when there is one; PyTorch's default initialisation from our seeded generator"


def entry(study: TableStudy, claim: Claim, d: StudyDeclaration, runs: Runs, reproduced: dict[str, Any],
          observed: str, table: int, cells: Sequence[Cell]) -> dict[str, Any]:
    """The fields of claim ``claim``'s entry at the runs' budget: its ``reproduced`` cells (each with its selected
    "lr"), the selection of each cell it reads (``cells``: the step, the grid, the per-seed tuning readings, why),
    the cells whose choice stayed at an end of its grid listed and said in ``observed`` with the grids widened;
    data seed 0; the study's scale, deviations and fidelity at the budget, and its figure's panel for ``table``."""
    b = runs.budget
    sel = {c.label(): runs.selections[c] for c in cells}
    edge = [name for name, s in sel.items() if not s.interior]
    widened = [f"{name} to {', '.join(f'{x:g}' for x in s.added)}" for name, s in sel.items() if s.added]
    reproduced = reproduced | {"selected_at_grid_edge": edge, "selection": {k: s.record() for k, s in sel.items()}}
    observed += ((f". Grid {', '.join(f'{x:g}' for x in b.lr_grid)} widened for {len(widened)} of {len(sel)} cells "
                  f"({'; '.join(widened)})" if widened else "")
                 + f". Selected step still at an end of its grid in {len(edge)} of {len(sel)} cells"
                 + (f" ({'; '.join(edge)}): a wider grid could change those cells" if edge else ""))
    return {"scale": study.scale(b), "deviations": study.deviations(b),
            "figure": {"path": f"figures/{d.name}/{d.name}.png", "panel": study.panels[table].format(seed=b.seeds[0])},
            "rounds_run": b.rounds, "training_seeds": list(b.seeds), "data_seeds": [0], "observed": observed,
            "reproduced": reproduced, "fidelity": study.fidelity(claim, b)}

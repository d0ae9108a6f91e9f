"""SCAFFOLD on EMNIST (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, ICML 2020, section 7.1, Tables 3, 4 and 5,
and the talk slides' "Effect of number of clients"): the paper-scale study of its four real-data claims.

Setting (section 7.1 via real-data.md section 5 and paper-setups.md section 2.2), fixed before any run:
- Data: EMNIST balanced (47 classes, 112,800 training images; the 18,800 test images are the global test set),
  split by the s%-similarity partitioner (fedbench.data.partition.similarity: s% i.i.d., the rest sorted by
  label) over N = 100 clients (Tables 3 and 5: s = 0, 10, 100) or N = 400 (Table 4: s = 0, 10).
- Local work: "1 epoch for local update methods corresponds to 5 local steps (0.2 batch size)". A client's
  batch is B = ceil(n_k / 5) (226 of 1,128 images at N = 100, 57 of 282 at N = 400), so that one epoch is
  exactly 5 steps over one fresh permutation (the last batch 2 or 3 images short); E epochs are 5 E steps
  (the engine's ``local_steps``). Every client does the same work: the clients are equal-sized.
- 20% of the clients per round (Table 4: 20%, 5%, 1% of 400 = 80, 20, 4); eta_g = 1; SCAFFOLD option II with
  c and c_i started at zero (section 4); FedProx mu = 1; 1,000 rounds; test accuracy on the global test set
  after every round. The clients are equal-sized (1,128 or 282 images), so FedAvg's n_k-weighted average and
  SCAFFOLD's simple mean coincide (on the fixture's unequal clients they differ slightly).
- Evaluation (DECLARATION.evaluation, fedbench.studies.scaffold_tables.EVALUATION): the paper does not state its protocol. Ours, fixed before any run: the global
  model's accuracy on EMNIST's 18,800 test images (the variants' global test set, which the engine evaluates
  itself) after every round (rounds-to-target is read to the round, as Tables 3 and 4 report it) and on the
  final model; no training-loss evaluation (no claim reads one; divergence is caught from the cohort's own
  losses, fedbench.engine.evaluation) and no per-device metric (no client holds test images). Listed among
  the deviations.
- "SGD" is large-batch minibatch SGD (fedbench.algorithms.minibatch_sgd), the paper's server-only baseline
  (section 2, Table 1: "compute a large batch stochastic gradient and average them"): each sampled client
  averages the gradients of its 5 minibatches of one epoch, all at the server model (its full local
  gradient), and the server takes one step. Table 3's row is "SGD (1 epoch)"; more epochs at the same point
  give the same full gradient, so SGD runs at 1 epoch everywhere. Sequential SGD (FedLaAvg's centralised
  baseline: K C steps on pooled data each round) is not what the paper compares with: it moves the model
  many times a round and uses no client sampling.
- The paper tunes eta_l "individually for each algorithm" and gives no grid. Ours, stated up front and applied
  identically to every algorithm (SGD: its server step): the paper budget's grid (DECLARATION.knobs["lr"]),
  five steps a factor ~3 apart over two decades. Selection, per algorithm and table cell (epochs, similarity,
  sampling), on the tuning seeds (100, 101, 102; knobs["tuning_seeds"]), disjoint from the judged seeds (0-4;
  DECLARATION.seeds) and the confirm seeds (1000 up), so the selection does not bias the intervals (as
  scaffold_fashion's stand-in does), by fedbench.studies.scaffold_tables.select_steps: Tables 3 and 4 and the
  client-count figure by rounds-to-target (the first evaluation at the target, over the whole round budget; a
  cell none of whose tuning runs reaches it, by its best accuracy), Table 5 by the best accuracy; the best mean
  wins only by more than the spread between the tuning seeds, else the smallest step tied with it (issue 32); a
  choice at an end of the grid widens it (at most 2 steps a side) until it is interior, or the entry lists the
  cell (``selected_at_grid_edge``). The judged seeds run each cell at its selected step only; every reading and
  budget cut of a claim reads those runs. Rule history: until the study first ran (it has not), the step was
  selected per reading and budget cut on the judged seeds themselves (issue 21); changed before any run, with
  three judged seeds raised to five; then (issue 32, before any run) the best mean with ties to the higher best
  accuracy, without margin or widening, became the rule above.
- The slides' "Effect of number of clients" (400 clients, 47 classes, 1 epoch, similarity 0): "SCAFFOLD with 5
  clients is better than FedAvg with 50!": SCAFFOLD sampling 5 of the 400 clients a round against FedAvg
  sampling 50, both 1 epoch (5 steps), read as Table 4 reads its cells (rounds to 0.45 test accuracy); the
  slide's axis is not in our copy.
- Budgets: a verdict is the one at the rounds run, never extrapolated to the paper's 1,000 rounds (a budget-
  limited mark may explain a verdict, never change it).
- Readings: rounds-to-target is the number of rounds after which the global test accuracy first reaches the
  target (the evaluation after round r; r = 0 is the initial model); a run that never reaches it within the
  R rounds run (or within the budget cut) counts as R (the paper's "1k+" at R = 1,000). The "held" reading
  (sensitivity): the first r from which HOLD = 5 consecutive evaluations all reach the target. Best accuracy is
  the highest test accuracy over the evaluations (Table 5's "best accuracy after 1k rounds"); "tail"
  (sensitivity) the mean of the last 5.
- Test accuracy is on EMNIST's 18,800 test images (the variants' global test set). Until the protocol was
  declared, the study copied them onto the clients' test splits (the engine then evaluated client test data
  only): the same pooled accuracy, a meaningless per-device one.

Unknowns and choices (listed in every entry): the 2-layer network's width (scaffold_mlp: 256 hidden units,
fedbench's choice), the learning-rate grid, the minibatch order (fresh per-epoch permutations from the
(seed, round, client) stream), PyTorch's default initialisation, the similarity split (one reading of one
sentence), and five training seeds where the paper reports one run.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fedbench.claims.papers import SCAFFOLD_PAPER
from fedbench.study.runner import WORKERS
from fedbench.studies import scaffold_table_claims as judging
from fedbench.studies import scaffold_tables as tables
from fedbench.study.declaration import Arm, Claim, StudyDeclaration
from fedbench.studies.real_data import REAL_ROOT
from fedbench.studies.scaffold_emnist_cells import (
    PAPER_ROUNDS, EPOCHS, TABLE4_SAMPLED, TABLE4_EPOCHS, TABLE5_EPOCHS, TABLE3_SIMILARITY, JUDGED_SIMILARITY,
    CLIENT_FIGURE, TARGET_T3, TARGET_T4, FEDPROX_MU, EMNIST_TRAIN, EMNIST_TEST, LABELS, Cell, cells, client_cell)
from fedbench.studies.scaffold_tables import (
    SAMPLED,
    SGD_EPOCHS,
    STEPS_PER_EPOCH,
    Budget,
    Runs,
    fmt_rounds,
    mean,
)

# The scales the study runs at: the paper's (its judged seeds 0-4; the step-size grid, the same for every algorithm,
# SGD: its server step; the tuning seeds, disjoint from the judged ones) and the test suite's.
BUDGETS = {"paper": Budget(PAPER_ROUNDS, (0, 1, 2, 3, 4), (100, 101, 102), (0.01, 0.03, 0.1, 0.3, 1.0), "auto"),
           "fixture": Budget(3, (0, 1), (100, 101), (0.1, 0.3), "cpu")}
_TUNING = BUDGETS["paper"].tuning_seeds


# ------------------------------------------------------------------------------------------------- declaration
DECLARATION = StudyDeclaration(
    name="scaffold_emnist", paper=SCAFFOLD_PAPER,
    dataset="EMNIST balanced (47 classes), s%-similarity split over 100 or 400 equal clients, its 18,800 test "
            "images the global test set",
    variants=("emnist_scaffold_n100_s0", "emnist_scaffold_n100_s10", "emnist_scaffold_n100_s100",
              "emnist_scaffold_n400_s0", "emnist_scaffold_n400_s10"),
    arms=(tables.SCAFFOLD, tables.FEDAVG, Arm("fedprox", "fedprox", {"mu": FEDPROX_MU}), tables.SGD),
    seeds=BUDGETS["paper"].seeds, data_seeds=(), budgets=BUDGETS, evaluation=tables.EVALUATION,
    knobs={"lr": BUDGETS["paper"].lr_grid, "tuning_seeds": BUDGETS["paper"].tuning_seeds, "epochs": EPOCHS,
           "similarity": TABLE3_SIMILARITY, "table4_sampled": TABLE4_SAMPLED},
    scales=tables.paper_scales(cells(), BUDGETS["paper"], EMNIST_TRAIN, EMNIST_TEST),  # the global test set
    claims=(
    Claim(
        id="scaffold/emnist/rounds-to-0.5", where="section 7.1, Table 3",
        claim_text="On EMNIST with logistic regression, SCAFFOLD reaches 0.5 test accuracy in fewer rounds than "
                   "FedAvg, FedProx and SGD at every number of epochs for 0% and 10% similarity.",
        published={"value": None, "unit": "rounds to 0.5 test accuracy",
                   "scope": "EMNIST balanced, 100 clients, 20% sampled",
                   "statement": "0% similarity, 5 epochs: SCAFFOLD 152, FedAvg 428, FedProx 1k+, SGD 317 (1 epoch); "
                                "10%: SCAFFOLD 20, FedAvg 34; full Table 3 in real-data.md section 5"},
        effect="per seed and cell (similarity 0% and 10% x epochs 1, 5, 10, 20), rounds to 0.5 test accuracy of the "
               "comparator minus SCAFFOLD's, each algorithm at its own step size of the grid 0.01-1, "
               + tables.selection_rule(_TUNING, TARGET_T3) + " (disjoint from the judged seeds 0-4); comparators "
               "FedAvg and FedProx at the same epochs and SGD (1 epoch); a run that never gets there within the R "
               "rounds run counts as R (1,000 at the paper budget)",
        rules=(("each of the 24 parts", judging.ROUNDS_RULE),),
        notes="Sharpened before any run: the claim names FedProx and SGD, so they are parts too (the first rule had "
              "FedAvg only)",
        reads=("scaffold", "fedavg", "fedprox", "sgd"), rounds_paper=PAPER_ROUNDS, fidelity="paper-scale",
        note="learning-rate grid (0.01-1, the paper's is not given) tuned per algorithm and cell on seeds 100-102, "
             "judged on 0-4; "
             "batch ceil(n_k/5) so one epoch is 5 steps; SGD is large-batch minibatch SGD (full local gradients, one "
             "server step a round)"),
    Claim(
        id="scaffold/emnist/sampling", where="section 7.1, Table 4",
        claim_text="On EMNIST (400 clients, 5 epochs), SCAFFOLD needs fewer rounds than FedAvg to reach 0.45 accuracy "
                   "at 20%, 5% and 1% of clients sampled.",
        published={"value": None, "unit": "rounds to 0.45 test accuracy", "scope": "EMNIST balanced, 400 clients",
                   "statement": "0% similarity: SCAFFOLD 143/290/790, FedAvg 179/334/1k+; 10%: 9/13/28 vs 12/17/35"},
        effect="per seed and cell (similarity 0% and 10% x 20%, 5%, 1% sampled), rounds to 0.45 test accuracy of "
               "FedAvg minus SCAFFOLD's, each at its own step size of the grid 0.01-1, "
               + tables.selection_rule(_TUNING, TARGET_T4) + " (judged on 0-4); never: R (1,000 at the paper budget)",
        rules=(("each of the 6 parts", judging.ROUNDS_RULE),),
        reads=("scaffold", "fedavg"), rounds_paper=PAPER_ROUNDS, fidelity="paper-scale",
        note="learning-rate grid (0.01-1) tuned per algorithm and cell on seeds 100-102, judged on 0-4; batch "
             "ceil(282/5) = 57 so one epoch is 5 steps"),
    Claim(
        id="scaffold/emnist/two-layer-accuracy", where="section 7.1, Table 5",
        claim_text="On EMNIST with a two-layer network, SCAFFOLD's best accuracy after 1,000 rounds is above FedAvg's "
                   "and SGD's at 0% and 10% similarity.",
        published={"value": 0.801, "unit": "best test accuracy",
                   "scope": "EMNIST balanced, 2-layer FC, 5 epochs, 0% similarity",
                   "statement": "SGD .766/.764, FedAvg .787/.828, SCAFFOLD .801/.842 (0%/10% similarity); hidden "
                                "width not given"},
        effect="per seed, SCAFFOLD's best test accuracy over the rounds run minus the comparator's (points), each at "
               "its own step size of the grid 0.01-1, " + tables.selection_rule(_TUNING, None) + " (judged on 0-4); "
               "comparators FedAvg and SGD, at 0% and 10% similarity",
        rules=(("each of the 4 parts", judging.ACCURACY_RULE),),
        notes="Sharpened before any run: the claim names SGD, so it is a part too (the first rule had FedAvg only)",
        reads=("scaffold", "fedavg", "sgd"), rounds_paper=PAPER_ROUNDS, fidelity="paper-scale",
        note="the 2-layer network's width is not given (fedbench's scaffold_mlp: 784-256-47); learning-rate grid "
             "(0.01-1) tuned per algorithm and similarity on seeds 100-102, judged on 0-4"),
    Claim(
        id="scaffold/emnist/5-clients-beat-fedavg-50", where="talk slides, 'Effect of number of clients'",
        claim_text="On EMNIST (400 clients, 47 classes, 1 epoch per round, similarity 0), SCAFFOLD sampling 5 clients "
                   "a round is better than FedAvg sampling 50.",
        published={"value": None, "unit": "rounds to 0.45 test accuracy",
                   "scope": "EMNIST balanced, 400 clients, similarity 0, 1 epoch",
                   "statement": "'SCAFFOLD with 5 clients is better than FedAvg with 50!' (a plot our copy lacks; no "
                                "numbers)"},
        effect="per seed, rounds to 0.45 test accuracy (Table 4's target at 400 clients; the first evaluation at it) "
               "of FedAvg sampling 50 clients minus that of SCAFFOLD sampling 5, 1 epoch (5 steps), similarity 0, each "
               "at its own step of the grid 0.01-1, " + tables.selection_rule(_TUNING, TARGET_T4) + ", judged on "
               "seeds 0-4; a run that never gets there within the R rounds run counts as R",
        rules=(("", judging.ROUNDS_RULE),),
        notes="Registered before any run",
        reads=("scaffold", "fedavg"), rounds_paper=PAPER_ROUNDS, fidelity="paper-scale",
        note="the slide's axis and round budget are not in our copy: rounds to Table 4's 0.45 within 1,000 rounds; "
             "learning-rate grid (0.01-1) tuned per algorithm on seeds 100-102, judged on 0-4"),
))


# ------------------------------------------------------------------------------------------------------ the runs
def declare(budget: Budget, real_root: Path, steps: dict[Cell, float] | None = None,
            widen: list[tuple[Cell, float]] | None = None) -> list:
    """The tuning runs (``steps`` None; ``widen``: only those of the (cell, step) pairs a widening adds) or the
    judged runs (fedbench.studies.scaffold_tables.simulations). The
    similarities of one (algorithm, epochs, sampling, step) differ only in their data, so they share a stack."""
    def knobs(c: Cell) -> dict[str, Any]:
        return {"table": c.table, "method": c.method, "variant": c.variant, "similarity": c.similarity,
                "sampled": c.sampled, "model": c.model}

    return tables.simulations(DECLARATION, cells(), budget, real_root, 47, knobs, steps, widen)


def target_of(c: Cell) -> float:
    return TARGET_T3 if c.table == 3 else TARGET_T4


def select_target(c: Cell) -> float | None:
    """The target a cell's step is selected by (module docstring); None: Table 5, by its best accuracy."""
    return None if c.table == 5 else target_of(c)


# ----------------------------------------------------------------------------------------------------- judging
def table3_claim(runs: Runs) -> dict[str, Any]:
    rows = [(s, e, comp) for s in JUDGED_SIMILARITY for e in EPOCHS for comp in ("fedavg", "fedprox", "sgd")]
    result = judging.table3_result(runs, rows, TARGET_T3, LABELS,
                                  lambda m, e, s: Cell(3, m, SGD_EPOCHS if m == "sgd" else e, s))
    table = judging.rounds_table(runs, [c for c in cells() if c.table == 3], TARGET_T3)
    observed = ("mean rounds to 0.5 (selected step): " + "; ".join(
        f"{s}%: " + ", ".join(f"{LABELS[m]}{'' if m == 'sgd' else f' E={e}'} {fmt_rounds(v['mean'], runs.budget.rounds)}"
                              for (m, e, ss), v in table.items() if ss == s) for s in TABLE3_SIMILARITY)
        + " (100% similarity reported, not judged)")
    return _entry("scaffold/emnist/rounds-to-0.5", runs, result,
                  {"unit": f"rounds to {TARGET_T3} test accuracy (never: rounds run)", "cells": judging.table_json(table)},
                  observed, f"left: test accuracy, 0% similarity, 5 epochs (seed {runs.budget.seeds[0]}, selected steps)",
                  [c for c in cells() if c.table == 3])


def table4_claim(runs: Runs) -> dict[str, Any]:
    rows = [(s, f) for s in JUDGED_SIMILARITY for f in TABLE4_SAMPLED]
    result = judging.rounds_gap(runs, [(f"{s}% similarity, {100 * f:g}% sampled: FedAvg - SCAFFOLD",
                                        Cell(4, "scaffold", TABLE4_EPOCHS, s, f), Cell(4, "fedavg", TABLE4_EPOCHS, s, f))
                                       for s, f in rows], TARGET_T4)
    table = judging.rounds_table(runs, [c for c in cells() if c.table == 4], TARGET_T4,
                                 key=lambda c: (c.method, c.sampled, c.similarity))
    observed = ("mean rounds to 0.45 (selected step), SCAFFOLD vs FedAvg: " + "; ".join(
        f"{s}%, {100 * f:g}% sampled: {fmt_rounds(table[('scaffold', f, s)]['mean'], runs.budget.rounds)} vs "
        f"{fmt_rounds(table[('fedavg', f, s)]['mean'], runs.budget.rounds)}" for s, f in rows))
    return _entry("scaffold/emnist/sampling", runs, result,
                  {"unit": f"rounds to {TARGET_T4} test accuracy (never: rounds run)", "cells": judging.table_json(table)},
                  observed, "middle: rounds to 0.45 against the share of clients sampled",
                  [c for c in cells() if c.table == 4])


def table5_claim(runs: Runs) -> dict[str, Any]:
    result, reproduced, observed = judging.table5_result(
        runs, JUDGED_SIMILARITY, LABELS, lambda m, s: Cell(5, m, SGD_EPOCHS if m == "sgd" else TABLE5_EPOCHS, s))
    return _entry("scaffold/emnist/two-layer-accuracy", runs, result, reproduced,
                  observed + " (paper: .766/.787/.801 at 0%, .764/.828/.842 at 10%)",
                  f"right: 2-layer network, test accuracy at 0% similarity (seed {runs.budget.seeds[0]}, selected steps)",
                  [c for c in cells() if c.table == 5])


def clients_claim(runs: Runs) -> dict[str, Any]:
    result = judging.rounds_gap(runs, [(f"FedAvg ({CLIENT_FIGURE['fedavg']} clients) - SCAFFOLD "
                                        f"({CLIENT_FIGURE['scaffold']} clients)", client_cell("scaffold"),
                                        client_cell("fedavg"))], TARGET_T4)
    table = judging.rounds_table(runs, [client_cell(m) for m in CLIENT_FIGURE], TARGET_T4,
                                 key=lambda c: (c.method, round(c.sampled * c.clients)))
    observed = (f"mean rounds to {TARGET_T4} (selected step), 400 clients, 1 epoch, 0% similarity: " + ", ".join(
        f"{LABELS[m]} with {k} clients {fmt_rounds(table[(m, k)]['mean'], runs.budget.rounds)}"
        for m, k in CLIENT_FIGURE.items()))
    return _entry("scaffold/emnist/5-clients-beat-fedavg-50", runs, result,
                  {"unit": f"rounds to {TARGET_T4} test accuracy (never: rounds run)", "cells": judging.table_json(table)},
                  observed, "middle: rounds to 0.45 against the share of clients sampled (Table 4's cells)",
                  [client_cell(m) for m in CLIENT_FIGURE])


def _deviations(budget: Budget) -> list[str]:
    out = []
    if budget.rounds < PAPER_ROUNDS:
        out.append(f"{budget.rounds} rounds of the paper's {PAPER_ROUNDS}, on fixture-sized data (the test suite's "
                   "budget)")
    return out + [
        (f"the paper's step-size grid is not given: ours is {', '.join(f'{x:g}' for x in budget.lr_grid)} for every "
         "algorithm (SGD: the server step), widened where a choice sits at an end, selected per algorithm and cell "
         "with a margin of the tuning seeds' spread (else the smaller step) on tuning seeds "
         f"{', '.join(map(str, budget.tuning_seeds))}, judged on seeds {', '.join(map(str, budget.seeds))} (module "
         "docstring); before the study first ran the step was selected on the judged seeds themselves (changed "
         "before any run)"),
        ("batch ceil(n_k / 5) (226 at 100 clients, 57 at 400) so an epoch is 5 steps over one permutation; the last "
        "batch of each epoch is 2 or 3 images short of 0.2 n_k"),
        judging.SGD_DEVIATION,
        judging.SPLIT_DEVIATION,
        ("evaluation protocol not stated in the paper: ours is the accuracy on EMNIST's 18,800 test images (the "
         "global test set) after every round and on the final model, no training-loss evaluation (divergence caught "
         "from the cohort's own losses)"),
        judging.WIDTH_DEVIATION,
        (f"{len(budget.seeds)} training seeds (model init, client sampling, minibatch order) where the paper reports "
        "one run; data seed 0"),
        judging.FLOAT_DEVIATION,
    ]


def _entry(claim_id: str, runs: Runs, result: dict[str, Any], reproduced: dict[str, Any], observed: str,
           panel: str, read: list[Cell]) -> dict[str, Any]:
    from fedbench.claims.verdict import fidelity

    b = runs.budget
    scale = {"study": DECLARATION.name, "variants": list(DECLARATION.variants), "rounds": b.rounds,
             "lr_grid": list(b.lr_grid), "tuning_seeds": list(b.tuning_seeds), "client_figure": dict(CLIENT_FIGURE),
             "steps_per_epoch": STEPS_PER_EPOCH, "batch": "ceil(n_k / 5)", "sampled": SAMPLED,
             "table4_sampled": list(TABLE4_SAMPLED), "epochs": list(EPOCHS), "eta_g": tables.ETA_G,
             "fedprox_mu": FEDPROX_MU, "scaffold_option": "II",
             "sgd": "minibatch_sgd, 1 epoch of gradients at the server model",
             "models": {"tables 3-4": "mclr (784 -> 47)", "table 5": "scaffold_mlp (784-256-47)"},
             "device": b.device}
    c = DECLARATION.claim(claim_id)
    fixture = BUDGETS["fixture"]  # on a confirmatory block of seeds, the fixture budget all the same
    fid = ("stand-in" if dataclasses.replace(b, seeds=fixture.seeds) == fixture else
           fidelity("paper", b.rounds, c.rounds_paper, len(b.seeds)) if c.fidelity == "paper-scale" else c.fidelity)
    return judging.table_entry(runs.declaration or DECLARATION, claim_id, runs, result, reproduced, observed, panel,
                               scale, _deviations(b), read, fid)


def figure(path: Path, runs: Runs) -> None:
    import numpy as np

    from fedbench.plotting import pyplot, save_figure

    seed = runs.budget.seeds[0]
    fig, axes = pyplot().subplots(1, 3, figsize=(15, 4))
    for m in (a.name for a in DECLARATION.arms):
        c = Cell(3, m, SGD_EPOCHS if m == "sgd" else 5, 0)
        lr = runs.tuned_rounds(c, TARGET_T3, "first", 1.0)[0]
        axes[0].plot(runs.curves[(c, seed)], label=f"{LABELS[m]} (step {lr:g})")
    axes[0].axhline(TARGET_T3, color="grey", ls=":", lw=0.8)
    axes[0].set(title="Table 3: logistic, 0% similarity, 5 epochs", xlabel="round", ylabel="test accuracy")
    for s, style in zip(JUDGED_SIMILARITY, ("-", "--")):
        for m in ("scaffold", "fedavg"):
            means = [mean(runs.reached(Cell(4, m, TABLE4_EPOCHS, s, f), TARGET_T4, "first", 1.0))
                     for f in TABLE4_SAMPLED]
            axes[1].plot([100 * f for f in TABLE4_SAMPLED], means, style, marker="o", label=f"{LABELS[m]}, {s}% sim.")
    for m, marker in zip(CLIENT_FIGURE, ("*", "X")):  # the slides' client-count figure: 1 epoch, 0% similarity
        c = client_cell(m)
        axes[1].plot([100 * c.sampled], [mean(runs.reached(c, TARGET_T4, "first", 1.0))], marker, ms=10, ls="",
                     label=f"{LABELS[m]}, {CLIENT_FIGURE[m]} clients, 1 epoch (slides)")
    axes[1].axhline(runs.budget.rounds, color="grey", ls=":", lw=0.8, label="never (counts as the rounds run)")
    axes[1].set(title="Table 4: 400 clients, 5 epochs (stars: 1 epoch)", xlabel="% of clients sampled", ylabel="rounds to 0.45 (mean)",
                xscale="log")
    for m in ("sgd", "fedavg", "scaffold"):
        c = Cell(5, m, SGD_EPOCHS if m == "sgd" else TABLE5_EPOCHS, 0)
        lr = runs.tuned_accuracy(c, "best", 1.0)[0]
        axes[2].plot(np.asarray(runs.curves[(c, seed)]), label=f"{LABELS[m]} (step {lr:g})")
    axes[2].set(title="Table 5: 2-layer network, 0% similarity", xlabel="round", ylabel="test accuracy")
    for ax in axes:
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=120)


def run(out_dir: str | Path, workers: int = WORKERS, budget: str = "paper", real_root: str | Path = REAL_ROOT,
        seeds: tuple[int, ...] | None = None) -> list[dict[str, Any]]:
    """The four claims judged at ``budget`` (BUDGETS), on training ``seeds`` if given (a confirmatory run's frozen
    block, fedbench.studies.confirm; the tuning seeds, and so the selected steps, stay)."""
    _, study, runs = tables.run_tables(out_dir, DECLARATION, budget, workers, cells(), declare, real_root, target_of,
                                       select_target, seeds)
    figure(study.out / f"{DECLARATION.name}.png", runs)
    return [table3_claim(runs), table4_claim(runs), table5_claim(runs), clients_claim(runs)]

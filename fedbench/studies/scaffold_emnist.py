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
import functools
from typing import Any

from fedbench.claims.papers import SCAFFOLD_PAPER
from fedbench.studies import scaffold_table_claims as judging
from fedbench.studies import scaffold_tables as tables
from fedbench.studies.scaffold_emnist_cells import (
    CLIENT_FIGURE,
    EMNIST_TEST,
    EMNIST_TRAIN,
    EPOCHS,
    FEDPROX_MU,
    JUDGED_SIMILARITY,
    LABELS,
    PAPER_ROUNDS,
    TABLE3_SIMILARITY,
    TABLE4_SAMPLED,
    TARGET_T3,
    TARGET_T4,
    cells,
)
from fedbench.studies.scaffold_tables import SAMPLED, STEPS_PER_EPOCH, Budget
from fedbench.study.declaration import Arm, Claim, StudyDeclaration

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


# ------------------------------------------------------------------------------------------------------ entries
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


def _scale(b: Budget) -> dict[str, Any]:
    return {"study": DECLARATION.name, "variants": list(DECLARATION.variants), "rounds": b.rounds,
            "lr_grid": list(b.lr_grid), "tuning_seeds": list(b.tuning_seeds), "client_figure": dict(CLIENT_FIGURE),
            "steps_per_epoch": STEPS_PER_EPOCH, "batch": "ceil(n_k / 5)", "sampled": SAMPLED,
            "table4_sampled": list(TABLE4_SAMPLED), "epochs": list(EPOCHS), "eta_g": tables.ETA_G,
            "fedprox_mu": FEDPROX_MU, "scaffold_option": "II",
            "sgd": "minibatch_sgd, 1 epoch of gradients at the server model",
            "models": {"tables 3-4": "mclr (784 -> 47)", "table 5": "scaffold_mlp (784-256-47)"},
            "device": b.device}


def _fidelity(c: Claim, b: Budget) -> str:
    """Stand-in at the fixture budget (fixture-sized data; on a confirmatory block of seeds all the same), else the
    paper-scale label of the rounds and seeds run."""
    from fedbench.claims.verdict import fidelity

    fixture = BUDGETS["fixture"]
    if dataclasses.replace(b, seeds=fixture.seeds) == fixture:
        return "stand-in"
    return fidelity("paper", b.rounds, c.rounds_paper, len(b.seeds)) if c.fidelity == "paper-scale" else c.fidelity


# ------------------------------------------------------------------------------------------------------ the hooks
STUDY = tables.TableStudy(
    classes=47, cells=tuple(cells()), targets={3: TARGET_T3, 4: TARGET_T4, 5: TARGET_T4, 6: TARGET_T4},
    labels=LABELS, claims={"scaffold/emnist/rounds-to-0.5": 3, "scaffold/emnist/sampling": 4,
                           "scaffold/emnist/two-layer-accuracy": 5, "scaffold/emnist/5-clients-beat-fedavg-50": 6},
    knobs=("table", "method", "variant", "similarity", "sampled", "model"), judged_similarity=JUDGED_SIMILARITY,
    observed={3: " (100% similarity reported, not judged)",
              5: " (paper: .766/.787/.801 at 0%, .764/.828/.842 at 10%)"},
    panels={3: "left: test accuracy, 0% similarity, 5 epochs (seed {seed}, selected steps)",
            4: "middle: rounds to 0.45 against the share of clients sampled",
            5: "right: 2-layer network, test accuracy at 0% similarity (seed {seed}, selected steps)",
            6: "middle: rounds to 0.45 against the share of clients sampled (Table 4's cells)"},
    scale=_scale, deviations=_deviations, fidelity=_fidelity, title="SCAFFOLD on EMNIST (Tables 3, 4 and 5)")
simulations, figure, record = STUDY.simulations, STUDY.figure, STUDY.record
measure = functools.partial(judging.measure, STUDY)

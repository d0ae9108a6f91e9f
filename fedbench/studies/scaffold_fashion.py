"""SCAFFOLD on full Fashion-MNIST (Karimireddy, Kale, Mohri, Reddi, Stich, Suresh, ICML 2020, section 7.1,
Tables 3 and 5): the paper's EMNIST setup on a stand-in dataset this machine has (Debian's dataset-fashion-mnist,
issue 22), labelled stand-in and kept out of the headline tally.

Why Fashion-MNIST stands in for EMNIST balanced: both are 28 x 28 grey images with a standard train/test split,
trained by the same two models (multinomial logistic regression, a 2-layer fully connected network) from the same
784 inputs, split by the same s%-similarity rule over 100 equal-sized clients. What could differ: 10 classes
(EMNIST balanced: 47), so at 0% similarity each client holds ONE class (600 images; on EMNIST 1,128 images of one
or two of 47 classes), a harder skew for FedAvg's drift per client but fewer distinct client optima; 60,000
training images (EMNIST: 112,800), so 600 a client and batch 120 (EMNIST: 1,128, batch 226); a different
accuracy scale (logistic regression reaches about 0.84 on Fashion-MNIST), so the paper's 0.5 target has no
meaning here and ours is fixed below; clothing classes whose confusions (shirt / T-shirt / pullover / coat) are
unlike handwriting's.

Setting, fixed before any run (as fedbench.studies.scaffold_emnist where not said otherwise):
- Data: fashion_mnist_scaffold_n100_s{0,10,100} (fedbench.data.datasets.fashion_mnist.build_scaffold): the
  60,000 training images over N = 100 clients by the s%-similarity split, the 10,000 test images the global test
  set, input x / 255.
- Local work: one epoch is 5 steps of batch ceil(n_k / 5) = 120 ("1 epoch ... corresponds to 5 local steps (0.2
  batch size)"); E epochs are 5 E steps; Table 3: E = 1, 5, 10, 20; Table 5: E = 5.
- 20% of the clients a round (20 of 100); eta_g = 1; SCAFFOLD option II, c and c_i started at zero; 1,000
  rounds (the paper's); test accuracy on the global test set after every round.
- Methods: SCAFFOLD, FedAvg, and SGD (large-batch minibatch SGD, fedbench.algorithms.minibatch_sgd: each sampled
  client's full local gradient from one epoch of 5 minibatch gradients at the server model, one server step a
  round; "SGD (1 epoch)"). FedProx is left out (the issue asks SCAFFOLD vs FedAvg, and SGD where cheap).
- Models: Table 3 mclr (784 -> 10); Table 5 scaffold_mlp (784-256-10; the paper does not give the width).
- Target (Table 3's reading), fixed a priori before any run: test accuracy TARGET = 0.70, five-sixths of the
  about 0.84 multinomial logistic regression reaches on Fashion-MNIST (issue 22: FedProxVR's Table 1, 84.0-84.2%);
  not derived from the paper's 0.5, which belongs to EMNIST's 47 classes.
- Step sizes: scaffold_emnist's grid (five steps 0.01-1, a factor ~3 apart), the same for every method (SGD: its
  server step). Selected per method and cell (table, epochs, similarity) on tuning seeds (100, 101), disjoint
  from the judged seeds (0-4) and the confirm seeds (1000 up), so the selection does not bias the intervals, by
  fedbench.studies.scaffold_tables.select_steps: Table 3 by rounds to TARGET (never: the rounds run; a cell
  that never reaches it on any tuning run, by its best accuracy), Table 5 by the best accuracy; the best mean
  wins only by more than the spread between the tuning seeds, else the smallest step tied with it; a choice at
  an end of the grid widens it (at most 2 steps a side) until it is interior, or the entry lists the cell
  (``selected_at_grid_edge``). Until 2026-11-28 (issue 32: the step sat at an end of the grid in 6 of 6 cells)
  the best mean on one tuning seed won, with no margin and no widening.
- Readings (fedbench.studies.scaffold_tables): rounds to TARGET, first evaluation at it (primary) and the first
  of HOLD = 5 held (sensitivity); best accuracy (primary) and the mean of the last 5 (sensitivity).
- Judged seeds 0-4 (DECLARATION.seeds; model init, client sampling, minibatch order); data seed 0.

What runs here (budget "paper"), cut before any run to fit this project's 2-core machine (the setting above, at
1,000 rounds, E = 1, 5, 10, 20, three similarities, both tables, five steps on two tuning seeds: 495 runs, 292
projected CPU-hours). Measured 2026-11-26 on that machine, shared with other jobs: a round of logistic regression
at E = 5 (20 clients x 25 steps of batch 120, the 10,000 test images evaluated) takes about 0.2 s of CPU, SGD about
0.06 s, the 2-layer network at E = 5 about 1.2 s. Kept: Table 3's setup with logistic regression, SCAFFOLD vs
FedAvg vs SGD, 0% and 10% similarity, the a-priori target, the judged seeds 0-4, the global test set every round
(the paper's tables read rounds to a target, which needs every round). Cut, each stated in the entry:
- E = 5 only (the paper's column whose numbers the published statement quotes), not E = 1, 10, 20;
- a cap of ROUND_CAP = 100 rounds, not 1,000: a run that has not reached the target by then reads "never" (the
  rounds run, shown "100+"), as the paper's tables write "1000+";
- three steps 0.03, 0.1, 0.3 (the middle of the grid 0.01-1) to start from, widened where a choice sits at an end;
- 100% similarity (reported, never judged) not run;
- Table 5 (the 2-layer network) not run at this budget: about 1.2 s a round and run, so even 100 rounds of its 30
  judged and tuning runs exceed what this machine has; its claim is a not-run entry naming the budget "full"
  (both tables at the same cuts), which runs it.
About 66 runs x 100 rounds before any widening (each step a widening adds: 2 more runs of its cell), about 17
CPU-minutes. The paper budget's grid and tuning seed are DECLARATION.knobs
("lr", "tuning_seeds").

A variant of fedbench.studies.scaffold_emnist: this module holds only its declaration and settings (STUDY); its
runs, measurements, entries and figure are the hooks both SCAFFOLD table studies share
(fedbench.studies.scaffold_tables.TableStudy).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from fedbench.claims.fidelity import data_label
from fedbench.claims.papers import SCAFFOLD_PAPER
from fedbench.studies import scaffold_table_claims as judging
from fedbench.studies import scaffold_tables as tables
from fedbench.studies.scaffold_tables import SAMPLED, SGD_EPOCHS, STEPS_PER_EPOCH, Budget, Cell
from fedbench.study.declaration import Claim, StudyDeclaration

# Every setting of the study, fixed before any run.
PAPER_ROUNDS = 1000
ROUND_CAP = 100  # the rounds run here; a run short of the target by then reads "never" (100+)
PAPER_EPOCHS = (1, 5, 10, 20)  # Table 3's local epochs
EPOCHS = (5,)  # the ones run here
TABLE5_EPOCHS = 5
SIMILARITY = (0, 10)  # the paper's 100% is reported there, never judged: not run here
JUDGED_SIMILARITY = (0, 10)
TARGET = 0.70  # a priori: five-sixths of logistic regression's ~0.84 on Fashion-MNIST (module docstring)
FASHION_TRAIN, FASHION_TEST = 60000, 10000
LABELS = {"scaffold": "SCAFFOLD", "fedavg": "FedAvg", "sgd": "SGD (large batch)"}

# The scales the study runs at. "paper": Table 3 at the cuts of the module docstring (judged seeds 0-4; three steps,
# the middle of scaffold_emnist's grid, the same for every method, SGD: its server step; two tuning seeds, disjoint
# from the judged ones); "full": both tables at the same cuts; "fixture": the test suite's.
_PAPER = Budget(ROUND_CAP, (0, 1, 2, 3, 4), (100, 101), (0.03, 0.1, 0.3), "auto", tables=(3,))
BUDGETS = {"paper": _PAPER,
           "full": dataclasses.replace(_PAPER, tables=(3, 5)),
           "fixture": Budget(3, (0, 1), (100, 101), (0.1, 0.3), "cpu")}


def cells() -> list[Cell]:
    """Every cell of Tables 3 (logistic regression) and 5 (2-layer network) the study runs, in the order they run."""
    out = [Cell("fashion_mnist", 3, m, e, s) for s in SIMILARITY for m in ("scaffold", "fedavg") for e in EPOCHS]
    out += [Cell("fashion_mnist", 3, "sgd", SGD_EPOCHS, s) for s in SIMILARITY]
    return out + [Cell("fashion_mnist", 5, m, SGD_EPOCHS if m == "sgd" else TABLE5_EPOCHS, s)
                  for s in JUDGED_SIMILARITY for m in ("scaffold", "fedavg", "sgd")]


# ------------------------------------------------------------------------------------------------- declaration
_WHY = ("stand-in: full Fashion-MNIST (Debian's dataset-fashion-mnist) for EMNIST balanced: the same 28 x 28 "
        "inputs, models and s%-similarity split over 100 clients; could differ: 10 classes, not 47 (at 0% "
        "similarity a client holds ONE class of 600 images), 60,000 training images (batch 120, not 226), and a "
        "higher accuracy scale, so the target is ours (0.70), not the paper's 0.5")
DECLARATION = StudyDeclaration(
    name="scaffold_fashion", paper=SCAFFOLD_PAPER,
    dataset="full Fashion-MNIST (stand-in for EMNIST balanced), s%-similarity split over 100 equal clients, its "
            "10,000 test images the global test set",
    variants=("fashion_mnist_scaffold_n100_s0", "fashion_mnist_scaffold_n100_s10"),
    arms=(tables.SCAFFOLD, tables.FEDAVG, tables.SGD),
    seeds=BUDGETS["paper"].seeds, data_seeds=(), budgets=BUDGETS, evaluation=tables.EVALUATION,
    knobs={"lr": BUDGETS["paper"].lr_grid, "tuning_seeds": BUDGETS["paper"].tuning_seeds, "epochs": EPOCHS,
           "similarity": SIMILARITY},
    scales=tables.paper_scales([c for c in cells() if _PAPER.runs_table(c.table)], _PAPER, FASHION_TRAIN,
                               FASHION_TRAIN + FASHION_TEST),
    claims=(
    Claim(
        "scaffold/fashion-mnist/rounds-to-target", "section 7.1, Table 3 (stand-in data)",
        "With logistic regression, SCAFFOLD reaches the target test accuracy in fewer rounds than FedAvg and SGD at "
        "5 local epochs for 0% and 10% similarity (the paper's EMNIST setup on Fashion-MNIST).",
        {"value": None, "unit": "rounds to 0.5 test accuracy (EMNIST)", "scope": "EMNIST balanced, 100 clients, 20% "
         "sampled (the paper); here Fashion-MNIST, target 0.70",
         "statement": "EMNIST, 0% similarity, 5 epochs: SCAFFOLD 152, FedAvg 428, SGD 317 (1 epoch); 10%: SCAFFOLD 20, "
                      "FedAvg 34; no Fashion-MNIST numbers exist"},
        effect="per judged seed (0-4) and similarity (0% and 10%), at 5 local epochs, rounds to 0.70 test accuracy "
               "(fixed a priori; the global test set every round) of the comparator minus SCAFFOLD's, each method at "
               "its own step of the grid 0.03, 0.1, 0.3, " + tables.selection_rule(_PAPER.tuning_seeds, TARGET)
               + "; comparators FedAvg at 5 epochs and SGD (1 epoch); at most 100 rounds are run, and a run that "
                 "never gets there within them counts as 100 (the paper's tables write 1000+)",
        rules=(("each of the 4 parts", judging.ROUNDS_RULE),),
        reads=("scaffold", "fedavg", "sgd"), rounds_paper=PAPER_ROUNDS, fidelity=data_label("fashion_mnist", SCAFFOLD_PAPER),
        note=_WHY + "; step sizes selected per method and cell on seeds 100, 101, judged on 0-4; batch ceil(n_k/5) = "
                    "120 so one epoch is 5 steps; SGD is large-batch minibatch SGD; FedProx not run; cut to fit a "
                    "2-core machine: E = 5 only, 100 rounds (never: 100+), three steps to start from"),
    Claim(
        "scaffold/fashion-mnist/two-layer-accuracy", "section 7.1, Table 5 (stand-in data)",
        "With a two-layer network, SCAFFOLD's best test accuracy after 1,000 rounds is above FedAvg's and SGD's at 0% "
        "and 10% similarity (the paper's EMNIST setup on Fashion-MNIST).",
        {"value": None, "unit": "best test accuracy (EMNIST)", "scope": "EMNIST balanced, 2-layer FC, 5 epochs (the "
         "paper); here Fashion-MNIST",
         "statement": "EMNIST: SGD .766/.764, FedAvg .787/.828, SCAFFOLD .801/.842 (0%/10% similarity); no "
                      "Fashion-MNIST numbers exist"},
        effect="per judged seed (0-4), SCAFFOLD's best test accuracy over the rounds run (at most 100) minus the "
               "comparator's (points), each at its own step of the grid 0.03, 0.1, 0.3, "
               + tables.selection_rule(_PAPER.tuning_seeds, None) + "; comparators FedAvg (5 epochs) and SGD (1 "
                 "epoch), at 0% and 10% similarity",
        rules=(("each of the 4 parts", judging.ACCURACY_RULE),),
        reads=("scaffold", "fedavg", "sgd"), rounds_paper=PAPER_ROUNDS, fidelity=data_label("fashion_mnist", SCAFFOLD_PAPER),
        note=_WHY + "; the 2-layer network's width is not given (scaffold_mlp: 784-256-10); step sizes tuned per "
                    "method and similarity on seeds 100, 101, judged on 0-4; run only by the budget 'full' (100 rounds)"),
))


# ------------------------------------------------------------------------------------------------------ entries
def _deviations(budget: Budget) -> list[str]:
    out = [_WHY]
    if budget.rounds < ROUND_CAP:
        out.append(f"{budget.rounds} rounds of the paper's {PAPER_ROUNDS}, on fixture-sized data (the test suite's "
                   "budget)")
    else:
        out.append(f"{budget.rounds} rounds, not the paper's {PAPER_ROUNDS} (to fit a 2-core machine): a run short of "
                   f"the target by then reads {budget.rounds}+ (never), as the paper's tables write 1000+")
    return out + [
        (f"Table 3 at E = {', '.join(map(str, EPOCHS))} only (the paper's E = "
         f"{', '.join(map(str, PAPER_EPOCHS))}); similarities {', '.join(f'{x}%' for x in SIMILARITY)} (the paper's "
         "100%, never judged, not run)"
         + ("" if budget.runs_table(5) else "; Table 5 (2-layer network) not run at this budget (budget 'full' runs "
            "it)")),
        (f"the paper's step-size grid is not given: ours is {', '.join(f'{x:g}' for x in budget.lr_grid)} for every "
         f"method (SGD: the server step), widened where a choice sits at an end, selected per method and cell on "
         f"tuning seeds {', '.join(map(str, budget.tuning_seeds))} with a margin of their spread (else the smaller "
         f"step), judged on seeds {', '.join(map(str, budget.seeds))}"),
        f"target test accuracy {TARGET} fixed a priori for Fashion-MNIST (the paper's 0.5 is EMNIST's)",
        "batch ceil(n_k / 5) = 120 so an epoch is 5 steps over one permutation",
        judging.SGD_DEVIATION,
        "FedProx (a Table 3 comparator) and Table 4 (400 clients, sampling) are not run",
        judging.SPLIT_DEVIATION,
        judging.WIDTH_DEVIATION,
        judging.FLOAT_DEVIATION,
    ]


def _scale(b: Budget) -> dict[str, Any]:
    return {"study": DECLARATION.name, "variants": list(DECLARATION.variants), "rounds": b.rounds,
            "lr_grid": list(b.lr_grid), "tuning_seeds": list(b.tuning_seeds), "target": TARGET,
            "steps_per_epoch": STEPS_PER_EPOCH, "batch": "ceil(n_k / 5)", "sampled": SAMPLED, "epochs": list(EPOCHS),
            "eta_g": tables.ETA_G, "scaffold_option": "II",
            "sgd": "minibatch_sgd, 1 epoch of gradients at the server model",
            "models": {"table 3": "mclr (784 -> 10)", "table 5": "scaffold_mlp (784-256-10)"}, "device": b.device}


# ------------------------------------------------------------------------------------------------------ the hooks
STUDY = tables.TableStudy(
    classes=10, cells=tuple(cells()), targets={3: TARGET, 5: TARGET}, labels=LABELS,
    claims={"scaffold/fashion-mnist/rounds-to-target": 3, "scaffold/fashion-mnist/two-layer-accuracy": 5},
    knobs=("table", "method", "variant", "similarity", "model"), judged_similarity=JUDGED_SIMILARITY,
    observed={3: " (at most {rounds} rounds; {rounds}+: never)",
              5: " (EMNIST in the paper: .766/.787/.801 at 0%, .764/.828/.842 at 10%)"},
    panels={3: "left: logistic regression, 0% similarity, 5 epochs (seed {seed}, selected steps)",
            5: "right: 2-layer network, 0% similarity (seed {seed}, selected steps)"},
    scale=_scale, deviations=_deviations, fidelity=lambda claim, budget: claim.fidelity,
    title="SCAFFOLD's EMNIST setup on Fashion-MNIST (stand-in)", budget_rule=True, decimals=1,
    not_run=(("not run: the 2-layer network costs about 1.2 s of CPU a round and run on this project's 2-core "
              "machine (measured 2026-11-26), too much for its 30 runs beside Table 3's; logistic regression (Table "
              "3) ran first"),
             "running `fedbench paper run scaffold_fashion --budget full` (both tables, {rounds} rounds)"))
simulations, figure, record = STUDY.simulations, STUDY.figure, STUDY.record
measure = functools.partial(judging.measure, STUDY)

"""Mime and MimeLite vs FedAvg with server momentum on EMNIST-62 (Karimireddy et al., "Mime", 2020; talk slides,
Figure 3, SGDm panel): a paper-scale study on real data, with FEMNIST's natural writer split and LEAF's CNN as
the stand-in for the figure's unstated setup.

The slides show Mime and MimeLite above FedAvg with momentum on EMNIST62 with SGDm and give no numbers, no client
split, no rounds and no rates (paper-setups.md section 2.3). The Mime paper's appendix is not in our material
(/work/shared/papers has the talk slides only), so every setting below is chosen once, here, before any run:

- data: femnist_leaf, LEAF's full FEMNIST (3,500 writers, 62 classes, 805,263 images; niid, by-sample 90/10
  split), the natural writer split EMNIST-62 federated benchmarks use;
- model: leaf_femnist_cnn, LEAF's reference CNN (2 conv 32/64 + dense 2048 -> 62);
- 35 writers a round (LEAF's paper_experiments/femnist.sh, its larger cohort), sampled with probability n_k / n
  so that every arm averages with equal weights (the simple means of Mime's Algorithm 1, as mime_synthetic);
- 1 local epoch of batch 10 (LEAF's FEMNIST FedAvg runs: num_epochs 1, LEAF's default batch size 10);
- local step size 0.004 for every arm (LEAF's FEMNIST FedAvg learning rate), SGDm beta = 0.9 (the base optimizer
  of Mime and MimeLite; FedAvgM's server momentum, server step 1);
- 500 rounds, 5 seeds (3 until 2026-11-26, changed before any run: issue 21) (LEAF runs 2,000 rounds at a tenth of the effective step: 0.004 without momentum);
- evaluation (DECLARATION.evaluation, every budget's): the Mime paper does not state it. Ours is FedJAX's EMNIST protocol (google/fedjax
  experiments/fed_avg/fed_avg.EMNIST_CONV.flags: ``eval_frequency=5``; run_fed_avg.py runs the full test
  evaluation periodically for EMNIST tasks and on the final model): the accuracy on every writer's own test
  images, pooled, every 5 rounds from round 0 and on the final model; no training-loss evaluation (no claim
  reads one; divergence is caught from the cohort's own losses, fedbench.engine.evaluation). The readings read
  those evaluations by round: best, the mean of the last 5, the final model; a run that diverged reads 0 from
  the round it diverged.

The study is its declaration and its setting (:data:`SETTING`: the claim's parts, the scale's steps, the
assumptions, the figure's panel); its hooks are fedbench.studies.mime_real.Femnist's, which its variant
fedbench.studies.mime_emnist_adam takes too. What it shares with its Fashion-MNIST stand-in (the arms, the sampling,
the evaluation protocol, the readings, the parts and the figure) is there as well.
"""

from __future__ import annotations

from fedbench.study.scale import Scale
from fedbench.claims.papers import MIME_PAPER
from fedbench.studies import mime_real as shared
from fedbench.studies.mime_real import BASELINE, EVAL_EVERY, MOMENTUM, ORDERING_RULE
from fedbench.studies.mime_real import READINGS, accuracy, curve  # noqa: F401 (its readings, read here by the tests)
from fedbench.study.declaration import Claim, StudyDeclaration

# the EMNIST-62 setting, mime_real's (one place for this study and its Adam panel)
MODEL, LR, LOCAL_EPOCHS, BATCH = shared.FEMNIST_MODEL, shared.FEMNIST_LR, shared.LEAF_EPOCHS, shared.LEAF_BATCH
Budget, BUDGETS = shared.FemnistBudget, shared.FEMNIST_BUDGETS
WRITERS, IMAGES, TRAIN_FRACTION = shared.WRITERS, shared.IMAGES, shared.TRAIN_FRACTION
_N, _STEPS = shared.MEAN_WRITER_IMAGES, shared.EPOCH_STEPS
_P = BUDGETS["paper"]
# The evaluation protocol (the paper states none; FedJAX's EMNIST experiments, listed as a deviation): test accuracy
# on every writer's own test images every EVAL_EVERY rounds and on the final model (fedbench.studies.mime_real).

ASSUMPTIONS = [
    ("stand-in: the slides do not state Figure 3's client split, rounds, local work or rates; FEMNIST's natural "
     "writer split (femnist_leaf, 3,500 writers, 62 classes) with LEAF's reference CNN (leaf_femnist_cnn)"),
    ("35 writers a round (LEAF paper_experiments/femnist.sh, its larger cohort), sampled with probability n_k / n "
     "and averaged with equal weights (Mime's Algorithm 1 means)"),
    (f"{LOCAL_EPOCHS} local epoch of batch {BATCH} (LEAF's FEMNIST FedAvg runs and default batch size); local step "
     f"size {LR:g} for every arm (LEAF's FEMNIST rate), not tuned per arm as the paper does"),
    shared.MOMENTUM_NOTE,
    "500 rounds (LEAF runs 2,000 at a tenth of the effective step)",
    ("evaluation protocol not stated by the paper: FedJAX's EMNIST one (eval_frequency 5, full test evaluation): "
     "test accuracy on every writer's test images every 5 rounds and on the final model; no training loss"),
    shared.SCOPE_NOTE,
]
# The study as data (fedbench.study.declaration): the arms (each arm's algorithm is built from its settings), the
# paper budget's seeds, the budgets, the protocol and the claim with the arms its rule reads. data_seeds=(): the data
# is LEAF's fixed split (the registered not-run entry names no data seed).
DECLARATION = StudyDeclaration(
    name="mime_emnist", paper=MIME_PAPER,
    dataset="femnist_leaf: LEAF's FEMNIST, 3,500 writers (natural split), 62 classes, 90/10 by-sample split",
    variants=("femnist_leaf",),
    arms=shared.arms(LR), seeds=_P.seeds, data_seeds=(), budgets=BUDGETS, evaluation=shared.EVALUATION,
    # local work in minibatch-gradient units: every arm's epoch; Mime and MimeLite also the full local gradient at x
    # (for c and the server's momentum); Mime also grad f_i(x; zeta) on every minibatch
    scales=tuple(Scale(MODEL, len(_P.seeds), _P.rounds, _P.clients_per_round, _N, LOCAL_EPOCHS, BATCH,
                       IMAGES * (1 - TRAIN_FRACTION), eval_every=EVAL_EVERY, local_steps=steps)
                 for steps in (3 * _STEPS, 2 * _STEPS, _STEPS)),
    claims=(
    Claim(
        id="mime/emnist62/ordering", where="talk slides, Figure 3",
        claim_text="On EMNIST-62 with momentum, Mime and MimeLite reach a higher test accuracy than FedAvg with "
                   "momentum.",
        published={"value": None, "unit": "test accuracy", "scope": "EMNIST-62, SGDm (Figure 3)",
                   "statement": "ordering only; no numbers are available in our copy (slides)"},
        effect="per seed, effect = best test accuracy (pooled over every writer's test images, over the evaluations "
               "of the run) of Mime minus that of FedAvg with server momentum, in points, and the same for MimeLite",
        rules=(("each part", ORDERING_RULE),),
        notes="The claim names both, so the rule judges both; sharpened from the Mime-only rule before any run",
        reads=("Mime", "MimeLite", BASELINE), rounds_paper=None, fidelity="stand-in", note="; ".join(ASSUMPTIONS)),
))


# what the hooks read beyond the declaration (fedbench.studies.mime_real.Femnist): the claim's parts, the step sizes
# the entry's scale states, the assumptions and the figure's one panel
SETTING = shared.Femnist(
    pairs={"mime/emnist62/ordering": (("Mime", BASELINE), ("MimeLite", BASELINE))},
    steps={"lr": LR, "momentum": MOMENTUM, "fedavgm_server_lr": 1.0}, assumptions=tuple(ASSUMPTIONS),
    panels=((f"SGDm {MOMENTUM:g}", ("Mime", "MimeLite", BASELINE)),))
simulations, record, measure, figure = SETTING.simulations, SETTING.record, SETTING.measure, SETTING.figure

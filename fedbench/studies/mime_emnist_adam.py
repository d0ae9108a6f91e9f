"""The Mime slides' Figure 3 on EMNIST-62 beyond its SGDm ordering (Karimireddy et al., "Mime", 2020; talk slides,
Figure 3 and its caption): Mime and MimeLite against FedAvg with Adam as the base optimizer (the middle panel), and
FedAvg against the server-only baselines of both panels ("FedAvg is often even worse than the server-only
baselines"). fedbench.studies.mime_emnist runs the SGDm ordering on the same data.

Both claims were registered as placeholders before any run (fedbench/claims/registry.json, commit ee3bae3): their
rules, declared as data in fedbench.studies.mime_emnist_adam_claims, decide as those registrations did (their words
are generated from the data). The Adam rule fixes Adam's step and betas before any run, the
same for every arm, untuned; the slides give no numbers, rates or rounds (paper-setups.md section 2.3).

Setting, fixed before any run of this study: mime_emnist's (both take :data:`LR`, :data:`BUDGETS`, ... from
fedbench.studies.mime_real, which holds the EMNIST-62 setting once): LEAF's FEMNIST (femnist_leaf,
3,500 writers, natural split), LEAF's CNN, 35 writers a round sampled with probability n_k / n and averaged with
equal weights, 1 local epoch of batch 10, 500 rounds, seeds 0-4, FedJAX's evaluation protocol (every 5 rounds and the
final model, every writer's test images), best test accuracy. Arms:

    Adam panel (beta1 0.9, beta2 0.99, eps 1e-8)      SGDm panel (beta 0.9, undampened)
    Mime (Adam), MimeLite (Adam): local step 0.001     FedAvgM: clients' SGD 0.004, server momentum, server step 1
    FedAdam: clients' SGD 0.004, server Adam 0.001     server-only SGDm: step 0.004
    server-only Adam: step 0.001

- Adam's step, 0.001 (:data:`ADAM_LR`), is Kingma and Ba's default and torch's; it is the step of Adam wherever Adam
  runs (Mime's and MimeLite's clients, FedAdam's server, the server-only baseline), as the rule fixes. beta2 0.99 is
  the registered rule's; eps 1e-8 (not stated by the rule) is torch's, the same for every arm.
- FedAvg "with the same server optimizer" (the server-only rule): FedAvgM (fedbench.algorithms.fedavg_momentum,
  mime_emnist's baseline) on the SGDm panel, FedAdam (fedbench.algorithms.fedadam) on the Adam panel; their clients
  take LEAF's SGD step 0.004, the step of mime_emnist's every arm.
- server-only (fedbench.algorithms.server_only): each sampled writer's gradients at the server model over its epoch
  of batch 10 (its full local gradient), averaged; one step of the base optimizer a round. Its SGDm step is
  mime_emnist's 0.004 for every arm.

A variant of mime_emnist (other arms and claims on the same data and setting), not arms of it: adding them there
would change mime_emnist's registered not-run entry (its declared runs, which the registry's hash covers) and its
runs' cost. FedAvgM runs here again (5 runs) rather than being read from mime_emnist's folder. The module is the
declaration and its setting (:data:`SETTING`); the hooks are mime_emnist's (fedbench.studies.mime_real.Femnist), and
the driver judges each claim with its declared rule and combination ("often" for the server-only one). The claims
are declared in fedbench.studies.mime_emnist_adam_claims.

Cost (reports/bench/paper-cost.json): `fedbench paper cost --study mime_emnist_adam --max-seconds 15` on this
project's 2-core Xeon (2026-11-28, 14 s, the cap the other studies were measured with): 195.6 CPU-hours for the 30 runs
(164.5 training, 31.1 evaluation; leaf_femnist_cnn@10 at 32.5 ms a local step, 0.30 s fixed a round, 0.46 ms an
evaluated sample, as mime_emnist's 32.3 ms, 0.28 s and 0.46 ms). With a 120 s cap: 196.5 h; at mime_emnist's own unit
costs of 2026-11-26: 194.6 h.
"""

from __future__ import annotations

import dataclasses

from fedbench.claims.papers import MIME_PAPER
from fedbench.studies import mime_real as shared
from fedbench.studies.mime_emnist_adam_claims import (ADAM_PANEL, BETA1, BETA2, CLAIMS, EPS, FEDADAM, PANELS,
                                                      SERVER_ADAM, SERVER_SGDM)
from fedbench.studies.mime_real import BASELINE, EVAL_EVERY, MOMENTUM, READINGS  # noqa: F401 (READINGS: the tests')
from fedbench.study.declaration import Arm, StudyDeclaration
from fedbench.study.scale import Scale

# the EMNIST-62 setting, mime_real's (one place for this study and its SGDm sibling)
MODEL, LR, LOCAL_EPOCHS, BATCH = shared.FEMNIST_MODEL, shared.FEMNIST_LR, shared.LEAF_EPOCHS, shared.LEAF_BATCH
Budget, BUDGETS = shared.FemnistBudget, shared.FEMNIST_BUDGETS
WRITERS, IMAGES, TRAIN_FRACTION = shared.WRITERS, shared.IMAGES, shared.TRAIN_FRACTION
_N, _STEPS = shared.MEAN_WRITER_IMAGES, shared.EPOCH_STEPS
_P = BUDGETS["paper"]
ADAM_LR = 0.001  # Adam's step wherever Adam runs (Kingma and Ba's default), fixed before any run
ADAM = {"beta1": BETA1, "beta2": BETA2, "eps": EPS}

ARMS = (
    Arm("Mime (Adam)", "mime", {"lr": ADAM_LR, "variant": "mime", "base": "adam", **ADAM}),
    Arm("MimeLite (Adam)", "mime", {"lr": ADAM_LR, "variant": "mimelite", "base": "adam", **ADAM}),
    Arm(FEDADAM, "fedadam", {"lr": LR, "server_lr": ADAM_LR, **ADAM}),
    Arm(SERVER_ADAM, "server_only", {"lr": ADAM_LR, "base": "adam", **ADAM}),
    Arm(BASELINE, "fedavg_momentum", {"lr": LR, "beta": MOMENTUM, "server_lr": 1.0}),
    Arm(SERVER_SGDM, "server_only", {"lr": LR, "base": "sgdm", "momentum": MOMENTUM}),
)

ASSUMPTIONS = [
    ("stand-in: the slides do not state Figure 3's client split, rounds, local work or rates; FEMNIST's natural "
     "writer split (femnist_leaf, 3,500 writers, 62 classes) with LEAF's reference CNN (leaf_femnist_cnn), as "
     "mime_emnist"),
    ("35 writers a round (LEAF paper_experiments/femnist.sh, its larger cohort), sampled with probability n_k / n "
     "and averaged with equal weights (Mime's Algorithm 1 means)"),
    (f"{LOCAL_EPOCHS} local epoch of batch {BATCH}; SGD step {LR:g} (LEAF's FEMNIST rate) for FedAvg's clients and "
     f"server-only SGDm; Adam's step {ADAM_LR:g} (Kingma and Ba's default) wherever Adam runs, beta1 {BETA1:g}, "
     f"beta2 {BETA2:g}, eps {EPS:g}, the same for every arm; none tuned"),
    (f"FedAvg with the panel's server optimizer: FedAvgM (momentum {MOMENTUM:g}, server step 1) and FedAdam (server "
     f"Adam, step {ADAM_LR:g}; bias-corrected Adam, as Mime's, where Reddi et al. have none)"),
    ("server-only: the sampled writers' mean gradient at the server model over their epoch of batch 10, one step "
     "of the base optimizer a round"),
    "500 rounds (LEAF runs 2,000 at a tenth of the effective step)",
    ("evaluation protocol not stated by the paper: FedJAX's EMNIST one (eval_frequency 5, full test evaluation): "
     "test accuracy on every writer's test images every 5 rounds and on the final model; no training loss"),
]


def _scale(runs: int, steps: int) -> Scale:
    return Scale(MODEL, runs, _P.rounds, _P.clients_per_round, _N, LOCAL_EPOCHS, BATCH, IMAGES * (1 - TRAIN_FRACTION),
                 eval_every=EVAL_EVERY, local_steps=steps)


# The study as data (fedbench.study.declaration). data_seeds=(): the data is LEAF's fixed split.
DECLARATION = StudyDeclaration(
    name="mime_emnist_adam", paper=MIME_PAPER,
    dataset="femnist_leaf: LEAF's FEMNIST, 3,500 writers (natural split), 62 classes, 90/10 by-sample split",
    variants=("femnist_leaf",), arms=ARMS, seeds=_P.seeds, data_seeds=(), budgets=BUDGETS,
    evaluation=shared.EVALUATION,
    # local work in minibatch-gradient units: every arm's epoch (server-only: its gradients at x); Mime and MimeLite
    # also the full local gradient at x; Mime also grad f_i(x; zeta) on every minibatch
    scales=(_scale(len(_P.seeds), 3 * _STEPS), _scale(len(_P.seeds), 2 * _STEPS),
            _scale(4 * len(_P.seeds), _STEPS)),
    claims=tuple(dataclasses.replace(c, note="; ".join(ASSUMPTIONS)) for c in CLAIMS))


# what the hooks read beyond the declaration (fedbench.studies.mime_real.Femnist): each claim's parts, the steps and
# optimizer settings the entries' scale states, the assumptions and the figure's panel for each base optimizer
SETTING = shared.Femnist(
    pairs={"mime/emnist62/adam-ordering": (("Mime (Adam)", FEDADAM), ("MimeLite (Adam)", FEDADAM)),
           "mime/emnist62/fedavg-below-server-only": PANELS},
    steps={"sgd_lr": LR, "adam_lr": ADAM_LR, "adam_betas": [BETA1, BETA2], "adam_eps": EPS, "momentum": MOMENTUM,
           "fedavgm_server_lr": 1.0},
    assumptions=tuple(ASSUMPTIONS), panels=(("SGDm", (BASELINE, SERVER_SGDM)), ("Adam", ADAM_PANEL)))
simulations, record, measure, figure = SETTING.simulations, SETTING.record, SETTING.measure, SETTING.figure

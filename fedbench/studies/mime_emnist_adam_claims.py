"""The two claims of fedbench.studies.mime_emnist_adam (the Mime slides' Figure 3 on EMNIST-62: the Adam panel's
ordering, and FedAvg against the server-only baselines), declared.

Both rules decide as the ones registered for them as placeholders before any run (fedbench/claims/registry.json,
commit ee3bae3); each is declared as data (its effect, :data:`GAIN_RULE` for its parts, how they combine), its words
generated from it:

- ``mime/emnist62/adam-ordering``: per seed, best test accuracy of Mime (Adam) minus
  FedAdam's and of MimeLite (Adam) minus FedAdam's, in points; each part reproduced when its 95% interval lies above
  0, not-reproduced below; reproduced if both are, not-reproduced if one is (fedbench.claims.verdict.combine).
- ``mime/emnist62/fedavg-below-server-only``: per seed and panel, best test
  accuracy of the server-only baseline minus that of FedAvg with the panel's server optimizer (server-only SGDm -
  FedAvgM, server-only Adam - FedAdam); each panel judged as above, and the panels combined by "often"
  (fedbench.claims.verdict.often): reproduced if one panel is and none is not-reproduced, not-reproduced if both
  are, else inconclusive. Every cell of the sensitivity (other readings, smaller budgets) is combined the same way.
"""

from __future__ import annotations

from fedbench.claims.verdict import Rule
from fedbench.studies.mime_real import BASELINE
from fedbench.study.declaration import Claim

BETA1, BETA2, EPS = 0.9, 0.99, 1e-8  # Adam's, every arm's: beta1, beta2 the registered rule's; eps torch's
FEDADAM, SERVER_ADAM, SERVER_SGDM = "FedAdam", "server-only Adam", "server-only SGDm"
ADAM_PANEL = ("Mime (Adam)", "MimeLite (Adam)", FEDADAM, SERVER_ADAM)
PANELS = ((SERVER_SGDM, BASELINE), (SERVER_ADAM, FEDADAM))  # (server-only, FedAvg with the same server optimizer)
GAIN_RULE = Rule("greater", 0.0, "accuracy points")  # every part (a pair, a panel) of both claims

CLAIMS = (
    Claim(
        id="mime/emnist62/adam-ordering", where="talk slides, Figure 3 (middle: Adam)",
        claim_text="On EMNIST-62 with Adam as the base optimizer, Mime and MimeLite reach a higher test accuracy than "
                   "FedAvg.",
        published={"value": None, "unit": "test accuracy", "scope": "talk slides, Figure 3 (middle: Adam)",
                   "statement": "'Mime and MimeLite have very similar performance and are consistently the best' "
                                "(Figure 3 caption: SGDm and Adam panels); no numbers in our copy"},
        effect="mime/emnist62/ordering's rule with Adam in place of SGDm: per seed, best test accuracy (pooled over "
               "every writer's test images) of Mime minus that of FedAvg with server-side Adam, in points, and the "
               "same for MimeLite; 5 seeds",
        rules=(("each part", GAIN_RULE),),
        notes="Adam's step and betas fixed before any run (beta1 0.9, beta2 0.99, the same for every arm), not tuned",
        reads=("Mime (Adam)", "MimeLite (Adam)", FEDADAM), fidelity="stand-in"),
    Claim(
        id="mime/emnist62/fedavg-below-server-only", where="talk slides, Figure 3 and its caption",
        claim_text="FedAvg is often even worse than the server-only baselines (EMNIST-62, SGDm and Adam panels).",
        published={"value": None, "unit": "test accuracy", "scope": "talk slides, Figure 3 and its caption",
                   "statement": "'FedAvg is often even worse than the server-only baselines.'"},
        effect="per seed and panel (SGDm, Adam on EMNIST-62), best test accuracy of the server-only baseline "
               "(large-batch gradients of the sampled clients at the server model, one server step of the base "
               "optimizer a round) minus that of FedAvg with the same server optimizer, in points; 5 seeds",
        rules=(("each panel", GAIN_RULE),), combination="often",
        reads=(SERVER_SGDM, BASELINE, SERVER_ADAM, FEDADAM), fidelity="stand-in"),
)

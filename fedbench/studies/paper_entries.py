"""The report's entries for the claims judged by no train-stage run: each paper-scale claim study's, as ``fedbench
paper run NAME`` left them (else not-run with its command and projected cost), and the headlines no study judges
yet (not-implemented). fedbench.studies.real_claims gathers them after the FedProx real-data entries.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from fedbench.claims.entry import new_entry, not_implemented
from fedbench.study.layout import RESULTS_ROOT, reported_folder


def paper_study_entries(name: str, root: Path = RESULTS_ROOT) -> list[dict[str, Any]]:
    """The claims of paper-scale study ``name`` as ``fedbench paper run NAME`` (``fedbench study run NAME``) left them
    in ``root/NAME/paper/``, else in the folder of another budget it ran at (fedbench.study.layout.reported_folder:
    ``root/NAME/BUDGET/``; the budget it ran at in its cost; the fixture budget's entries say stand-in: fixture-sized
    data), each with its measured cost; not-run entries with the
    command and the projected cost where it has not run (a claim the study declares but the run lacks, too)."""
    from fedbench.studies.real_data import declaration, not_run_entry, redeclared
    from fedbench.study.record import read_simulations

    folder = reported_folder(name, root)  # results/NAME/paper, else results/NAME/BUDGET that ran
    pending = not_run_entry(name)
    if not (folder / "claims.json").exists():
        return pending
    body = json.loads((folder / "claims.json").read_text())
    records = read_simulations(folder)
    devices = sorted({r.get("device") or "" for r in records} - {""})
    cost = {"device": ", ".join(devices), "seconds": body["seconds"], "hours": round(body["seconds"] / 3600, 3),
            "runs": len(records), "workers": body.get("workers"), "budget": body.get("budget"),
            "measured": True}
    ran = {c["id"]: c | {"cost": cost} for c in body["claims"]}
    # a judged claim with its current declaration's published value and magnitude part (split again from its
    # recorded parts); one the run left not-run, as the current declaration states it
    return [redeclared(ran[c.id], c) if ran.get(c.id, {}).get("verdict") not in (None, "not-run") else p
            for c, p in zip(declaration(name).claims, pending)]


@dataclasses.dataclass(frozen=True)
class Headline:
    """A headline claim (issue 21, item 5) that no run of fedbench judges yet: what the paper says, the rule
    registered for it now (before any run), and ``missing``: what would have to exist for it to run. No command
    is given where none would judge it: ``missing`` names the study or the declaration that is lacking."""

    id: str
    paper: str
    where: str
    claim: str
    statement: str
    unit: str
    rule: str
    fidelity: str
    rounds_paper: int | None
    missing: str
    note: str = ""  # why the label is what it is, where it is not the paper's setup (the entry's deviation)


# why a headline is reconstructed, not paper-scale (issue 32, item 3; fedbench.claims.fidelity)
# none now: every placeholder the issue-32 review listed is a study's claim (issue 32, item 4); a claim a paper makes that
# no study judges yet is added here, with its rule, before any run
HEADLINES: tuple[Headline, ...] = ()


def headline_entries() -> list[dict[str, Any]]:
    """The HEADLINES as not-implemented entries (fedbench.claims.entry.not_implemented: no command would judge
    them yet, so no coverage figure counts them), each saying what is missing."""
    out = []
    for h in HEADLINES:
        e = new_entry(id=h.id, paper=h.paper, where=h.where, claim_text=h.claim,
                      published={"value": None, "unit": h.unit, "scope": h.where, "statement": h.statement},
                      rule=h.rule, scale={}, deviations=[h.note] if h.note else [], figure=None, fidelity=h.fidelity,
                      rounds_run=None,
                      rounds_paper=h.rounds_paper, training_seeds=[], data_seeds=[])
        out.append(not_implemented(e, h.missing) | {"command": None, "cost": None})
    return out

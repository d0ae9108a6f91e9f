"""``fedbench show --claims``: the claims of ``reports/claims.json``, one line each, under a header that counts
them by verdict and by fidelity; ``--verbose`` adds each claim's observation, rule and deviations; filters by
paper, verdict and fidelity. The commands that run the not-run claims are listed once each, with their cost.
Reads only the JSON file (no torch, no pandas): it answers at once."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from fedbench.claims.entry import FIDELITIES, VERDICTS
from fedbench.errors import ConfigError, DataError

WIDTH = 150  # a claim's line is at most this long


def paper_name(claim: dict[str, Any]) -> str:
    """The paper's short name: the citation's part before the colon (``FedProx``, ``SCAFFOLD``, ...)."""
    return claim["paper"].split(":", 1)[0].strip()


def _count(claims: list[dict[str, Any]], key: str, order: tuple[str, ...]) -> str:
    counts = Counter(c[key] for c in claims)
    return ", ".join(f"{counts[v]} {v}" for v in order if counts[v])


def _pick(name: str, value: str | None, known: list[str]) -> str | None:
    """``value`` as spelled in ``known`` (case-insensitive), or a ConfigError naming the known ones."""
    if value is None:
        return None
    match = [k for k in known if k.lower() == value.lower()]
    if not match:
        raise ConfigError(f"--{name} {value!r} is not known; known: {', '.join(known)}")
    return match[0]


def show_claims(path: Path, paper: str | None = None, verdict: str | None = None, fidelity: str | None = None,
                verbose: bool = False) -> list[str]:
    """The lines ``fedbench show --claims`` prints for ``path`` (claims.json) with the filters given."""
    if not Path(path).exists():
        raise DataError(f"no {path}: run `dvc repro` (or `fedbench report`) first")
    claims = json.loads(Path(path).read_text())["claims"]
    paper = _pick("paper", paper, sorted({paper_name(c) for c in claims}, key=str.lower))
    verdict = _pick("verdict", verdict, list(VERDICTS))
    fidelity = _pick("fidelity", fidelity, list(FIDELITIES))
    chosen = [c for c in claims if (paper is None or paper_name(c) == paper)
              and (verdict is None or c["verdict"] == verdict) and (fidelity is None or c["fidelity"] == fidelity)]
    scope = ", ".join(f"{k} {v}" for k, v in (("paper", paper), ("verdict", verdict), ("fidelity", fidelity)) if v)
    lines = [f"{len(chosen)} claims{f' ({scope})' if scope else ''}: {_count(chosen, 'verdict', VERDICTS) or 'none'}"
             f"   ({path})"]
    for fid in FIDELITIES:
        of = [c for c in chosen if c["fidelity"] == fid]
        if of:
            lines.append(f"  {fid + ':':<15}{_count(of, 'verdict', VERDICTS)}")
    idw = max((len(c["id"]) for c in chosen), default=0)
    for c in chosen:
        head = f"{c['verdict']:<15}{c['fidelity']:<14}{c['id']:<{idw}}  "
        tail = f"-> {c['command']}" if c.get("command") else c["observed"]
        lines.append(head + textwrap.shorten(tail, max(20, WIDTH - len(head)), placeholder=" ..."))
        if verbose:
            for label, text in (("observed", c["observed"]), ("rule", c["rule"]),
                                ("deviations", "; ".join(c.get("deviations") or []) or "none"),
                                ("where", f"{c['paper']}, {c['where']}")):
                lines += textwrap.wrap(f"{label}: {text}", WIDTH, initial_indent="    ", subsequent_indent="      ")
    commands: dict[str, dict[str, Any]] = {}
    for c in chosen:
        if c.get("command"):
            entry = commands.setdefault(c["command"], {"claims": 0, "cost": c.get("cost") or {}})
            entry["claims"] += 1
    if commands:
        lines.append(f"not-run claims run by {len(commands)} commands (each asks before it starts; `fedbench paper "
                     "list` has the costs):")
        for command, e in commands.items():
            cost = e["cost"]
            hours = (f"projected {cost['hours']:g} h on {cost['device']}" if "hours" in cost else
                     f"measured {cost['seconds']:,} s on {cost['device']}" if "seconds" in cost else "cost not projected")
            lines.append(f"  command: {command}  ({e['claims']} claims; {hours})")
    return lines

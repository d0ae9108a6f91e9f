"""The report against git's committed one: what a fresh `make repro` reproduced, what moved and why, and what was
kept from elsewhere with the commands that compute it here (issue 52 item 2).

:func:`compare` reads two lists of entries (this build's claims.json and the committed one) and says, in a few
lines: how many counted verdicts this build computed and found as committed (the same verdict; "to the digit" where
the numbers are equal too), the verdicts that moved, each with its reason where one is known (its rule changed; its
confirmation changed; the same verdict with other last digits: another CPU's; the runs' numbers differ), the verdicts
kept from elsewhere (not computed here: machine, commit and date are in claims.json) and the commands that compute them
here, each once with its cost. The report stage prints it last (fedbench.report.build); ``python -m
fedbench.report.compare [--out reports]`` prints it for a report already built.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from fedbench.claims.entry import UNJUDGED
from fedbench.claims.tally import counted_effect, counted_verdict
from fedbench.report.origin import computed_here

DIGITS = 1e-3  # relative difference of two effects below which only the last digits moved (another CPU's kernels)


def committed_claims(path: Path, rev: str = "HEAD") -> list[dict[str, Any]] | None:
    """The entries of ``path`` (a claims.json inside a git checkout) as committed at ``rev``; None where git, the
    checkout or the committed file is missing."""
    path = Path(path).resolve()
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=path.parent, capture_output=True, text=True,
                             timeout=30, check=False)
        if top.returncode:
            return None
        rel = path.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
        shown = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=path.parent, capture_output=True, text=True,
                               timeout=60, check=False)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return json.loads(shown.stdout)["claims"] if shown.returncode == 0 else None


def _estimate(e: dict[str, Any]) -> float | None:
    effect = counted_effect(e) or {}
    x = effect.get("estimate")
    return None if x is None or isinstance(x, str) else float(x)


def _close(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=DIGITS, abs_tol=1e-9)


def reason(new: dict[str, Any], old: dict[str, Any]) -> str:
    """Why ``new``'s counted verdict differs from ``old``'s (the committed one), as far as the entries tell."""
    if new.get("rule") != old.get("rule"):
        return "its rule changed"
    confirmed = [(e.get("registration") or {}).get("confirmatory") for e in (new, old)]
    if bool(confirmed[0]) != bool(confirmed[1]) or (all(confirmed) and confirmed[0].get("seeds") !=
                                                    confirmed[1].get("seeds")):
        return "its confirmation changed"
    if new["verdict"] in UNJUDGED:
        return "not run here, and not kept (its rule differs from the committed verdict's)"
    if old["verdict"] in UNJUDGED:
        return "run here, not run in the committed report"
    if _close(_estimate(new), _estimate(old)):
        return "the same effect to 3 digits: another CPU's last digits at the verdict's edge"
    return "the runs' numbers differ (another CPU, or code that changed them)"


def compare(new: list[dict[str, Any]], old: list[dict[str, Any]] | None, against: str = "git's committed report") \
        -> list[str]:
    """The lines saying how ``new`` (this build's entries) stands against ``old`` (the committed ones)."""
    if old is None:
        return [f"No comparison: {against} is not there (no git checkout, or no committed claims.json)."]
    before = {e["id"]: e for e in old}
    here = [e for e in new if computed_here(e)]
    same = [e for e in here if e["id"] in before and counted_verdict(before[e["id"]]) == counted_verdict(e)]
    digits = [e for e in same if not _close(_estimate(e), _estimate(before[e["id"]])) and _estimate(e) is not None]
    moved = [(e, before[e["id"]]) for e in new if e["id"] in before
             and counted_verdict(before[e["id"]]) != counted_verdict(e)]
    kept = [e for e in new if (e.get("provenance") or {}).get("carried")]
    unrun = [e for e in new if e["verdict"] in UNJUDGED]
    lines = [f"Against {against}: {len(here)} verdicts computed here, {len(same)} of them as committed"
             + (f" ({len(digits)} with an effect that moved beyond 3 digits, the verdict unchanged: "
                f"{', '.join(e['id'] for e in digits)})" if digits else "")
             + f"; {len(kept)} kept from elsewhere (not run here; machine, commit and date in claims.json); "
             f"{len(unrun)} not run; {len(moved)} moved."]
    for e, o in moved:
        lines.append(f"  moved: {e['id']}: {counted_verdict(o)} -> {counted_verdict(e)} ({reason(e, o)})")
    added = [e["id"] for e in new if e["id"] not in before]
    gone = [i for i in before if i not in {e["id"] for e in new}]
    if added or gone:
        lines.append(f"  {len(added)} entries new here, {len(gone)} committed entries no longer declared"
                     + (f": {', '.join(gone)}" if gone else ""))
    commands: dict[str, list[dict[str, Any]]] = {}
    for e in kept:
        if e.get("command"):
            commands.setdefault(e["command"], []).append(e)
    if commands:
        lines.append("To compute the kept verdicts here (each command asks before it starts), then `dvc repro`:")
        for command, entries in commands.items():
            lines.append(f"  {command}  # {len(entries)} claim{'' if len(entries) == 1 else 's'}; "
                         f"{cost_words(entries[0])}")
    rest = {e["command"] for e in unrun if e.get("command") and e["command"] not in commands}
    if rest:
        lines.append(f"The not-run claims run by {len(rest)} more command{'' if len(rest) == 1 else 's'}: "
                     "`fedbench show --claims` lists them with their cost.")
    return lines


def cost_words(e: dict[str, Any]) -> str:
    """An entry's command cost in a few words."""
    cost = e.get("cost") or {}
    if "hours" in cost:
        return f"{cost['hours']:,g} h ({'measured' if cost.get('source') == 'measured' else 'projected'})"
    if "seconds" in cost:
        return f"{cost['seconds']:,} s (measured)"
    return "cost not measured"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fedbench.report.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="reports", help="the report folder whose claims.json is compared (default: reports)")
    p.add_argument("--rev", default="HEAD", help="the git revision of the committed report (default: HEAD)")
    a = p.parse_args(argv)
    path = Path(a.out) / "claims.json"
    if not path.is_file():
        print(f"no {path}: build the report first (`fedbench report` or `dvc repro`)", file=sys.stderr)
        return 2
    new = json.loads(path.read_text())["claims"]
    try:
        print("\n".join(compare(new, committed_claims(path, a.rev), f"the report committed at {a.rev}")))
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        sys.stderr.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``fedbench show --claims``: the claims of ``reports/claims.json`` for a person at a terminal.

First the counts, from the one tally (fedbench.claims.tally: the sentence claims.md opens with, then each fidelity
class), then one line a claim: the verdict the tally counts (the confirmatory one where it exists), that verdict's own
effect with its 95% interval, and the id. Last, the commands that run the not-run claims, once each, with their cost.
``--verbose`` adds under each claim its fidelity, the exploratory verdict and effect beside the counted ones, or why
it did not run and the full command that runs it. Everything fits the terminal's width
(shutil.get_terminal_size, 100 columns where the output is no terminal): prose is wrapped, never cut, and a command
or an id is never broken: one longer than the width sits alone on its line. ``--verbose`` also adds each claim's
observation, rule, deviations, place in the paper and what would change its verdict; filters by paper, verdict
and fidelity. Reads only the JSON file (no torch, no pandas, no scipy): it answers at once."""

from __future__ import annotations

import math
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

from fedbench.claims import entry as schema
from fedbench.claims.magnitude import sensitivity_of
from fedbench.claims.stats import fmt_effect
from fedbench.claims.tally import DEFINITION, counted_effect, counted_verdict, is_confirmed, tally, words
from fedbench.errors import ConfigError, DataError, read_json

FALLBACK_WIDTH = 100  # columns where the output is not a terminal (a pipe, a file)
INDENT = "    "  # a claim's details under its line


def terminal_width() -> int:
    """The terminal's width in columns (COLUMNS where set), FALLBACK_WIDTH where the output is no terminal."""
    return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns


def paper_name(claim: dict[str, Any]) -> str:
    """The paper's short name: the citation's part before the colon (``FedProx``, ``SCAFFOLD``, ...)."""
    return claim["paper"].split(":", 1)[0].strip()


def _pick(name: str, value: str | None, known: list[str]) -> str | None:
    """``value`` as spelled in ``known`` (case-insensitive), or a ConfigError naming the known ones."""
    if value is None:
        return None
    match = [k for k in known if k.lower() == value.lower()]
    if not match:
        raise ConfigError(f"--{name} {value!r} is not known; known: {', '.join(known)}")
    return match[0]


def _wrap(text: str, width: int, indent: str = "", more: str | None = None) -> list[str]:
    """``text`` wrapped to ``width`` (words longer than a line sit alone on theirs, unbroken; a count stays on the
    line of the word it counts: "24 not-run", never "24" / "not-run")."""
    glued = re.sub(r"(?<![\w.])(\d[\d,]*) (?=[a-z])", "\\1\0", text)
    lines = textwrap.wrap(glued, width, initial_indent=indent, subsequent_indent=indent if more is None else more,
                          break_long_words=False, break_on_hyphens=False) or [indent.rstrip()]
    return [line.replace("\0", " ") for line in lines]


def effect_text(effect: dict[str, Any] | None) -> str:
    """'+9.37 [+0.929, +17.8] accuracy points': fedbench.claims.stats.fmt_effect's text of the effect as JSON holds it
    (infinite bounds as the strings "inf"/"-inf"), 'n/a' without one."""
    if not effect or effect.get("estimate") is None:
        return "n/a"

    def number(x: Any) -> Any:
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(x, x) if isinstance(x, str) else x
    ci = effect.get("ci95")
    return fmt_effect(effect | {"estimate": number(effect["estimate"]),
                                "ci95": None if ci is None else [number(v) for v in ci]})


def _clauses(text: str) -> list[str]:
    """``text`` split at its '; ' outside parentheses and backquotes."""
    out, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return out + [text[start:]]


def why_not_run(c: dict[str, Any]) -> str:
    """Why a not-run claim did not run: its note (``observed``), less the clauses that name its command (the row
    shows the command and the closing list its cost), and less the leading "not run" that its verdict says."""
    note = c.get("observed") or "no reason recorded"
    command = c.get("command")
    kept = [part for part in _clauses(note) if not (command and command in part)] or [note]
    why = "; ".join(kept)
    for lead in ("not run: ", "not run, and ", "not implemented: "):
        if why.startswith(lead):
            return why[len(lead):]
    return why


def claim_lines(c: dict[str, Any], width: int, verdict_w: int, effect_w: int, verbose: bool = False) -> list[str]:
    """A claim's line: the verdict the tally counts (the confirmatory one where it exists), that verdict's own effect
    with its 95% interval, and the id (alone on the next line where the three do not fit). ``verbose`` adds, indented,
    the fidelity, the exploratory verdict and effect beside the counted ones, and for a not-run claim why and the
    command that runs it."""
    effect = counted_effect(c) if c["verdict"] not in schema.UNJUDGED else None
    shown = compact_effect(effect) if effect else "—"
    head = f"{counted_verdict(c):<{verdict_w}}{shown:<{effect_w - 2}}  "
    lines = [head + c["id"]] if len(head) + len(c["id"]) <= width else [head.rstrip(), INDENT + c["id"]]
    if not verbose:
        return lines
    reading = sensitivity_of(c["id"])
    note = f"sensitivity reading of {reading}, not counted; " if reading else ""
    lines += _wrap(f"{note}fidelity: {c['fidelity']}", width, INDENT, INDENT + "  ")
    if c["verdict"] not in schema.UNJUDGED:
        own = c.get("effect") or {}
        part = f" ({own['part']})" if own.get("part") and len(c.get("parts") or []) > 1 else ""
        if is_confirmed(c):  # judged again by its frozen rule on fresh seeds (fedbench claims confirm)
            seeds = c["registration"]["confirmatory"]["seeds"]
            data = c["registration"]["confirmatory"].get("data_seeds")
            drawn = f" and data draws {data[0]}-{data[-1]}" if data else ""
            lines += _wrap(f"counted: confirmatory on fresh seeds {seeds[0]}-{seeds[-1]}{drawn}: {counted_verdict(c)}, "
                           f"{effect_text(effect)}", width, INDENT, INDENT + "  ")
            lines += _wrap(f"exploratory: {c['verdict']}, {effect_text(own)}{part}", width, INDENT, INDENT + "  ")
        else:
            lines += _wrap(f"effect: {effect_text(own)}{part}", width, INDENT, INDENT + "  ")
        return lines
    lines += _wrap(f"{'missing' if c['verdict'] == schema.NOT_IMPLEMENTED else 'why'}: {why_not_run(c)}",
                   width, INDENT, INDENT + "  ")
    if c.get("command"):
        lines.append(f"{INDENT}run: {c['command']}")  # never wrapped: it is copied into a shell
    return lines


def compact_effect(effect: dict[str, Any]) -> str:
    """'+9.37 [+0.929, +17.8]': an effect and its interval without the unit (the verbose lines give it)."""
    text = effect_text(effect)
    unit = effect.get("unit") or ""
    return text[: -len(unit)].rstrip() if unit and text.endswith(unit) else text


def cost_text(cost: dict[str, Any]) -> str:
    """A command's cost as its entries carry it: hours (measured or projected) or measured seconds, the device and
    the date where given."""
    date = f", {cost['date']}" if cost.get("date") else ""
    if "hours" in cost:
        kind = "measured" if cost.get("measured") or cost.get("source") == "measured" else "projected"
        return f"{kind} {cost['hours']:,g} h on {cost['device']}{date}"
    if "seconds" in cost:
        return f"measured {cost['seconds']:,} s on {cost['device']}{date}"
    return "cost not projected"


def show_claims(path: Path, paper: str | None = None, verdict: str | None = None, fidelity: str | None = None,
                verbose: bool = False, width: int | None = None) -> list[str]:
    """The lines ``fedbench show --claims`` prints for ``path`` (claims.json) with the filters given, each at most
    ``width`` columns (default: the terminal's) but for a command or an id longer than that, alone on its line."""
    if not Path(path).exists():
        raise DataError(f"no {path}: run `dvc repro` (or `fedbench report`) first")
    width = max(40, width or terminal_width())
    claims = read_json(path, "claims", "rebuild it: `fedbench report` (or `dvc repro`)")["claims"]
    paper = _pick("paper", paper, sorted({paper_name(c) for c in claims}, key=str.lower))
    verdict = _pick("verdict", verdict, list(schema.VERDICTS))
    fidelity = _pick("fidelity", fidelity, list(schema.FIDELITIES))
    chosen = [c for c in claims if (paper is None or paper_name(c) == paper)
              and (verdict is None or counted_verdict(c) == verdict) and (fidelity is None or c["fidelity"] == fidelity)]
    t = tally(chosen)
    scope = ", ".join(f"{k} {v}" for k, v in (("paper", paper), ("verdict", verdict), ("fidelity", fidelity)) if v)
    lines = _wrap(f"{path}{f' ({scope})' if scope else ''}: {t.summary()}", width)
    lines += _wrap(f"{DEFINITION}.", width)
    label_w = max(len(f) for f in (*t.by_fidelity, "sensitivity readings")) + 3
    rows = [(f, t.by_fidelity[f]) for f in (*schema.PAPER_DATA, *t.apart) if sum(t.by_fidelity[f].values())]
    for name, counts in rows + ([("sensitivity readings", t.readings)] if sum(t.readings.values()) else []):
        lines += _wrap(f"  {name + ':':<{label_w}}{words(counts, t.verdicts, zeros=False)}", width, "", " " * (2 + label_w))
    if t.not_implemented:  # counted in no figure above: their number, once (fedbench.claims.tally)
        lines += _wrap(f"  {'not implemented:':<{label_w}}{len(t.not_implemented)} (no command would judge them)", width,
                       "", " " * (2 + label_w))
    verdict_w = max(len(v) for v in schema.VERDICTS) + 2
    effect_w = 2 + max([len(compact_effect(e)) for c in chosen if c["verdict"] not in schema.UNJUDGED
                        and (e := counted_effect(c))] or [1])
    lines.append("")
    for c in chosen:
        lines += claim_lines(c, width, verdict_w, min(effect_w, 28), verbose)
        if verbose:
            for label, text in (("observed", c["observed"]), ("rule", c["rule"]),
                                ("deviations", "; ".join(c.get("deviations") or []) or "none"),
                                ("where", f"{c['paper']}, {c['where']}"),
                                ("would change the verdict", c.get("would_change") or "-")):
                lines += _wrap(f"{label}: {text}", width, INDENT, INDENT + "  ")
    commands: dict[str, dict[str, Any]] = {}
    for c in chosen:
        if c.get("command"):
            entry = commands.setdefault(c["command"], {"claims": 0, "cost": c.get("cost") or {}})
            entry["claims"] += 1
    if commands:
        lines += [""] + _wrap(f"The not-run claims above run by {len(commands)} commands (each asks before it "
                              "starts; `fedbench paper list` has every study's cost):", width)
        for command, e in commands.items():
            lines.append(f"  {command}")  # never wrapped: it is copied into a shell
            n = e["claims"]
            lines += _wrap(f"{n} claim{'' if n == 1 else 's'}; {cost_text(e['cost'])}", width, INDENT + "  ")
    return lines

"""The one tally of claim entries: what counts toward a headline, and the counts every reader quotes
(`fedbench show --claims`, ``claims.md`` and ``metrics.json`` of the report stage, the README).

What counts toward a headline, the one definition (:data:`DEFINITION`, :func:`toward_headline`):

- the entry is a claim's own, not a sensitivity reading (an id with fedbench.claims.magnitude.SENSITIVITY: the
  claim judged by its own rule with one setting changed, shown beside its claim and never counted), and
- it is judged on the paper's own data: its fidelity is one of fedbench.claims.entry.PAPER_DATA (paper-scale,
  reduced-budget, reduced-data).

Each entry is counted by the verdict :func:`counted_verdict` gives: its confirmatory verdict where it has one (its
claim judged again by its frozen rule on seeds that did not exist when the rule was frozen, issue 32 item 1:
fedbench.claims.registry.confirm; the report stage puts it in the entry's ``registration``, and only while the frozen
hash still matches, so a rule changed since freezing is counted by its exploratory verdict again), else its exploratory
verdict. A rule written after its data was seen is tested only by the confirmation, so where one exists it is what a
headline quotes; the exploratory verdict stays beside it in claims.md. A claim not confirmed yet (frozen, not yet run;
a deterministic study's, where a rerun repeats the same numbers) keeps its exploratory verdict, and the summary says
how many entries were counted by a confirmatory verdict whenever any was.

Every other entry is counted apart: the claims of every other fidelity class (reconstructed, stand-in, smoke-check,
analytic: fedbench.claims.entry.FIDELITIES less PAPER_DATA) in their own fidelity columns, the sensitivity readings
on their own line. An entry with verdict not-implemented (fedbench.claims.entry.NOT_IMPLEMENTED: no command would
judge it yet) is counted in no coverage figure: not a claim, not toward the headline, in no fidelity class; it is
only listed, by id, and its number said once (issue 32, item 4). Every other verdict is counted over
fedbench.claims.entry.VERDICTS as it stands when a tally is made, so a verdict added there is tallied, and shown by
every reader, with no change here. Torch-free; imports nothing from fedbench.studies or fedbench.report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedbench.claims import entry as schema
from fedbench.claims.magnitude import sensitivity_of

_APART = tuple(f for f in schema.FIDELITIES if f not in schema.PAPER_DATA)
DEFINITION = ("A headline counts the claims judged on the papers' own data (fidelity "
              + ", ".join(schema.PAPER_DATA[:-1]) + f" or {schema.PAPER_DATA[-1]}); "
              + ", ".join(_APART[:-1]) + f" and {_APART[-1]} claims are counted apart, and sensitivity readings (a "
              "claim judged by its own rule with one setting changed) are shown beside their claim and not counted; "
              "each entry is counted by its confirmatory verdict (judged again by its frozen rule on fresh seeds) "
              "where it has one, else by its exploratory verdict; an entry that no command would judge yet is listed "
              "as not implemented and counted in no coverage figure")


def counted_verdict(e: dict[str, Any]) -> str:
    """The verdict entry ``e`` is counted by: its confirmatory verdict where its registration carries one (valid: the
    frozen hash still matches), else its own (exploratory) verdict."""
    confirmed = (e.get("registration") or {}).get("confirmatory")
    return confirmed["verdict"] if confirmed else e["verdict"]


def counted_effect(e: dict[str, Any]) -> dict[str, Any] | None:
    """The effect of the verdict entry ``e`` is counted by: its confirmatory run's (estimate, 95% interval and unit,
    with ``confirmatory`` True) where it has one, else its own effect (exploratory); None where neither exists."""
    confirmed = (e.get("registration") or {}).get("confirmatory")
    if confirmed:
        if confirmed.get("estimate") is None:
            return None
        return {k: confirmed.get(k) for k in ("estimate", "ci95", "unit")} | {"confirmatory": True}
    return e.get("effect") or None


def is_confirmed(e: dict[str, Any]) -> bool:
    """Whether entry ``e`` is counted by a confirmatory verdict."""
    return bool((e.get("registration") or {}).get("confirmatory"))


def is_reading(e: dict[str, Any]) -> bool:
    """Whether entry ``e`` is a sensitivity reading (shown beside its claim, never counted)."""
    return sensitivity_of(e["id"]) is not None


def toward_headline(e: dict[str, Any]) -> bool:
    """Whether entry ``e`` counts toward a headline (:data:`DEFINITION`)."""
    return not is_reading(e) and e["fidelity"] in schema.PAPER_DATA and e["verdict"] != schema.NOT_IMPLEMENTED


@dataclass(frozen=True)
class Tally:
    """Verdict counts of a list of entries. ``verdicts``: the verdict vocabulary counted (VERDICTS when the tally
    was made, less not-implemented); ``by_fidelity``: the claims (sensitivity readings and not-implemented entries
    left out) of each fidelity class, by verdict; ``readings``: the sensitivity readings by verdict;
    ``not_implemented``: the ids of the entries no command would judge yet, counted in no figure but their own.
    Every count is there, zero included."""

    verdicts: tuple[str, ...]
    by_fidelity: dict[str, dict[str, int]]
    readings: dict[str, int]
    not_implemented: tuple[str, ...] = ()
    confirmed: int = 0  # entries counted by a confirmatory verdict
    confirmed_headline: int = 0  # of them, claims counted toward the headline
    exploratory_headline: dict[str, int] | None = None  # the headline's claims by their exploratory verdicts

    @property
    def headline(self) -> dict[str, int]:
        """The claims counted toward a headline (the papers' own data), by verdict."""
        return {v: sum(self.by_fidelity[f][v] for f in schema.PAPER_DATA) for v in self.verdicts}

    @property
    def apart(self) -> tuple[str, ...]:
        """The fidelity classes counted apart, never toward a headline."""
        return tuple(f for f in self.by_fidelity if f not in schema.PAPER_DATA)

    @property
    def claims(self) -> int:
        """How many claims (sensitivity readings left out), of every fidelity."""
        return sum(sum(c.values()) for c in self.by_fidelity.values())

    @property
    def entries(self) -> int:
        """How many entries in all: the claims, the sensitivity readings and the not-implemented entries."""
        return self.claims + sum(self.readings.values()) + len(self.not_implemented)

    def metrics(self) -> dict[str, Any]:
        """The counts as the report stage's metrics.json holds them (DVC metrics: numbers only, nested): the counted
        ones, how many entries (and of them toward the headline) a confirmatory verdict counts (``confirmed``), and the
        headline's claims by their exploratory verdicts (``headline_exploratory``) beside the counted ones."""
        return {"entries": self.entries, "claims": self.claims, "headline": self.headline,
                "by_fidelity": self.by_fidelity, "sensitivity_readings": self.readings,
                "not_implemented": len(self.not_implemented),
                "confirmed": {"entries": self.confirmed, "headline": self.confirmed_headline},
                "headline_exploratory": self.exploratory_headline or dict.fromkeys(self.verdicts, 0)}

    def headline_text(self) -> str:
        """'14 reproduced, 4 not-reproduced, ... (64 claims on the papers' own data)': every verdict, zeros too."""
        return f"{words(self.headline, self.verdicts)} ({sum(self.headline.values())} claims on the papers' own data)"

    def apart_text(self) -> str:
        """The counts kept apart: each other fidelity class and the sensitivity readings, those present only."""
        parts = [f"{f}: {words(self.by_fidelity[f], self.verdicts, zeros=False)}" for f in self.apart
                 if sum(self.by_fidelity[f].values())]
        if sum(self.readings.values()):
            parts.append(f"sensitivity readings: {words(self.readings, self.verdicts, zeros=False)}")
        return "; ".join(parts) or "none"

    def summary(self) -> str:
        """The one sentence that quotes the counts (claims.md's and show's headline, the README's quote)."""
        n, m = sum(self.readings.values()), len(self.not_implemented)
        kinds = [f"{self.claims} claims"] + ([f"{n} sensitivity readings"] if n else []) + (
            [f"{m} not implemented (no command would judge them; counted in no figure here)"] if m else [])
        listed = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " and " + kinds[-1]
        return (f"{self.entries} entries: {listed}"
                + f". Toward the headline: {self.headline_text()}. Counted apart: {self.apart_text()}."
                + (f" Counted by a confirmatory verdict (judged again by its frozen rule on fresh seeds): "
                   f"{self.confirmed} of the {self.entries} entries, {self.confirmed_headline} of them toward the "
                   "headline; every other entry by its exploratory verdict." if self.confirmed else ""))


def words(counts: dict[str, int], verdicts: tuple[str, ...], zeros: bool = True) -> str:
    """'11 reproduced, 3 not-reproduced, ...' in the order of ``verdicts`` (the zero counts left out unless
    ``zeros``; 'none' where nothing is left)."""
    return ", ".join(f"{counts[v]} {v}" for v in verdicts if zeros or counts[v]) or "none"


def tally(entries: list[dict[str, Any]]) -> Tally:
    """The :class:`Tally` of ``entries`` (claim entries, or dicts with at least their id, verdict and fidelity). A
    verdict or fidelity outside the entry model's vocabulary is a ValueError naming the entry and what is allowed."""
    known, fidelities = tuple(schema.VERDICTS), tuple(schema.FIDELITIES)
    verdicts = tuple(v for v in known if v != schema.NOT_IMPLEMENTED)
    by_fidelity = {f: dict.fromkeys(verdicts, 0) for f in fidelities}
    readings = dict.fromkeys(verdicts, 0)
    missing = []
    for e in entries:
        if e["verdict"] not in known:
            raise ValueError(f"{e['id']}: verdict {e['verdict']!r} is not one of {', '.join(known)}")
        if e["fidelity"] not in fidelities:
            raise ValueError(f"{e['id']}: fidelity {e['fidelity']!r} is not one of {', '.join(fidelities)}")
        if e["verdict"] == schema.NOT_IMPLEMENTED:
            missing.append(e["id"])
            continue
        verdict = counted_verdict(e)
        if verdict not in verdicts:
            raise ValueError(f"{e['id']}: confirmatory verdict {verdict!r} is not one of {', '.join(verdicts)}")
        (readings if is_reading(e) else by_fidelity[e["fidelity"]])[verdict] += 1
    confirmed = [e for e in entries if e["verdict"] != schema.NOT_IMPLEMENTED and is_confirmed(e)]
    exploratory = dict.fromkeys(verdicts, 0)
    for e in filter(toward_headline, entries):
        exploratory[e["verdict"]] += 1
    return Tally(verdicts, by_fidelity, readings, tuple(missing), len(confirmed), sum(map(toward_headline, confirmed)),
                 exploratory)

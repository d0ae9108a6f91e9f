"""How an effect with its interval becomes a verdict, how the parts of a claim combine, and how sensitive the
verdict is to the reading rule and the round budget.

Every rule is written down before the result it judges is looked at (fedbench.claims.registry records when);
the paper's published number never enters it. These rules are a claim's direction part; a claim with a
published number also has a magnitude part, which uses that number by definition (fedbench.claims.magnitude).
Convention: an entry carries both (entry["direction"], entry["magnitude"], each with its verdict and rule), and
its "verdict" is the direction verdict unless the claim is about the size itself (then both must hold).

A rule compares the 95% interval of a paired effect (fedbench.claims.stats) with zero or with a stated
threshold:

    kind       the paper says          reproduced             not-reproduced            otherwise
    greater    effect > d (d = 0: the  low > d                high < d                  inconclusive
               sign; d > 0 only where
               the paper states d)
    at_least   effect >= -m            low > -m               high < -m                 inconclusive
    at_most    effect <= b             high < b               low > b                   inconclusive
    within     |effect| < m            -m < low, high < m     low >= m or high <= -m    inconclusive

A threshold is the paper's or none: a direction rule tests the sign, or a threshold the paper itself states, and
no smallest effect chosen by this project (issue 32). The margins of equivalence claims ("within", "at_most": "rather
robust", "similar", "competitive", "matches", "unaffected") are numbers no paper states: they are declared
``chosen`` and counted without (issue 51, item 4; below). A claim that states a number is judged on that number by its magnitude part
(fedbench.claims.magnitude): its direction alone earns "direction-only", not "reproduced". Rule history: a
``greater`` rule with d > 0 was first reproduced when low > 0 and high >= d (the size only not excluded); the
project-chosen d of FedProx's headline (5 points), MNIST-5k's gain (5) and FedLaAvg's gains (1) let a size claim
pass on its direction, so those rules test the sign now and ``greater`` with d > 0 needs the interval above d.

A part's interval is the paired effect of fedbench.claims.stats over the seeds (the seed is the unit, a share's
too: fedbench.claims.stats.share_effect). Level (issue 51, item 3): a rule is stated at a level (``Rule.level``,
95%), and an interval whose actual coverage is below it (an order-statistic interval of 5 seeds covers 93.75%)
cannot meet it: the part is inconclusive, whatever its ends, and says that more seeds are needed
(fedbench.claims.stats.meets_level). A deterministic value (no seed randomness) is exact.

Thresholds chosen by this project (issue 51, item 4): a rule whose threshold the paper does not state is marked
``chosen`` (the margins of "rather robust", "similar", "competitive", "matches", "unaffected"). Its part is judged
twice: without the threshold (d = 0), which is what counts, and with it, which is reported beside it (a note and a
sensitivity cell "with this project's thresholds"). Without a margin an equivalence ("within") can be refuted (the
interval excludes 0) but never shown.

Each part also carries ``p_rule``: the p-value of the test its decision rests on (the t-test or sign test of the
per-seed values against the edge the verdict crossed; for "within", the larger of the two one-sided tests, doubled),
below 0.05 exactly when the part is decided at 95%; :func:`claim_p` combines the parts' into the claim's, and
:func:`holm_family` adjusts a family of claims (the headline entries) by Holm's step-down procedure.

A claim with several parts (datasets, straggler levels) is reproduced when every part is, not-reproduced when
some part is, inconclusive otherwise. The part that decides is reported as the claim's ``effect``.

Budget: a run at fewer rounds than the paper's ("reduced-budget") cannot refute a statement about the paper's
budget while its trend could still get there. For a not-reproduced part, the estimate's change from 50% to 100%
of the rounds run (one doubling of the rounds) is carried on at the same step per doubling up to the paper's
budget (log2(paper's rounds / rounds run) more doublings); if that extrapolated value would no longer be
not-reproduced under the part's rule, the part becomes inconclusive (budget-limited). Rule history: the first
version capped on any movement toward the paper's side; on the main job a 0.9-point drift of a 56-point effect
(FedAvg's loss at 90% stragglers on IID data) then flipped a verdict, so the trend must now be able to reach
the rule's threshold (this change makes caps rarer: it moves verdicts away from the paper, not toward it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fedbench.claims.fidelity import FULL_SEEDS, label as fidelity  # noqa: F401 (the labelling rule, issue 32)
import numpy as np

from fedbench.claims.stats import (CONFIDENCE, Share, scipy_stats, fmt_number, holm, meets_level, paired_effect,
                                   share_effect, sign_test)

KINDS = ("greater", "at_least", "at_most", "within")
MORE_SEEDS = "the interval covers less than the rule's level: more seeds are needed"  # Rule.verdict's why
VERDICT_ORDER = {"not-reproduced": 0, "inconclusive": 1, "direction-only": 2, "reproduced": 3, "not-run": -1}
BUDGETS = (0.25, 0.5, 1.0)  # fractions of the rounds run at which every empirical claim is also judged


@dataclass(frozen=True)
class Rule:
    """One part's decision rule: ``kind`` (KINDS) and its ``threshold`` (d, m or b of the table above, in
    ``unit``); ``share``: the per-seed values are a share of that many cases (bounded, discrete; the seed is the
    unit all the same); ``level``: the coverage its interval must have (an interval covering less cannot decide);
    ``chosen``: the threshold is this project's, not the paper's (the counted rule is :meth:`counted`, d = 0)."""

    kind: str
    threshold: float = 0.0
    unit: str = ""
    share: Share | None = None
    level: float = CONFIDENCE
    chosen: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"rule kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        if self.kind in ("greater", "at_least", "within") and self.threshold < 0:
            raise ValueError(f"a {self.kind} rule needs a threshold >= 0, got {self.threshold}")
        if not 0.5 < self.level < 1:
            raise ValueError(f"a rule's level must lie in (0.5, 1), got {self.level}")
        if self.chosen and self.threshold == 0:
            raise ValueError("a rule marked chosen needs the threshold this project chose (d != 0)")

    def counted(self) -> Rule:
        """The rule that counts: this one, or without this project's threshold where it is ``chosen`` (d = 0)."""
        return Rule(self.kind, 0.0, self.unit, self.share, self.level) if self.chosen else self

    def _t(self, x: float) -> str:
        return f"{fmt_number(x, signed=True)}{' ' + self.unit if self.unit else ''}"

    def effect(self, values, deterministic: bool = False) -> dict[str, Any]:
        """The effect of one part's per-seed ``values`` with the interval this rule reads."""
        if self.share is not None:
            return share_effect(values, self.share, self.unit)
        return paired_effect(values, self.unit, deterministic=deterministic)

    def text(self) -> str:
        if self.chosen:
            return (self.counted().text() + f" (counted: without a threshold; this project's threshold, which the paper "
                                            f"does not state, is judged beside it and not counted: {self._text()})")
        return self._text() + (f" ({self.share.text()})" if self.share is not None else "")

    def _text(self) -> str:
        d = self.threshold
        if self.kind == "within" and d == 0:
            return ("without a margin: not-reproduced if the 95% interval lies wholly on one side of 0 (a difference "
                    "shown), never reproduced (no equivalence can be shown without a margin)")
        if self.kind == "greater":
            if d == 0:
                return "reproduced if the 95% interval lies above 0, not-reproduced if it lies below 0"
            return (f"reproduced if the 95% interval lies above {self._t(d)}, not-reproduced if it lies below "
                    f"{self._t(d)}")
        if self.kind == "at_least":
            return (f"reproduced if the 95% interval lies above {self._t(-d)} (the margin), not-reproduced if it "
                    f"lies below it")
        if self.kind == "at_most":
            return f"reproduced if the 95% interval lies below {self._t(d)}, not-reproduced if it lies above it"
        return (f"reproduced if the 95% interval lies within +-{fmt_number(d)}{' ' + self.unit if self.unit else ''}, "
                f"not-reproduced if it lies wholly outside")

    def verdict(self, effect: dict[str, Any]) -> str:
        """This rule's verdict of ``effect``: :meth:`side` of its interval, where the interval is at the rule's level
        (fedbench.claims.stats.meets_level); inconclusive where it covers less (:data:`MORE_SEEDS`) or is missing."""
        ci = effect.get("ci95")
        if ci is None or not meets_level(effect, self.level):
            return "inconclusive"
        return self.side(*map(float, ci))

    def side(self, lo: float, hi: float) -> str:
        """Where the interval [lo, hi] lies against this rule's threshold (the table of the module docstring)."""
        d = self.threshold
        if self.kind == "within" and d == 0:
            return "not-reproduced" if lo > 0 or hi < 0 else "inconclusive"
        if self.kind == "greater":
            return "reproduced" if lo > d else "not-reproduced" if hi < d else "inconclusive"
        if self.kind == "at_least":
            return "reproduced" if lo > -d else "not-reproduced" if hi < -d else "inconclusive"
        if self.kind == "at_most":
            return "reproduced" if hi < d else "not-reproduced" if lo > d else "inconclusive"
        return "reproduced" if -d < lo and hi < d else "not-reproduced" if lo >= d or hi <= -d else "inconclusive"

    def p_value(self, effect: dict[str, Any]) -> float | None:
        """The p-value of the test this rule's decision of ``effect`` rests on, from its per-seed values: the paired
        t-test (a t interval) or the sign test (an order-statistic interval) of the values against the edge the
        verdict is decided at (greater d, at_least -d, at_most d; within: both +-d, the larger of the two one-sided
        p-values doubled while the estimate lies inside, the nearer edge otherwise). Below 1 - level exactly when the
        interval lies on one side of that edge. None for a deterministic value (exact: no test) or no values."""
        test = str(effect.get("test", ""))
        values = [float(x) for x in effect.get("per_seed") or [] if x is not None and not math.isnan(float(x))]
        if test.startswith("none (deterministic") or len(values) < 2:
            return None
        d = self.threshold
        edge = {"greater": d, "at_least": -d, "at_most": d}.get(self.kind)
        centre = float(np.median(values)) if not all(map(math.isfinite, values)) else float(np.mean(values))

        def p_at(e: float) -> float:
            if test.startswith("paired t-test"):
                v = np.asarray(values)
                se = float(v.std(ddof=1)) / math.sqrt(len(v))
                return float(2 * scipy_stats.t.sf(abs(float(v.mean()) - e) / se, len(v) - 1)) if se > 0 else 0.0
            return sign_test([x - e for x in values])

        if edge is not None:
            return p_at(edge)
        if d > 0 and -d < centre < d:
            return min(1.0, max(p_at(-d), p_at(d)))
        return p_at(d if centre >= 0 else -d)

    def toward_paper(self, before: float | None, after: float | None) -> bool:
        """Whether an estimate moving from ``before`` to ``after`` moved toward the paper's side."""
        if before is None or after is None or math.isnan(before) or math.isnan(after) or before == after:
            return False
        if self.kind in ("greater", "at_least"):
            return after > before
        if self.kind == "at_most":
            return after < before
        return abs(after) < abs(before)

    def slack(self, effect: dict[str, Any]) -> float:
        """How far the interval is from changing this part's verdict, in units of its half-width (smaller: a
        closer call)."""
        ci = effect.get("ci95")
        if ci is None:
            return 0.0
        lo, hi = map(float, ci)
        half = max((hi - lo) / 2, 1e-12) if math.isfinite(hi - lo) else math.inf
        d = self.threshold
        edges = {"greater": [lo - d, hi - d], "at_least": [lo + d, hi + d], "at_most": [d - hi, d - lo],
                 "within": [lo + d, d - hi, lo - d, -d - hi]}[self.kind]
        dist = min(abs(e) for e in edges)
        return dist / half if math.isfinite(half) else 0.0

    def would_change(self, effect: dict[str, Any], verdict: str) -> str:
        """What would change ``verdict`` (this rule's verdict of ``effect``), with the current interval ends."""
        ci = effect.get("ci95")
        if ci is None:
            return "no interval (one seed): more seeds would be needed for any verdict but inconclusive"
        if not meets_level(effect, self.level):
            cov = effect.get("coverage")
            return (f"{MORE_SEEDS}: its {'stated' if cov is None else f'{float(cov):.2%}'} coverage is below the "
                    f"rule's {self.level:.0%} (at least 6 seeds for an order-statistic interval); now it would read "
                    f"{self.side(*map(float, ci))}")
        lo, hi = (fmt_number(float(x), signed=True) for x in ci)
        d, u = self.threshold, f" {self.unit}" if self.unit else ""
        t = fmt_number(d, signed=True)
        mt = fmt_number(-d, signed=True)
        if str(effect.get("test", "")).startswith("none (deterministic"):  # a value, no interval
            edge = {"greater": f"{t}" if d else "0", "at_least": mt, "at_most": t, "within": f"+-{fmt_number(d)}"}
            other = "not-reproduced" if verdict == "reproduced" else "reproduced"
            return f"{other} if the value crossed {edge[self.kind]}{u} (now {lo}{u}; deterministic)"
        if self.kind == "greater":
            edge = f"{t}{u}" if d else "0"
            return {"reproduced": f"inconclusive if the interval's low end fell to {edge} or below (now {lo}{u})",
                    "not-reproduced": f"inconclusive if the interval's high end reached {t}{u} (now {hi}{u})",
                    "inconclusive": f"reproduced if the interval's low end rose above {edge} (now {lo}{u}); "
                                    f"not-reproduced if its high end fell below {t}{u} (now {hi}{u})"}[verdict]
        if self.kind == "at_least":
            return {"reproduced": f"inconclusive if the interval's low end fell to {mt}{u} or below (now {lo}{u})",
                    "not-reproduced": f"inconclusive if the interval's high end reached {mt}{u} (now {hi}{u})",
                    "inconclusive": f"reproduced if the interval's low end rose above {mt}{u} (now {lo}{u}); "
                                    f"not-reproduced if its high end fell below {mt}{u} (now {hi}{u})"}[verdict]
        if self.kind == "at_most":
            return {"reproduced": f"inconclusive if the interval's high end reached {t}{u} (now {hi}{u})",
                    "not-reproduced": f"inconclusive if the interval's low end fell to {t}{u} or below (now {lo}{u})",
                    "inconclusive": f"reproduced if the interval's high end fell below {t}{u} (now {hi}{u}); "
                                    f"not-reproduced if its low end rose above {t}{u} (now {lo}{u})"}[verdict]
        return {"reproduced": f"inconclusive if the interval reached +-{fmt_number(d)}{u} (now [{lo}, {hi}]{u})",
                "not-reproduced": f"inconclusive if the interval reached back inside +-{fmt_number(d)}{u} "
                                  f"(now [{lo}, {hi}]{u})",
                "inconclusive": f"reproduced if the interval shrank inside +-{fmt_number(d)}{u}; not-reproduced if "
                                f"it lay wholly outside (now [{lo}, {hi}]{u})"}[verdict]


@dataclass(frozen=True)
class Part:
    """One part of a claim: a label ("90% stragglers"), its rule, and the unit of its per-seed values."""

    label: str
    rule: Rule

    @property
    def unit(self) -> str:
        return self.rule.unit


@dataclass(frozen=True)
class Fixed:
    """A part read once, from no seed: one deterministic value (None where there is none), e.g. a property of a
    step-size selection, judged beside a claim's seeded parts. Its verdict joins the claim's at every reading and budget;
    it decides the claim's effect and what would change it only where it changes the verdict. ``note``: words added to
    its rule's; ``missing``: what would change the verdict where it has no value."""

    part: Part
    value: float | None
    note: str = ""
    missing: str = ""

    def joined(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` (:func:`judge`'s) with this part judged beside its parts."""
        rule, label = self.part.rule, self.part.label
        effect = rule.effect([] if self.value is None else [self.value], deterministic=True)
        verdict = rule.verdict(effect)
        combined = combine([result["verdict"], verdict])
        out = result | {"parts": [*result["parts"], {"part": label, "rule": rule.text() + self.note, "verdict": verdict,
                                                     **effect}],
                        "verdict": combined,
                        "sensitivity": [c | {"verdict": combine([c["verdict"], verdict])} for c in result["sensitivity"]]}
        if combined != result["verdict"]:  # this part decides
            out["effect"] = {"part": label, **effect}
            out["would_change"] = f"{label}: " + (rule.would_change(effect, verdict) if effect["ci95"] else self.missing)
        return out


def combine(verdicts: Sequence[str]) -> str:
    """Every part reproduced: reproduced; some part not-reproduced: not-reproduced; else inconclusive."""
    if not verdicts:
        return "not-run"
    if all(v == "reproduced" for v in verdicts):
        return "reproduced"
    return "not-reproduced" if any(v == "not-reproduced" for v in verdicts) else "inconclusive"


def often(verdicts: Sequence[str]) -> str:
    """A claim that holds "often" (Mime's "FedAvg is often even worse than the server-only baselines"): reproduced if
    some part is reproduced and none is not-reproduced, not-reproduced if every part is, else inconclusive."""
    if not verdicts:
        return "not-run"
    if all(v == "not-reproduced" for v in verdicts):
        return "not-reproduced"
    return "reproduced" if "reproduced" in verdicts and "not-reproduced" not in verdicts else "inconclusive"


def generally(verdicts: Sequence[str]) -> str:
    """A claim that holds "generally" (FedLaAvg's Table 3 trends): reproduced if every part is, not-reproduced if
    every part is, else inconclusive."""
    if not verdicts:
        return "not-run"
    return next((v for v in ("reproduced", "not-reproduced") if all(x == v for x in verdicts)), "inconclusive")


# How the parts of a claim combine into its verdict, by name: the function that combines them and its words, which
# are the rule text's (a claim's rule is generated from its data: :func:`rule_text`); "every" is :func:`judge`'s own
COMBINES: dict[str, tuple[Callable[[Sequence[str]], str], str]] = {
    "every": (combine, "reproduced if every part is, not-reproduced if one is, inconclusive otherwise"),
    "often": (often, ("'often': reproduced if some part is reproduced and none is not-reproduced, not-reproduced "
                      "if every part is, inconclusive otherwise")),
    "generally": (generally, ("'generally': reproduced if every part is, not-reproduced if every part is, "
                              "inconclusive otherwise")),
}


def rule_text(effect: str, rules: Sequence[tuple[str, Rule]], combination: str = "every", notes: str = "") -> str:
    """A claim's rule in words, generated from its data (fedbench.study.declaration.Claim): ``effect`` (what one
    part's per-seed value is, and how it is read), each group of parts with the :class:`Rule` that judges it
    (``rules``: (which parts, e.g. "each level", or "" for a claim of one part; its rule)), how the parts combine
    (``combination``: a name of :data:`COMBINES`; said only where there is more than one part) and ``notes`` (what is
    reported and not judged, the rule's history). Each part's decision is said by its rule's own :meth:`Rule.text`,
    the object the study judges it with (a claim with a published number is also judged on its size: fedbench.claims.
    magnitude)."""
    if not effect or not rules:
        raise ValueError("a rule needs its effect and at least one (parts, Rule)")
    if combination not in COMBINES:
        raise ValueError(f"combination {combination!r}; allowed: {', '.join(COMBINES)}")
    said = "; ".join(f"{which}: {rule.text()}" if which else rule.text() for which, rule in rules)
    several = len(rules) > 1 or bool(rules[0][0])
    text = f"{effect}; {said}" + (f"; the claim: {COMBINES[combination][1]}" if several else "")
    return text + (f". {notes}" if notes else "")


def inconclusive_parts(result: dict[str, Any], labels: Sequence[str], note: str, would_change: str) -> dict[str, Any]:
    """``result`` (:func:`judge`'s) with the parts named in ``labels`` inconclusive whatever their interval, ``note``
    saying why (for instance a mechanism that cannot act within the rounds run), and the verdict recombined; where the
    verdict changes, the effect is the deciding part's (one that has the new verdict) and ``would_change`` replaces
    the result's. ``result`` itself when ``labels`` is empty."""
    if not labels:
        return result
    parts = [p | {"verdict": "inconclusive"} if p["part"] in labels else p for p in result["parts"]]
    verdict = combine([p["verdict"] for p in parts])
    effect = result["effect"]
    if verdict != result["verdict"]:
        effect = {k: v for k, v in next(p for p in parts if p["verdict"] == verdict).items()
                  if k not in ("rule", "verdict")}
    return result | {"parts": parts, "verdict": verdict, "effect": effect, "notes": [*result.get("notes", []), note],
                     "would_change": result["would_change"] if verdict == result["verdict"] else would_change}


Measure = Callable[[str, float], Sequence[Sequence[float | None]]]
WITH_CHOSEN = "with this project's thresholds"  # the sensitivity cell of a claim judged with its chosen thresholds


def _rounded(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


def judge(parts: Sequence[Part], measure: Measure, primary: str, readings: Sequence[str] = (),
          budgets: Sequence[float] = BUDGETS, paper_budget: float = 1.0, deterministic: bool = False,
          reading_names: dict[str, str] | None = None) -> dict[str, Any]:
    """Judge a claim: ``measure(reading, budget)`` gives, for each part, the per-seed paired values read with
    ``reading`` from the runs cut at ``budget`` (a fraction of the rounds run). The verdict uses ``primary`` at
    the full budget (with the budget rule of the module docstring when ``paper_budget``, the paper's rounds over
    the rounds run, exceeds 1); the other ``readings`` at
    the full budget and the ``primary`` reading at each smaller budget are the sensitivity.

    Returns {"verdict", "effect" (the deciding part's effect, with "part"), "parts", "sensitivity",
    "would_change", "budget_note" (the budget rule, where it applied), "notes" (e.g. a real effect smaller than
    the threshold that counts)}."""
    names = reading_names or {}

    def evaluate(reading: str, budget: float) -> list[tuple[Part, dict[str, Any], str]]:
        values = measure(reading, budget)
        if len(values) != len(parts):
            raise ValueError(f"measure gave {len(values)} parts for {len(parts)}")
        out = []
        for part, vals in zip(parts, values):
            rule = part.rule.counted()
            effect = rule.effect(vals, deterministic=deterministic)
            effect["p_rule"] = _rounded(rule.p_value(effect))
            out.append((part, effect, rule.verdict(effect)))
        return out

    full = evaluate(primary, 1.0)
    notes = []
    if paper_budget > 1.0 and 0.5 in budgets:
        half = evaluate(primary, 0.5)
        doublings = math.log2(paper_budget)
        capped = []
        for (part, effect, v), (_, effect_half, _) in zip(full, half):
            now, before = effect["estimate"], effect_half["estimate"]
            if v == "not-reproduced" and part.rule.counted().toward_paper(before, now) and math.isfinite(now - before):
                projected = now + doublings * (now - before)
                if part.rule.counted().side(projected, projected) != "not-reproduced":
                    notes.append(f"{part.label or 'the effect'}: not-reproduced at the rounds run, but its estimate moved "
                                 f"from {fmt_number(before, signed=True)} (50% of the rounds) to "
                                 f"{fmt_number(now, signed=True)} {part.unit}; at that pace it would reach "
                                 f"{fmt_number(projected, signed=True)} {part.unit} at the paper's budget: inconclusive "
                                 "(budget-limited)")
                    v = "inconclusive"
            capped.append((part, effect, v))
        full = capped
    verdict = combine([v for *_, v in full])
    for part, effect, v in full:
        ci = effect.get("ci95")
        rule = part.rule.counted()
        if ci is not None and not meets_level(effect, rule.level) and rule.side(*map(float, ci)) != "inconclusive":
            notes.append(f"{part.label or 'the effect'}: {MORE_SEEDS} (its interval covers "
                         f"{float(effect.get('coverage') or 0):.2%}, the rule is stated at {rule.level:.0%}; it would "
                         f"read {rule.side(*map(float, ci))})")
        if v == "not-reproduced" and part.rule.counted().kind == "greater" and part.rule.counted().threshold > 0 \
                and ci is not None and float(ci[0]) > 0:
            notes.append(f"{part.label or 'the effect'}: real (interval above 0) but below the "
                         f"{fmt_number(part.rule.threshold, signed=True)} {part.unit} the paper states")
    deciding = _deciding(full, verdict)
    part, effect, v = deciding
    would = part.rule.counted().would_change(effect, v)
    if len(full) > 1:
        would = f"{part.label}: {would}" + ("; every other part also has to hold" if verdict == "reproduced" else "")
    sensitivity = [_cell(names.get(primary, primary), 1.0, full, verdict, primary=True)]
    for reading in readings:
        if reading != primary:
            cells = evaluate(reading, 1.0)
            sensitivity.append(_cell(names.get(reading, reading), 1.0, cells, combine([c[2] for c in cells])))
    for budget in budgets:
        if budget < 1.0:
            cells = evaluate(primary, budget)
            sensitivity.append(_cell(names.get(primary, primary), budget, cells, combine([c[2] for c in cells])))
    if any(p.rule.chosen for p in parts):  # this project's thresholds: judged beside, never counted (item 4)
        cells = [(p, e, p.rule.verdict(e)) for p, e, _ in full]
        with_them = combine([c[2] for c in cells])
        notes.append(f"with this project's thresholds (not stated by the paper; not counted): {with_them}, against "
                     f"{verdict} without them")
        sensitivity.append(_cell(WITH_CHOSEN, 1.0, cells, with_them))
    budget_notes = [n for n in notes if "budget-limited" in n]
    return {"verdict": verdict, "effect": {"part": part.label, **effect},
            "parts": [{"part": p.label, "rule": p.rule.text(), "verdict": pv, **e} for p, e, pv in full],
            "sensitivity": sensitivity, "would_change": would, "budget_note": "; ".join(budget_notes) or None,
            "notes": [n for n in notes if n not in budget_notes]}


def _deciding(cells: list[tuple[Part, dict[str, Any], str]], verdict: str) -> tuple[Part, dict[str, Any], str]:
    """The part that decides the verdict: the closest call among the parts whose verdict is the claim's (for a
    reproduced claim: the part nearest to losing it)."""
    same = [c for c in cells if c[2] == verdict] or cells
    return min(same, key=lambda c: c[0].rule.counted().slack(c[1]))


def _cell(reading: str, budget: float, cells, verdict: str, primary: bool = False) -> dict[str, Any]:
    part, effect, _ = _deciding(cells, verdict)
    return {"reading": reading, "budget": budget, "primary": primary, "verdict": verdict, "part": part.label,
            "estimate": effect["estimate"], "ci95": effect["ci95"], "unit": effect["unit"]}



def recombined(result: dict[str, Any], alone: Sequence[dict[str, Any]], parts: Sequence[Part],
               combination: str) -> dict[str, Any]:
    """``result`` (:func:`judge`'s, which combines the parts by "every") with its ``parts`` combined by the claim's
    declared ``combination`` (a name of :data:`COMBINES`) instead: the verdict from the parts' verdicts; each
    sensitivity cell's verdict from the same cell of each part judged alone (``alone``: :func:`judge`'s result of
    each part by itself, in order), its deciding part the closest call among those with that verdict; the effect and
    what would change the verdict the closest call's, with the combination's words; a note where the combination
    turns the verdict "every" would give."""
    how, words = COMBINES[combination]
    verdict = how([p["verdict"] for p in result["parts"]])
    cells = []
    for j, cell in enumerate(result["sensitivity"]):
        own = [(part, a["sensitivity"][j]) for part, a in zip(parts, alone)]
        v = how([c["verdict"] for _, c in own])
        _, deciding = min([pc for pc in own if pc[1]["verdict"] == v] or own,
                          key=lambda pc: pc[0].rule.counted().slack(pc[1]))
        cells.append(cell | {"verdict": v, **{k: deciding[k] for k in ("part", "estimate", "ci95", "unit")}})
    part, e = min([pe for pe in zip(parts, result["parts"]) if pe[1]["verdict"] == verdict]
                  or list(zip(parts, result["parts"])), key=lambda pe: pe[0].rule.counted().slack(pe[1]))
    turned = [f"{words}: the parts read {', '.join(p['verdict'] for p in result['parts'])}, so {verdict}"] \
        if verdict != result["verdict"] else []
    return result | {"verdict": verdict, "effect": {k: v for k, v in e.items() if k not in ("rule", "verdict")},
                     "sensitivity": cells, "notes": [*result["notes"], *turned],
                     "would_change": f"{e['part']}: {part.rule.counted().would_change(e, e['verdict'])}; {words}"}


DECIDED = ("reproduced", "not-reproduced", "direction-only")  # the verdicts a test decides (Holm adjusts them)


def combination_of(rule_words: str) -> str:
    """The combination a claim's words state (:data:`COMBINES`' words in :func:`rule_text`), "every" where none."""
    return next((name for name, (_, words) in COMBINES.items() if name != "every" and words in rule_words), "every")


def claim_p(parts: Sequence[dict[str, Any]], verdict: str, combination: str = "every") -> float | None:
    """The p-value a claim's ``verdict`` rests on, from its judged ``parts`` (each with "verdict" and "p_rule", None
    for a deterministic part: exact, read as 0). Every part holding (reproduced under "every", either verdict under
    "generally", not-reproduced under "often") is an intersection-union test: the largest of the parts' p-values. One
    part deciding among k (not-reproduced under "every", reproduced under "often") is a union: the smallest,
    Bonferroni-adjusted (k times, at most 1). None where nothing was decided (inconclusive, not-run) or a deciding part
    has no p-value recorded."""
    if verdict == "direction-only":
        verdict = "reproduced"  # the direction's decision; the size part is the magnitude's
    if verdict not in DECIDED or not parts:
        return None
    if any("p_rule" not in p for p in parts if p.get("verdict") == verdict):
        return None
    ps = [float(p["p_rule"] or 0.0) for p in parts if p.get("verdict") == verdict]
    if not ps:
        return None
    union = (combination == "every" and verdict == "not-reproduced") or (combination == "often" and verdict == "reproduced")
    return min(1.0, len(parts) * min(ps)) if union else max(ps)


def holm_family(rows: Sequence[dict[str, Any]], alpha: float = 1 - CONFIDENCE) -> list[dict[str, Any]]:
    """Holm's step-down adjustment over a family of claims (issue 51, item 3). ``rows``: {"id", "verdict", "p"} (p:
    :func:`claim_p`; None for a claim that decided nothing, read as 1, or a decided claim with no p-value recorded).
    Returns each row with "family" (the family's size m: every row), "p_holm" (the adjusted p-value; None where p is)
    and "holm_verdict": the verdict where its adjusted p-value is below ``alpha``, inconclusive where it is not (the
    claim's decision does not survive the family's multiplicity), "no p-value recorded" where a decided claim has
    none, the verdict itself where it decided nothing."""
    m = len(rows)
    adjusted = holm([1.0 if r.get("p") is None else float(r["p"]) for r in rows])
    out = []
    for r, q in zip(rows, adjusted):
        decided = r["verdict"] in DECIDED
        if not decided:
            holm_verdict = r["verdict"]
        elif r.get("p") is None:
            holm_verdict = "no p-value recorded"
        else:
            holm_verdict = r["verdict"] if q < alpha else "inconclusive"
        out.append({**r, "family": m, "p_holm": None if r.get("p") is None else _rounded(q),
                    "holm_verdict": holm_verdict})
    return out


def holm_headline(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The headline family's Holm-adjusted verdicts, one row per headline entry (fedbench.claims.tally.toward_headline)
    by its counted verdict (the confirmatory one where the entry's registration carries one, whose record states
    "p_claim"; else the exploratory verdict with :func:`claim_p` of its parts): :func:`holm_family`'s rows, each with
    "source" ("confirmatory" or "exploratory"). The report renders "family" (m) and "holm_verdict" beside each
    headline verdict."""
    from fedbench.claims.tally import counted_verdict, is_confirmed, toward_headline  # tally reads entries only

    rows = []
    for e in entries:
        if not toward_headline(e) or e["verdict"] in ("not-run",):
            continue
        if is_confirmed(e):
            p = e["registration"]["confirmatory"].get("p_claim")
            rows.append({"id": e["id"], "verdict": counted_verdict(e), "p": p, "source": "confirmatory"})
        else:
            p = claim_p(e.get("parts") or [], e["verdict"], combination_of(e.get("rule") or ""))
            rows.append({"id": e["id"], "verdict": e["verdict"], "p": p, "source": "exploratory"})
    return holm_family(rows)

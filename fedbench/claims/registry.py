"""Registered rules: per claim id, a content hash of its rule, the commit it was registered on and the date,
kept in a committed file (fedbench/claims/registry.json) that only ``fedbench claims register`` writes, never
the report (issue 21, "Registration"; a pre-registration as in registered reports).

What a claim registers (:func:`rule_spec`, hashed by :func:`content_hash`): its rule text, its parts with
their rule kinds and thresholds (each part's rule text states both), its primary reading and the other readings
and budgets it is read at, the runs it reads (the scale, seeds, rounds run and the paper's), and its published
value with the magnitude part chosen for it (fedbench.claims.magnitude). A claim registered before its first
run has no parts or readings yet: they are recorded when it is first judged, and filling them in is no change.
A paper-scale study that has not run declares its runs and seeds (fedbench.studies.real_data.not_run_entry: its
Scales in the scale, the paper budget's seeds), so the hash covers them and changing them before any run is a
change; when it first runs, its scale is stated anew (no change), but its seeds and the paper's rounds must be
the declared ones.

:func:`status` compares an entry with its registration: "registered" (the hash matches, or only fields that
were empty at registration are now filled), "changed" (a registered field differs: the report shows the
registered rule's verdict beside the new one), or "unregistered". ``register`` adds claims not yet registered,
and records, for every claim whose registration still matches, the verdict it has now (so a later change keeps
the verdict of the registered rule); a changed claim is re-registered only with the reason (``--why``): its old
registration moves to its ``history`` with that verdict, the date and the reason.

A history record (``history``: the rules a claim had before its registered one, oldest first) has the keys
rule (its text), registered (commit or "never committed" and where it is described), changed (commit and date),
why, verdict (the original rule's verdict), verdict_source (how it was found: computed from the current runs,
or the committed reports/claims.json of that time, with its commit) and optionally reading: a sensitivity
reading of the current entry that is the original rule, whose verdict the report reads live.

A rule's words are generated from its data (fedbench.study.declaration.Claim: its effect, rules, combination and
notes; issue 30, item 3). Where the words alone change, everything else a claim registers is the same and the words
state the same decision (:func:`decision_words`: each part's rule and the combination), :func:`reword` (``register
--reworded --why``) re-keys its registration to the new words instead of re-registering it: its registration and a
confirmation frozen on it stand; the old words and hashes are kept under ``rewordings``.

Frozen rules and confirmatory verdicts (issue 32, item 1: a rule written after its data was seen is judged again
on data that did not exist when it was frozen). :func:`freeze` records, before anything runs, a claim's frozen
hash (:func:`frozen_hash`: its rule spec without the seeds, which the confirmation replaces), the commit, the
date and a block of fresh confirm seeds (:func:`fresh_seeds`: from CONFIRM_START up, none that any run of any
claim, any tuning or selection seed, or any earlier frozen block has used). :func:`confirm` judges a claim rerun
on exactly those seeds by the frozen rule and records its ``confirmatory`` verdict beside the exploratory
``verdict``; it refuses in one line when the rule's hash has changed since freezing (:func:`check_frozen`). A later
change of the rule (``register --why``) moves the frozen block and the confirmatory verdict into the history: the
confirmation is void until the rule is frozen and confirmed again; :func:`status` reports a confirmation only
while the frozen hash still matches. A claim of a study with no seed randomness is marked DETERMINISTIC
(:func:`mark_deterministic`) instead of frozen: nothing new would be learnt from a rerun. ``fedbench claims confirm``
(fedbench.studies.confirm) freezes, reruns and records.

Shown by git (issue 51, items 1 and 7): the registry's own words about itself prove nothing; the repository's history
does. :func:`audit` (``fedbench claims audit``) marks each confirmation "shown" only where the history holds its
frozen block in a commit that is an ancestor of, and not, the first commit with a result on its seeds
(:func:`preregistration`); :func:`status` counts only those (``confirmatory``; a not-shown one is
``unshown_confirmatory``), and a fresh block skips every seed any commit recorded a result on or froze
(:func:`history_seeds`). ``before_result`` falls to False where the history holds a result of the claim from before
its registration. :func:`check_rewordings` marks each rewording the same decision only where :func:`decision_words`
reads the same decision on both sides; every other one is a rule change, listed by :func:`disclosures`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedbench.claims.entry import UNJUDGED
from fedbench.claims.magnitude import magnitude_of

REGISTRY = Path(__file__).with_name("registry.json")
CONFIRM_START = 1000  # confirm seeds come from here up: every run so far used seeds below 1000 (judged 0-4,
# tuning and selection 100-102); fresh_seeds skips any used seed all the same
SPEC_KEYS = ("rule", "parts", "primary", "readings", "budgets", "runs", "published", "magnitude")
DETERMINISTIC = "deterministic: no seeds to confirm"  # a claim of a study with no seed randomness (seeds=()): a
# rerun gives the same numbers, so a confirmation on fresh seeds would be a copy, not a new test
FILLED_AT_JUDGEMENT = ("parts", "primary", "readings", "budgets")  # empty when registered before any run


def rule_spec(entry: dict[str, Any]) -> dict[str, Any]:
    """What ``entry`` registers: everything that decides its verdict, nothing it observed."""
    cells = entry.get("sensitivity") or []
    primary = next((c["reading"] for c in cells if c.get("primary")), None)
    pub = (entry.get("published") or {}).get("value")
    return {
        "rule": entry.get("rule") or "",
        "parts": [[p["part"], p["rule"]] for p in entry.get("parts") or []],
        "primary": primary,
        "readings": sorted({c["reading"] for c in cells if c["budget"] == 1.0}),
        "budgets": sorted({float(c["budget"]) for c in cells}),
        "runs": {"scale": entry.get("scale") or {}, "seeds": entry.get("seeds") or {},
                 "rounds_run": entry.get("rounds_run"), "rounds_paper": entry.get("rounds_paper")},
        "published": pub,
        "magnitude": magnitude_of(entry["id"]).spec() if pub is not None else None,
    }


def content_hash(spec: dict[str, Any]) -> str:
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def load(path: str | Path = REGISTRY) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        return {}
    try:
        body = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e.msg}, line {e.lineno}); restore it from git, or give the "
                         "registry with --registry") from None
    if not isinstance(body, dict) or not all(isinstance(v, dict) and "hash" in v for v in body.values()):
        raise ValueError(f"{path}: expected {{claim id: {{hash, commit, date, spec, ...}}}}; restore it from git")
    return body


def changed_fields(registered: dict[str, Any], now: dict[str, Any], judged: bool = True) -> list[str]:
    """The registered fields that ``now`` differs in (a field empty at registration and filled at the first
    judgement is no change; an entry not ``judged`` (not-run: a study not run here) states no readings, and its
    runs only where it declares them (a paper-scale study's runs and seeds), so those are compared, its rule and
    published value always)."""
    out = []
    for k in SPEC_KEYS:
        before = registered.get(k)
        if k in FILLED_AT_JUDGEMENT and (before in (None, [], {}) or not judged):
            continue
        if k == "runs" and not judged and not _declares_runs(now.get(k) or {}):
            continue
        if k == "runs" and not judged and before:  # a not-run entry ran no rounds (fedbench.claims.entry.not_run):
            before = {**before, "rounds_run": None}  # what it will run is its scale, compared as registered
        if k == "runs" and before and before.get("rounds_run") is None and (now.get(k) or {}).get("rounds_run") is not None:
            if _declared_runs_differ(before, now[k]):  # registered before it ran, now judged
                out.append(k)
            continue
        if json.dumps(before, sort_keys=True, default=str) != json.dumps(now.get(k), sort_keys=True, default=str):
            out.append(k)
    return out


def _declares_runs(runs: dict[str, Any]) -> bool:
    """Whether a not-run entry declares the runs it will read: it names their seeds (a paper-scale study's
    entries do; an opt-in study's placeholder names only the study)."""
    return any((runs.get("seeds") or {}).values())


def _declared_runs_differ(before: dict[str, Any], now: dict[str, Any]) -> bool:
    """Whether a claim registered before it ran (``before``: runs with no rounds run) ran other runs than it
    declared (``now``: the runs it was judged on). Its scale is stated when it first runs (filling it in is no
    change); the seeds it declared, each list that was not empty, and the paper's rounds must be the ones run."""
    seeds_then, seeds_now = before.get("seeds") or {}, now.get("seeds") or {}
    return (any(seeds_then.get(k) and list(seeds_then[k]) != list(seeds_now.get(k) or []) for k in ("training", "data"))
            or before.get("rounds_paper") != now.get("rounds_paper"))


def status(entry: dict[str, Any], registry: dict[str, Any]) -> dict[str, Any]:
    """The registration of ``entry``: {"status", "hash" (now), "registered" (hash, commit, date, before_result),
    "changed_fields", "registered_verdict" (the last verdict recorded under the registered rule), "history"}."""
    spec = rule_spec(entry)
    now = content_hash(spec)
    reg = registry.get(entry["id"])
    if reg is None:
        return {"status": "unregistered", "hash": now, "registered": None, "changed_fields": [],
                "registered_verdict": None, "history": [], "rewordings": []}
    fields = [] if reg["hash"] == now else changed_fields(reg.get("spec") or {}, spec, entry.get("verdict") not in UNJUDGED)
    frozen, confirmed, fixed = reg.get("frozen"), reg.get("confirmatory"), reg.get("deterministic")
    holds = frozen is not None and frozen["hash"] == frozen_hash(entry)
    counted = holds and counted_confirmation(confirmed)
    return {"status": "changed" if fields else "registered", "hash": now,
            "registered": {k: reg.get(k) for k in ("hash", "commit", "date", "before_result")},
            "changed_fields": fields, "registered_verdict": reg.get("verdict"),
            "history": [resolve(h, entry) for h in reg.get("history", [])],
            "rewordings": [{k: r[k] for k in ("changed", "why", "decision") if k in r} for r in reg.get("rewordings", [])],
            "frozen": frozen if holds else None,
            "confirmatory": confirmed if counted else None,  # what the tally counts: shown pre-registered by git
            "unshown_confirmatory": confirmed if holds and confirmed and not counted else None,
            "earlier_blocks": reg.get("earlier_blocks", []),
            "confirmation": (DETERMINISTIC if fixed is not None and fixed["hash"] == frozen_hash(entry) else
                             "none (not frozen)" if frozen is None else
                             "void (the rule changed since it was frozen)" if not holds else
                             "confirmed" if counted else
                             f"confirmed on seeds {seeds_text(confirmed['seeds'])}, not counted: pre-registration "
                             f"{confirmed.get('registration') or 'not shown: not audited (fedbench claims audit)'}"
                             if confirmed else f"frozen, not yet run (seeds {seeds_text(frozen['seeds'])})")}


def resolve(record: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """A history record with its verdict read live where it names a sensitivity reading of ``entry`` (the
    original rule computed from the current runs), else as recorded."""
    reading = record.get("reading")
    if reading:
        cell = next((c for c in entry.get("sensitivity") or [] if c["reading"] == reading and c["budget"] == 1.0), None)
        if cell is not None:
            return record | {"verdict": cell["verdict"], "estimate": cell.get("estimate"), "ci95": cell.get("ci95"),
                             "unit": cell.get("unit", "")}
    return record


def register(entries: list[dict[str, Any]], registry: dict[str, Any], commit: str, date: str, why: str = "",
             ids: list[str] | None = None, report: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with ``entries`` registered on ``commit`` (only ``ids`` if given) and the list of what was
    done; the verdicts recorded are those of the report ``entries`` come from (``report``: the commit of that
    claims.json, default ``commit``). A changed claim needs ``why``; without it, ValueError naming the claims and
    the fields that changed."""
    seen = report or commit
    out = {k: dict(v) for k, v in registry.items()}
    done, refused = [], []
    chosen = [e for e in entries if ids is None or e["id"] in ids]
    if ids is not None and (unknown := sorted(set(ids) - {e["id"] for e in chosen})):
        raise ValueError(f"claim ids not in the claims read: {', '.join(unknown)}")
    for e in chosen:
        if e.get("verdict") is None or e["id"].endswith("/*"):  # a study that has not run: nothing to register
            continue
        spec, st = rule_spec(e), status(e, registry)
        if st["status"] == "changed" and not why:
            refused.append(f"{e['id']} ({', '.join(st['changed_fields'])})")
            continue
        judged = e["verdict"] not in UNJUDGED
        if st["status"] == "unregistered":
            out[e["id"]] = {"hash": content_hash(spec), "commit": commit, "date": date, "before_result": not judged,
                            "spec": spec, "verdict": _verdict(e, seen, date) if judged else None, "history": []}
            done.append(f"registered {e['id']}")
        elif st["status"] == "changed":
            old = out[e["id"]]
            record = {"rule": (old.get("spec") or {}).get("rule", ""), "hash": old["hash"],
                      "registered": old.get("commit"), "changed": f"{commit} {date}", "why": why,
                      "fields": st["changed_fields"],
                      "verdict": (old.get("verdict") or {}).get("verdict"),
                      "verdict_source": ("the last verdict recorded under it: " + _source(old["verdict"]))
                      if old.get("verdict") else "none recorded (the rule changed before any verdict was recorded)"}
            for key in ("frozen", "confirmatory", "deterministic", "rewordings"):  # a rule changed after freezing voids
                if old.get(key):  # its confirmation; the words it had before its registered ones stay with it
                    record[key] = old[key]
            out[e["id"]] = {"hash": content_hash(spec), "commit": commit, "date": date, "before_result": not judged,
                            "spec": spec, "verdict": _verdict(e, seen, date) if judged else None,
                            "history": [*old.get("history", []), record]}
            done.append(f"re-registered {e['id']} ({', '.join(st['changed_fields'])}): {why}")
        else:
            if spec != out[e["id"]].get("spec"):  # parts and readings filled in at the first judgement
                out[e["id"]]["spec"] = spec
            if judged:
                out[e["id"]]["verdict"] = _verdict(e, seen, date)
    if refused:
        raise ValueError("rule changed since registration, re-register with --why REASON: " + "; ".join(refused))
    return out, done


def reword(entries: list[dict[str, Any]], registry: dict[str, Any], commit: str, date: str, why: str,
           ids: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with the claims of ``entries`` whose rule changed in its words alone re-keyed to the new words, and
    the list of what was done (issue 30, item 3: a rule's words are generated from its data, so rewording them is no
    change of the rule). A claim qualifies where its entry, put back in the words it was registered with, is
    registered (:func:`status`): everything else its registration holds (parts with their rules, primary reading,
    readings, budgets, runs, published value, magnitude part) is unchanged; it keeps its registration (commit, date,
    before_result, verdict, history). Its frozen block, confirmatory verdict or deterministic mark is kept only where
    it was frozen on exactly this rule in the old words (its frozen hash is that of the entry with the registered
    words), and is re-keyed with it. Each rewording is recorded under the claim's ``rewordings``: the old words, the old hashes, the commit, the date and
    ``why``. A claim whose change is more than its words is refused (ValueError naming it and the fields): that is a
    rule change (``register --why``); so are words that state another decision (:func:`decision_words`: a part's
    kind, threshold or unit, or how the parts combine), which the registration holds only in its words where its parts
    were not yet judged. (The rewording of 2026-11-29, from hand-written words to generated ones, was checked claim by
    claim instead: the hand-written words stated their decisions in words of their own.)"""
    if not why:
        raise ValueError("a rewording needs its reason (--why)")
    out = {k: dict(v) for k, v in registry.items()}
    done, refused = [], []
    chosen = [e for e in entries if (ids is None or e["id"] in ids) and e.get("verdict") is not None
              and not e["id"].endswith("/*")]
    if ids is not None and (unknown := sorted(set(ids) - {e["id"] for e in chosen})):
        raise ValueError(f"claim ids not in the claims read: {', '.join(unknown)}")
    for e in chosen:
        st = status(e, registry)
        if st["status"] != "changed":
            continue
        old = out[e["id"]]
        before = (old.get("spec") or {}).get("rule", "")
        if status({**e, "rule": before}, registry)["status"] != "registered":  # in its old words it is not the rule
            refused.append(f"{e['id']} ({', '.join(st['changed_fields'])})")
            continue
        if rewording_decision(before, e["rule"]) != SAME_DECISION:  # the words that decide: thresholds, combination
            refused.append(f"{e['id']} (its decision: {'; '.join(decision_words(e['rule'])) or 'none stated'})")
            continue
        record = {"rule": before, "hash": old["hash"], "changed": f"{commit} {date}", "why": why,
                  "decision": SAME_DECISION}
        as_registered = frozen_hash({**e, "rule": before})
        spec = {**(old.get("spec") or {}), "rule": e["rule"]}  # what was registered, in the new words
        hashed = spec if old["hash"] == content_hash(old.get("spec") or {}) else rule_spec(e)  # the hash is the
        new = {**old, "hash": content_hash(hashed), "spec": spec}  # spec's, or that of the entry it was keyed to
        for key in ("frozen", "confirmatory", "deterministic"):
            block = old.get(key)
            if block and block.get("hash") == as_registered:
                record[f"{key}_hash"] = block["hash"]
                new[key] = {**block, "hash": frozen_hash(e)}
            elif block:
                raise ValueError(f"{e['id']}: its {key} block ({block.get('hash')}) is not of the rule in its "
                                 f"registered words ({as_registered}); nothing reworded")
        new["rewordings"] = [*old.get("rewordings", []), record]
        if status(e, {e["id"]: new})["status"] != "registered":  # cannot happen: the same rule in other words
            raise ValueError(f"{e['id']}: not registered in its new words after rewording; nothing reworded")
        out[e["id"]] = new
        done.append(f"reworded {e['id']}" + (" (confirmation kept)" if "confirmatory_hash" in record else ""))
    if refused:
        raise ValueError("more than the words changed (re-register with --why REASON): " + "; ".join(refused))
    return out, done


DECISION = re.compile(r"(?:reproduced if the 95% interval lies [^;]*?, not-reproduced if it lies [^;]*?)(?=; |\. |$)"
                      r"|reproduced if (?:every|some) part is[^.]*?otherwise")  # Rule.text and COMBINES' words


def decision_words(text: str) -> list[str]:
    """What in a rule's words decides its verdict, in order: each part's rule (fedbench.claims.verdict.Rule.text: kind,
    threshold, unit) and how the parts combine (fedbench.claims.verdict.COMBINES). Two wordings of one rule state the
    same ones; :func:`reword` refuses words that state others."""
    return DECISION.findall(text)


def frozen_hash(entry: dict[str, Any]) -> str:
    """The hash a frozen rule keeps: the rule spec without the seeds of its runs (a confirmation reruns the same
    rule, budget and runs on the frozen block of fresh seeds), where the rule's text and its parts' name the run's own
    training seeds (mime_synthetic: "per seed (0-4)") with that mention made a placeholder (:func:`without_seeds`),
    so that the same rule on other seeds keeps its hash and any other change of the text changes it."""
    spec = rule_spec(entry)
    seeds = list((spec["runs"].get("seeds") or {}).get("training") or [])
    spec["runs"] = {k: v for k, v in spec["runs"].items() if k != "seeds"}
    spec["rule"] = without_seeds(spec["rule"], seeds)
    spec["parts"] = [[name, without_seeds(text, seeds)] for name, text in spec["parts"]]
    return content_hash(spec)


def without_seeds(text: str, seeds: list[int]) -> str:
    """``text`` with each mention of the training ``seeds`` as a whole ("0-4" or "0, 1, 2, 3, 4", not inside a longer
    number or range) replaced by "{seeds}". A single seed is left as it is: its number alone is no mark of a seed
    ("above 0")."""
    if len(seeds) < 2:
        return text
    for form in sorted({seeds_text(seeds), ", ".join(map(str, seeds))}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.,-]){re.escape(form)}(?![\w.-]|, \d)", "{seeds}", text)
    return text


def used_seeds(entries: list[dict[str, Any]], registry: dict[str, Any]) -> set[int]:
    """Every seed any claim's runs have used or named: each entry's training and data seeds, every integer under a
    key naming seeds in its scale (tuning and selection seeds) and its registered spec, and every frozen block
    of the registry and its history."""
    out: set[int] = set()

    def walk(value: Any, seedish: bool) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, seedish or "seed" in str(k).lower())
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, seedish)
        elif seedish and isinstance(value, int) and not isinstance(value, bool):
            out.add(value)

    for e in entries:
        walk({"seeds": e.get("seeds") or {}, "scale": e.get("scale") or {}}, False)
    for r in registry.values():
        walk({"runs": (r.get("spec") or {}).get("runs") or {}}, False)
        for block in [r.get("frozen"), *(h.get("frozen") for h in [*r.get("history", []), *r.get("earlier_blocks", [])])]:
            if block:
                out.update([*block["seeds"], *block.get("data_seeds", [])])
    return out


def fresh_seeds(used: set[int], count: int, start: int = CONFIRM_START) -> list[int]:
    """The first ``count`` seeds from ``start`` up that are not in ``used``."""
    if count < 1:
        raise ValueError(f"a block of confirm seeds needs count >= 1, got {count}")
    out, s = [], start
    while len(out) < count:
        if s not in used:
            out.append(s)
        s += 1
    return out


def power_rule(members: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The declared power rule of a study's block (fedbench.claims.stats.seeds_for_power), from its headline claims
    (fedbench.claims.tally.toward_headline): per claim, the seeds that bring the t interval's half-width below
    POWER_FRACTION of the published effect (or of the exploratory estimate where the paper states none), at the
    exploratory seeds' spread; the block takes the largest. None where no member is a headline claim with an effect."""
    from fedbench.claims.stats import POWER_FRACTION, seeds_for_power
    from fedbench.claims.tally import toward_headline  # the tally imports no registry: no cycle

    per_claim = {}
    for e in members:
        effect = e.get("effect") or {}
        value = (e.get("published") or {}).get("value")
        base = value if value is not None else effect.get("estimate")
        if not toward_headline(e) or base is None or not float(base) or not effect.get("per_seed"):
            continue
        r = seeds_for_power(effect["per_seed"], POWER_FRACTION * abs(float(base)))
        per_claim[e["id"]] = {**r, "of": "published" if value is not None else "exploratory"}
    if not per_claim:
        return None
    worst = max(per_claim.values(), key=lambda r: r["seeds"])
    return {"seeds": worst["seeds"], "claims": per_claim,
            "text": f"{worst['seeds']} seeds: the most any headline claim of the block needs for a 95% half-width below "
                    f"{POWER_FRACTION:g} of its published (else exploratory) effect (fedbench.claims.stats."
                    "seeds_for_power), declared before the run"}


def freeze(entries: list[dict[str, Any]], registry: dict[str, Any], commit: str, date: str, count: int = 5,
           ids: list[str] | None = None, seen: set[int] | frozenset[int] = frozenset(),
           power: dict[str, Any] | None = None, fresh_data: Callable[[dict[str, Any]], bool] | None = None,
           redraw: bool = False) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with every judged claim of ``entries`` (only ``ids`` if given) frozen on ``commit``: its frozen
    hash and one block of ``count`` fresh confirm seeds shared by all claims frozen together (recorded before
    anything runs), none that ``seen`` holds (:func:`history_seeds`: a seed any commit recorded a result on) or any
    entry or block of the registry used; ``power``: the power rule that set ``count``, recorded with the block. A claim
    must be registered with its current rule first (ValueError naming those that are not); a claim already frozen with
    the same hash keeps its block, unless its confirmation on it is not shown pre-registered (:func:`audit`): that
    block and its verdict move to ``earlier_blocks`` (disclosed) and the claim is frozen on a fresh block.
    ``fresh_data(entry)``: whether the entry's study draws its own data from a data seed
    (fedbench.study.declaration.StudyDeclaration.fresh_data); where it does, the block also records ``data_seeds``,
    one fresh data seed per training seed (issue 51, item 2: a replication on new data, not only new training
    randomness), taken from the same never-used seeds. ``redraw``: a claim of such a study whose block drew no data
    seeds is frozen again on a block that does, decided before its result is seen and for every such claim chosen
    alike; its confirmation on the earlier block (counted or not) moves to ``earlier_blocks``, disclosed beside the
    new one, which the tally counts once it is run (`fedbench claims confirm --fresh-data`)."""
    chosen = [e for e in entries if (ids is None or e["id"] in ids) and e.get("verdict") not in (None, *UNJUDGED)
              and not e["id"].endswith("/*")]
    if ids is not None and (unknown := sorted(set(ids) - {e["id"] for e in chosen})):
        raise ValueError(f"claim ids not judged in the claims read: {', '.join(unknown)}")
    stale = [e["id"] for e in chosen if status(e, registry)["status"] != "registered"]
    if stale:
        raise ValueError("register these rules before freezing them (fedbench claims register): " + ", ".join(stale))
    seeds = fresh_seeds(used_seeds(entries, registry) | set(seen), count)
    draws = any(fresh_data(e) for e in chosen) if fresh_data is not None else False
    data_seeds = fresh_seeds(used_seeds(entries, registry) | set(seen) | set(seeds), count) if draws else None
    out = {k: dict(v) for k, v in registry.items()}
    done = []
    for e in chosen:
        now, old, rec = frozen_hash(e), out[e["id"]].get("frozen"), out[e["id"]].get("confirmatory")
        again = bool(old and old["hash"] == now and rec and not counted_confirmation(rec))
        redrawn = bool(redraw and old and old["hash"] == now and fresh_data is not None and fresh_data(e)
                       and "data_seeds" not in old)
        if old and old["hash"] == now and not again and not redrawn:
            continue
        if (again or redrawn) and (rec or redrawn):
            why = (f"its pre-registration is {rec.get('registration') or 'not shown: not audited'}" if again else
                   "frozen again with fresh data seeds too (issue 51, item 2): the block drew fresh training seeds only")
            earlier = {"frozen": old, "confirmatory": rec, "why": why}
            out[e["id"]]["earlier_blocks"] = [*out[e["id"]].get("earlier_blocks", []), earlier]
        fresh = data_seeds is not None and fresh_data(e)
        out[e["id"]]["frozen"] = {"hash": now, "commit": commit, "date": date, "seeds": list(seeds),
                                  **({"data_seeds": list(data_seeds)} if fresh else {}),
                                  **({"power": power} if power else {})}
        out[e["id"]].pop("confirmatory", None)
        done.append(f"froze {e['id']} (confirm seeds {seeds_text(seeds)}"
                    + (f", fresh data seeds {seeds_text(data_seeds)}" if fresh else "") + ")"
                    + (f" again: its confirmation on {seeds_text(old['seeds'])} is not shown pre-registered" if again else "")
                    + (f" again: its block {seeds_text(old['seeds'])} drew no fresh data" if redrawn else ""))
    return out, done


def check_frozen(entry: dict[str, Any], registry: dict[str, Any]) -> dict[str, Any]:
    """The frozen block of ``entry``'s claim, if its rule is still the frozen one; else ValueError in one line."""
    frozen = (registry.get(entry["id"]) or {}).get("frozen")
    if frozen is None:
        raise ValueError(f"{entry['id']}: not frozen; freeze it before its confirmatory run (fedbench claims freeze)")
    now = frozen_hash(entry)
    if now != frozen["hash"]:
        raise ValueError(f"{entry['id']}: rule changed since it was frozen on {frozen['commit']} ({frozen['hash']} -> "
                         f"{now}); its confirmation is void: freeze it again and rerun on new seeds")
    return frozen


def confirm(entry: dict[str, Any], registry: dict[str, Any], commit: str, date: str, seconds: float | None = None,
            where: str | None = None, frozen_in: str | None = None) -> dict[str, Any]:
    """``registry`` with the confirmatory verdict of ``entry``: its claim judged by the frozen rule on exactly the
    frozen confirm seeds (ValueError in one line otherwise, or when the rule changed since freezing), recorded with
    the commit and date, the effect it found (estimate, interval, unit), "p_claim" (fedbench.claims.verdict.claim_p:
    what the headline's Holm adjustment reads), the wall ``seconds`` the confirmatory run of its study took, ``where``
    that run's records are and ``frozen_in``: the commit on HEAD's history that holds its frozen block (fedbench
    claims confirm runs only from a clean tree on one: the result lands in a later commit; :func:`audit` checks it
    in the history). Without ``frozen_in`` the record is "not shown" until audited."""
    from fedbench.claims.verdict import claim_p, combination_of  # scipy: only when judging

    frozen = check_frozen(entry, registry)
    ran = list((entry.get("seeds") or {}).get("training") or [])
    if ran != list(frozen["seeds"]):
        raise ValueError(f"{entry['id']}: confirmed on seeds {ran}, frozen with {frozen['seeds']}: rerun on the frozen "
                         "seeds")
    drawn = list((entry.get("seeds") or {}).get("data") or [])
    if "data_seeds" in frozen and drawn != list(frozen["data_seeds"]):
        raise ValueError(f"{entry['id']}: confirmed on data seeds {drawn}, frozen with fresh data seeds "
                         f"{frozen['data_seeds']}: rerun on the frozen data seeds")
    effect = entry.get("effect") or {}
    out = {k: dict(v) for k, v in registry.items()}
    p = claim_p(entry.get("parts") or [], (entry.get("direction") or {}).get("verdict") or entry["verdict"],
                combination_of(entry.get("rule") or ""))
    mark = (f"{SHOWN}: frozen in {frozen_in[:12]}, on HEAD's history and a clean tree when the run began (its result "
            "lands in a later commit)" if frozen_in else f"{NOT_SHOWN}: no commit of its frozen block recorded")
    out[entry["id"]]["confirmatory"] = {"verdict": entry["verdict"], "commit": commit, "date": date,
                                        "hash": frozen["hash"], "seeds": ran,
                                        **({"data_seeds": drawn} if "data_seeds" in frozen else {}),
                                        **{k: effect[k] for k in ("estimate", "ci95", "unit") if k in effect},
                                        "p_claim": p, "registration": mark, "frozen_in": frozen_in,
                                        **({"seconds": round(seconds, 1)} if seconds is not None else {}),
                                        **({"where": where} if where else {})}
    return out


def mark_deterministic(entry: dict[str, Any], registry: dict[str, Any], commit: str, date: str) -> dict[str, Any]:
    """``registry`` with ``entry``'s claim marked deterministic (its study has no seed randomness: DETERMINISTIC),
    under its current rule's frozen hash, so that a later change of the rule drops the mark. No seeds are frozen
    and no verdict is recorded: a rerun would repeat the exploratory numbers. The claim must be registered with its
    current rule (ValueError in one line otherwise)."""
    st = status(entry, registry)
    if st["status"] != "registered":
        raise ValueError(f"{entry['id']}: rule {st['status']} (fedbench claims register first)")
    out = {k: dict(v) for k, v in registry.items()}
    out[entry["id"]]["deterministic"] = {"hash": frozen_hash(entry), "commit": commit, "date": date}
    return out


def disclosures(registry: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rule change after a result, one row each (issue 32, item 6: claims.md lists them all): the claim id,
    the commit and date of the change, why, the rule before, the verdict under it and under the rule that
    replaced it (each with where it was read), ordered by claim id, oldest change first. A change made before any
    verdict existed is no disclosure (the rule was not changed after a result) and is left out.

    The verdict after a change is the record's own ``verdict_after`` where it states one, else the verdict of the
    next history record that recorded one, else the claim's current registered verdict.

    A rewording that :func:`decision_words` does not show to state the same decision is a rule change (issue 51, item
    7; :func:`check_rewordings` marks it): it is listed too ("rewording": True), with the verdicts registered before
    and after it, None where none was recorded yet."""
    rows = []
    for cid, reg in sorted(registry.items()):
        history = reg.get("history") or []
        for i, h in enumerate(history):
            if h.get("verdict") is None:
                continue
            if "verdict_after" in h:
                after, source = h["verdict_after"], h.get("verdict_after_source", "")
            elif nxt := [n for n in history[i + 1:] if n.get("verdict") is not None]:
                after, source = nxt[0]["verdict"], nxt[0].get("verdict_source", "")
            else:
                current = reg.get("verdict") or {}
                after = current.get("verdict")
                source = _source(current) if current else "none recorded yet"
            commit, _, date = str(h.get("changed", "")).partition(" ")
            rows.append({"id": cid, "commit": commit, "date": date, "why": h.get("why", ""), "rule_before": h.get("rule", ""),
                         "verdict_before": h["verdict"], "verdict_before_source": h.get("verdict_source", ""),
                         "verdict_after": after, "verdict_after_source": source, "moved": after != h["verdict"]})
        earlier = [r for h in history for r in h.get("rewordings") or []]  # a rule re-registered keeps its rewordings
        for r in [*earlier, *(reg.get("rewordings") or [])]:  # decision_words not showing the same: a rule change
            if str(r.get("decision", "")).startswith(RULE_CHANGE):  # listed whether or not a verdict existed then
                commit, _, date = str(r.get("changed", "")).partition(" ")
                rows.append({"id": cid, "commit": commit, "date": date,
                             "why": f"reworded ({r.get('why', '')}): {r['decision']}", "rule_before": r.get("rule", ""),
                             "verdict_before": r["verdict_before"], "verdict_before_source": r.get("verdict_source", ""),
                             "verdict_after": r.get("verdict_after"), "verdict_after_source": r.get("verdict_after_source", ""),
                             "moved": r.get("verdict_after") != r["verdict_before"], "rewording": True})
    return rows


SAME_DECISION = "the same decision (decision_words)"
RULE_CHANGE = "a rule change"  # a rewording whose decision decision_words does not show the same


def rewording_decision(before: str, after: str) -> str:
    """Whether a change of a rule's words from ``before`` to ``after`` is a rewording (issue 51, item 7): accepted only
    where :func:`decision_words` reads a decision in both and the same one; every other change of words is a rule change,
    disclosed as such (the text says what decision_words read on each side)."""
    then, now = decision_words(before), decision_words(after)
    if then and then == now:
        return SAME_DECISION
    return (f"{RULE_CHANGE}: decision_words reads {len(then)} decision(s) in the earlier words and {len(now)} in the "
            "later ones" + (", not the same" if then and now else "; the earlier words state none it can read"
                            if not then else "; the later words state none it can read"))


def check_rewordings(registry: dict[str, Any], hist: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with each record of ``rewordings`` marked by :func:`rewording_decision` (its words against the words
    that followed them: the next rewording's, else the registered ones), and, where it is a rule change, the verdict
    before it (the claim's registered verdict in the committed registry of the rewording's commit, read from ``hist``:
    :func:`history`) and after it (the claim's registered verdict now), so that :func:`disclosures` lists it. The lines
    say which rewordings are rule changes."""
    committed = {c: b for c, b in (hist or {}).get("registry", [])}
    out = {k: dict(v) for k, v in registry.items()}
    lines = []
    for cid, reg in sorted(out.items()):
        records = [dict(r) for r in reg.get("rewordings") or []]
        if not records:
            continue
        words = [r.get("rule", "") for r in records] + [(reg.get("spec") or {}).get("rule", "")]
        for i, r in enumerate(records):
            was = dict(r)
            r["decision"] = rewording_decision(words[i], words[i + 1])
            if not r["decision"].startswith(RULE_CHANGE):
                continue
            commit = str(r.get("changed", "")).split(" ")[0]
            then = next((b for c, b in committed.items() if commit and c.startswith(commit)), None)
            before = (((then or {}).get(cid) or {}).get("verdict") or {})
            now = reg.get("verdict") or {}
            r.update(verdict_before=before.get("verdict"),
                     verdict_source=(f"the registered verdict in the registry of {commit}: " + _source(before))
                     if before else "none recorded in the registry of that commit",
                     verdict_after=now.get("verdict"), verdict_after_source=_source(now) if now else "none recorded yet")
            if r != was:
                lines.append(f"{cid}: rewording of {r.get('changed', '')}: {r['decision']} (verdict "
                             f"{r['verdict_before']} -> {r['verdict_after']})")
        reg["rewordings"] = records
    return out, lines


# Pre-registration shown by git (issue 51, item 1). What the registry says of itself (a commit, a date) is no proof:
# the history of the repository is. A confirmation counts only where git shows its rule frozen on its seeds in one
# commit and its result in a later one that descends from it (:func:`preregistration`); ``fedbench claims audit``
# marks each confirmatory record "registration": "shown: ..." or "not shown: ..." and fedbench.claims.status counts a
# confirmatory verdict only where it is shown. A seed block is fresh only if no commit ever recorded a result on it
# (:func:`history_seeds`), and a registration is before its result only if no commit before it held a result of the
# claim (:func:`first_results`).
SHOWN, NOT_SHOWN = "shown", "not shown"
RESULT_FILES = ("reports/claims.json",)  # besides the registry: the committed reports whose entries are results


def git(*args: str, cwd: str | Path | None = None, stdin: str | None = None) -> str:
    """The stdout of ``git args`` (ValueError in one line where git fails: no checkout, an unknown commit)."""
    import subprocess

    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, input=stdin, check=False)
    except OSError as e:
        raise ValueError(f"git {args[0]}: {e}") from None
    if proc.returncode != 0:
        raise ValueError(f"git {' '.join(args[:2])}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
    return proc.stdout


def shallow(cwd: str | Path | None = None) -> bool:
    """Whether the checkout is a shallow clone (its history cut: nothing can be shown from it)."""
    return git("rev-parse", "--is-shallow-repository", cwd=cwd).strip() == "true"


def revisions(path: str, cwd: str | Path | None = None) -> list[tuple[str, Any]]:
    """Every committed version of ``path`` (relative to the repository root) on HEAD's history, oldest first: (full
    commit hash, its parsed JSON; None where it does not parse). Read in one ``git cat-file --batch``."""
    commits = git("rev-list", "--reverse", "--topo-order", "HEAD", "--", path, cwd=cwd).split()
    if not commits:
        return []
    import subprocess

    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=cwd, capture_output=True, check=True,
                          input="".join(f"{c}:{path}\n" for c in commits).encode())
    out, data, at = [], proc.stdout, 0
    for c in commits:
        header_end = data.index(b"\n", at)
        header = data[at:header_end].split()
        if header[-1] == b"missing":
            out.append((c, None))
            at = header_end + 1
            continue
        size = int(header[2])
        body = data[header_end + 1: header_end + 1 + size]
        at = header_end + 1 + size + 1
        try:
            out.append((c, json.loads(body)))
        except (json.JSONDecodeError, UnicodeDecodeError):
            out.append((c, None))
    return out


def _registry_path(cwd: str | Path | None) -> str:
    root = Path(git("rev-parse", "--show-toplevel", cwd=cwd).strip())
    return REGISTRY.resolve().relative_to(root.resolve()).as_posix() if cwd is None else "fedbench/claims/registry.json"


def _result_seeds(body: Any, registry_file: bool) -> dict[str, set[int]]:
    """Per claim id, the seeds a committed file records a result on: a registry's confirmatory records (and those in
    its history), a report's judged entries' training seeds."""
    out: dict[str, set[int]] = {}
    if not isinstance(body, dict):
        return out
    if registry_file:
        for cid, reg in body.items():
            if not isinstance(reg, dict):
                continue
            for rec in [reg.get("confirmatory"), *((h or {}).get("confirmatory") for h in reg.get("history") or [])]:
                if isinstance(rec, dict) and rec.get("seeds"):
                    out.setdefault(cid, set()).update(int(x) for x in rec["seeds"])
        return out
    for e in body.get("claims") or []:
        if isinstance(e, dict) and e.get("verdict") not in (None, *UNJUDGED):
            seeds = ((e.get("seeds") or {}).get("training")) or []
            out.setdefault(e.get("id", ""), set()).update(int(x) for x in seeds if isinstance(x, int))
    return out


def history(cwd: str | Path | None = None) -> dict[str, Any]:
    """What the repository's history holds, read once: {"registry": [(commit, body)], "results": [(commit, {claim id:
    seeds with a result})] (every committed registry and report, oldest first)}."""
    path = _registry_path(cwd)
    reg = revisions(path, cwd)
    results = [(c, _result_seeds(b, True)) for c, b in reg]
    for f in RESULT_FILES:
        results += [(c, _result_seeds(b, False)) for c, b in revisions(f, cwd)]
    order = {c: i for i, c in enumerate(git("rev-list", "--reverse", "--topo-order", "HEAD", cwd=cwd).split())}
    results.sort(key=lambda cr: order.get(cr[0], -1))
    return {"registry": reg, "results": results}


def history_seeds(hist: dict[str, Any]) -> set[int]:
    """Every seed any commit recorded a result on (or froze: a block frozen once may have been run), for any claim:
    a block is fresh only if none of its seeds is here (:func:`fresh_seeds` skips them)."""
    out: set[int] = set()
    for _, per_claim in hist["results"]:
        for seeds in per_claim.values():
            out |= seeds
    for _, body in hist["registry"]:
        for reg in (body or {}).values():
            if isinstance(reg, dict):
                for block in [reg.get("frozen"), *((h or {}).get("frozen") for h in reg.get("history") or [])]:
                    if isinstance(block, dict):
                        out.update(int(x) for x in [*(block.get("seeds") or []), *(block.get("data_seeds") or [])])
    return out


def first_results(hist: dict[str, Any]) -> dict[str, str]:
    """Per claim id, the first commit that holds a result of it (a judged entry in a committed report, or a confirmatory
    record): what ``before_result`` is measured against."""
    out: dict[str, str] = {}
    for commit, per_claim in hist["results"]:
        for cid in per_claim:
            out.setdefault(cid, commit)
    for commit, body in hist["registry"]:  # a verdict recorded by register is a result seen
        for cid, reg in (body or {}).items():
            if isinstance(reg, dict) and reg.get("verdict") and cid not in out:
                out[cid] = commit
    return out


def is_ancestor(older: str, newer: str, cwd: str | Path | None = None) -> bool:
    """Whether commit ``older`` is an ancestor of (or equal to) ``newer``."""
    import subprocess

    return subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=cwd, capture_output=True,
                          check=False).returncode == 0


def preregistration(cid: str, hist: dict[str, Any], cwd: str | Path | None = None) -> dict[str, Any]:
    """Whether git shows claim ``cid``'s confirmation pre-registered: {"shown" (bool), "freeze" (the first commit whose
    registry freezes the claim on the confirmation's seeds), "result" (the first commit that records a result on any
    of those seeds, for any claim), "why"}. Shown exactly when both exist, differ, the freeze is an ancestor of the
    result, the block stays frozen for the claim in every committed registry from the freeze to the claim's own
    result (a block frozen, dropped and frozen again may have been run in between), and no commit froze any of its
    seeds for any claim before."""
    last = hist["registry"][-1][1] if hist["registry"] else {}
    rec = ((last or {}).get(cid) or {}).get("confirmatory")
    out: dict[str, Any] = {"shown": False, "freeze": None, "result": None, "why": ""}
    if not rec:
        return out | {"why": "no confirmation committed"}
    seeds = set(rec["seeds"])
    frozen_at = [c for c, b in hist["registry"]
                 if set((((b or {}).get(cid) or {}).get("frozen") or {}).get("seeds") or []) == seeds]
    own = [c for c, b in hist["registry"]
           if set((((b or {}).get(cid) or {}).get("confirmatory") or {}).get("seeds") or []) == seeds]
    result = next((c for c, per_claim in hist["results"] if any(seeds & v for v in per_claim.values())), None)
    out.update(freeze=frozen_at[0] if frozen_at else None, result=result)
    if not frozen_at:
        return out | {"why": "no committed registry freezes it on these seeds"}
    freeze = frozen_at[0]
    earlier = [c for c, b in hist["registry"][: [c for c, _ in hist["registry"]].index(freeze)]
               for reg in (b or {}).values() if isinstance(reg, dict)
               for block in [reg.get("frozen"), *((h or {}).get("frozen") for h in reg.get("history") or [])]
               if isinstance(block, dict) and seeds & set(block.get("seeds") or [])]
    if result is None:
        return out | {"why": "no committed result on these seeds"}
    if result == freeze:
        return out | {"why": f"frozen and first result in the same commit {freeze[:12]}"}
    if not is_ancestor(freeze, result, cwd):
        return out | {"why": f"the first result ({result[:12]}) is not a descendant of the freeze ({freeze[:12]})"}
    if earlier:
        return out | {"why": f"a seed of the block was frozen before, in {earlier[0][:12]} (and dropped): it may have "
                             "been run before this freeze"}
    commits = [c for c, _ in hist["registry"]]
    span = commits[commits.index(freeze): commits.index(own[0]) + 1] if own else []
    if any(c not in frozen_at for c in span):
        gap = next(c for c in span if c not in frozen_at)
        return out | {"why": f"the block was dropped from the registry in {gap[:12]} between its freeze and its result: "
                             "a run may have used it while it was not frozen"}
    return out | {"shown": True, "why": f"frozen in {freeze[:12]}, first result in the later {result[:12]}"}


def audit(registry: dict[str, Any], hist: dict[str, Any], cwd: str | Path | None = None) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with each confirmatory record marked by :func:`preregistration`: "registration": "shown: ..." or
    "not shown: ...", with "frozen_in" and "result_in" (the commits); and ``before_result`` of each registration
    measured against the history as well (:func:`first_results`: it stays True only where the claim's registration
    commit is a strict ancestor of its first committed result, or no result was ever committed; a registration made
    with a result at hand stays False whatever the history, which cannot show what was seen before a commit). A confirmation recorded since the last
    commit (not in the history yet) keeps the mark ``fedbench claims confirm`` gave it. The lines say what changed."""
    out = {k: dict(v) for k, v in registry.items()}
    firsts = first_results(hist)
    committed = hist["registry"][-1][1] if hist["registry"] else {}
    lines = []
    for cid, reg in sorted(out.items()):
        rec = reg.get("confirmatory")
        if rec and ((committed or {}).get(cid) or {}).get("confirmatory", {}).get("seeds") == rec.get("seeds"):
            shown = preregistration(cid, hist, cwd)
            mark = f"{SHOWN if shown['shown'] else NOT_SHOWN}: {shown['why']}"
            if rec.get("registration") != mark:
                lines.append(f"{cid}: confirmation {mark}")
            reg["confirmatory"] = {**rec, "registration": mark, "frozen_in": shown["freeze"], "result_in": shown["result"]}
        first = firsts.get(cid)
        try:
            at = git("rev-parse", "--verify", "--quiet", f"{reg['commit']}^{{commit}}", cwd=cwd).strip()
            before = bool(reg.get("before_result")) and (first is None or (is_ancestor(at, first, cwd) and at != first))
        except ValueError:
            before = False  # its registration commit is not in this history: nothing shows it before
        if bool(reg.get("before_result")) != before:
            lines.append(f"{cid}: before_result {reg.get('before_result')} -> {before} (first result in "
                         f"{first[:12] if first else 'no commit'})")
        reg["before_result"] = before
    return out, lines


DIRTY = " + uncommitted changes"  # the commit of a confirmation recorded from a dirty tree (before issue 51)


def counted_confirmation(record: dict[str, Any] | None) -> bool:
    """Whether a confirmatory record counts: its pre-registration shown by git (:func:`audit`'s mark), recorded from a
    committed tree (a record whose commit ends in DIRTY ran code no commit holds)."""
    return (bool(record) and str(record.get("registration", "")).startswith(SHOWN + ":")
            and not str(record.get("commit", "")).endswith(DIRTY))


def commit_of_block(frozen: dict[str, Any], cid: str, cwd: str | Path | None = None) -> str:
    """The commit on HEAD's history whose registry first holds ``cid``'s ``frozen`` block (hash and seeds), else
    ValueError in one line: a confirmation runs only on a block committed before it."""
    for c, body in revisions(_registry_path(cwd), cwd):
        block = ((body or {}).get(cid) or {}).get("frozen") or {}
        if block.get("seeds") == frozen["seeds"] and block.get("hash") == frozen["hash"]:
            return c
    raise ValueError(f"{cid}: its frozen block (seeds {seeds_text(frozen['seeds'])}) is in no commit on HEAD's history: "
                     "commit the registry (git commit fedbench/claims/registry.json), then confirm")


def seeds_text(seeds: list[int]) -> str:
    return f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) else ", ".join(map(str, seeds))


def _verdict(e: dict[str, Any], commit: str, date: str) -> dict[str, Any]:
    return {"verdict": e["verdict"], "commit": commit, "date": date}


def _source(v: dict[str, Any]) -> str:
    return f"{v['verdict']} in the report of {v['commit']} ({v['date']})"


def dump(registry: dict[str, Any], path: str | Path = REGISTRY) -> None:
    """Write the registry whole (a temporary file moved into place: never half-written)."""
    path = Path(path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(registry.items())), indent=1, sort_keys=False) + "\n")
    tmp.replace(path)


def main(argv: list[str], fresh_data: Callable[[dict[str, Any]], bool] | None = None) -> int:
    """``fedbench claims register [IDS...] [--claims reports/claims.json] [--why REASON] [--reworded]``,
    ``fedbench claims freeze [IDS...] [--claims reports/claims.json] [--count 5]`` and ``fedbench claims audit``
    (``fedbench claims confirm``, which runs studies, is fedbench.studies.confirm: the claims package runs nothing).
    ``fresh_data(entry)``: whether the entry's study draws its own data (:func:`freeze`; the claims package knows no
    study: the command line passes fedbench.studies.confirm.fresh_data)."""
    import argparse
    import datetime
    import subprocess
    import sys

    from fedbench.helptext import described

    p = argparse.ArgumentParser(prog="fedbench claims", description="The claims' registered rules.",
                                epilog="fedbench claims confirm: rerun the judged claims' studies on their frozen "
                                       "seeds and record the confirmatory verdicts (see fedbench claims confirm "
                                       "--help; fedbench.studies.confirm)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("register", help="register the rules of the claims in a claims.json (new ones; a changed one "
                                        "only with --why) and record their current verdicts")
    r.add_argument("ids", nargs="*", help="only these claim ids (default: all)")
    r.add_argument("--claims", default="reports/claims.json", help="the claims to register (default: %(default)s)")
    r.add_argument("--registry", default=str(REGISTRY), help="the registry file (default: %(default)s)")
    r.add_argument("--why", default="", help="why a registered rule changed (required to re-register one)")
    r.add_argument("--reworded", action="store_true",
                   help="the rules whose words alone changed (regenerated from unchanged data): re-key them, keeping "
                        "their registrations and confirmations, and record the old words (needs --why; refuses a "
                        "claim where more than the words changed, or whose words state another threshold or "
                        "combination)")
    f = sub.add_parser("freeze", help="freeze the judged claims' registered rules (hash, commit) with a block of fresh "
                                      "confirm seeds, before their confirmatory runs")
    f.add_argument("ids", nargs="*", help="only these claim ids (default: every judged claim)")
    f.add_argument("--claims", default="reports/claims.json", help="the claims to freeze (default: %(default)s)")
    f.add_argument("--registry", default=str(REGISTRY), help="the registry file (default: %(default)s)")
    f.add_argument("--count", type=int, default=None,
                   help="confirm seeds in the block (default: the power rule's count for the claims frozen, at least 5; "
                        "a count below the power rule's is refused)")
    au = sub.add_parser("audit", help="mark each confirmation shown or not shown pre-registered by git (its block "
                                      "frozen in a commit before, and an ancestor of, the first commit with a result on "
                                      "it) and set before_result from the history; the tally counts only shown ones")
    au.add_argument("--registry", default=str(REGISTRY), help="the registry file (default: %(default)s)")
    sub.add_parser("confirm", add_help=False,  # dispatched before this parser (fedbench.cli): listed, never parsed
                   help="rerun the judged claims' studies on their frozen seeds (fedbench claims confirm --help)")
    a = described(p).parse_args(argv)
    if a.command == "confirm":  # reached only when this parser is called without fedbench.cli's dispatch
        print("fedbench claims confirm: run it as `fedbench claims confirm` (fedbench.studies.confirm)", file=sys.stderr)
        return 2
    if a.command == "audit":
        try:
            if shallow():
                print("fedbench claims audit: a shallow clone: its history cannot show a pre-registration (git fetch "
                      "--unshallow)", file=sys.stderr)
                return 2
            hist = history()
            new, done = audit(load(a.registry), hist)
            new, changes = check_rewordings(new, hist)
            done += changes
        except ValueError as e:
            print(f"fedbench claims audit: {e}", file=sys.stderr)
            return 2
        dump(new, a.registry)
        shown = sum(counted_confirmation(r.get("confirmatory")) for r in new.values())
        total = sum(bool(r.get("confirmatory")) for r in new.values())
        print("\n".join(done) or "every mark already as the history shows")
        print(f"{shown} of {total} confirmations shown pre-registered by git (counted); {total - shown} not shown")
        return 0
    try:
        entries = json.loads(Path(a.claims).read_text())["claims"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        print(f"--claims {a.claims}: not a readable claims.json with a 'claims' list (build it: dvc repro)",
              file=sys.stderr)
        return 2
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        print(f"fedbench claims {a.command}: needs a git checkout (the registry records the commit)", file=sys.stderr)
        return 2
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    if a.command == "freeze":
        power = power_rule([e for e in entries if not a.ids or e["id"] in a.ids])
        needed = power["seeds"] if power else 0
        if a.count is not None and a.count < needed:
            print(f"fedbench claims freeze: --count {a.count}: below the power rule's {needed} seeds for these claims "
                  f"({power['text']}); allowed: >= {needed}", file=sys.stderr)
            return 2
        try:
            new, done = freeze(entries, load(a.registry), commit, date, a.count or max(5, needed), a.ids or None,
                               history_seeds(history()), power, fresh_data)
        except ValueError as e:
            print(f"fedbench claims freeze: {e}", file=sys.stderr)
            return 1
        dump(new, a.registry)
        print("\n".join(done) or "every judged claim already frozen with its current rule")
        return 0
    report = subprocess.run(["git", "log", "-1", "--format=%h", "--", a.claims], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", a.claims], capture_output=True, text=True).stdout
    report = f"{report or commit}{' + uncommitted changes' if dirty.strip() else ''}"
    try:
        if a.reworded:
            new, done = reword(entries, load(a.registry), commit, date, a.why, a.ids or None)
        else:
            new, done = register(entries, load(a.registry), commit, date, a.why, a.ids or None, report)
            if not shallow():  # before_result: before any result in the history, not only the report at hand
                new, _ = audit(new, history())
    except ValueError as e:
        print(f"fedbench claims register: {e}", file=sys.stderr)
        return 1
    dump(new, a.registry)
    print("\n".join(done) or "nothing new to register; current verdicts recorded")
    return 0

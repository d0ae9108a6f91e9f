"""Where each verdict of the report was computed, and the verdicts kept from an earlier report (issue 52 item 2,
issue 51 item 5).

Each judged entry the report writes carries ``provenance``: the ``machine`` (CPU model and cores), the ``commit``
(HEAD's short hash, with " + uncommitted changes" where fedbench/ or params.yaml differ from it) and the ``date`` of
the report build that judged it from the records in ``results/``, and ``carried``: False for a verdict this build
computed, True for one kept from the report it replaces.

A verdict is kept (:func:`carry`) where this build has no result for its claim (its study did not run here: an opt-in
study, a paper-scale one, a train store without those runs) and the report it replaces judged it under the same rule
(the rule's words, generated from its data, are equal); under another rule it is not kept, and the not-run entry
carries it as ``earlier`` (verdict, counted verdict, effect, rule, provenance), so that nothing judged is lost. It keeps its provenance, its registration is read again from
the current registry, and it takes this build's command and cost to compute it here. So a fresh clone's ``make repro``
keeps the opt-in verdicts made elsewhere, each named with its machine, commit and date, until it is recomputed; a
verdict recomputed with the same numbers on the same machine keeps its provenance, so a rebuild changes no line of
claims.json. An entry of the earlier report that has no provenance (a report written before it was kept) is named
with the commit and date of the last commit of that report file and "machine not recorded".

Torch-free; runs git only to name the commit (a checkout without git says so).
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from fedbench.claims import registry as rules_registry
from fedbench.claims.entry import UNJUDGED, plain
from fedbench.claims.tally import counted_verdict

NOT_RECORDED = "not recorded"  # the machine of a verdict kept from a report written before provenance was kept
DIRTY = " + uncommitted changes"


def machine() -> str:
    """This machine as a verdict's provenance names it: the CPU model (/proc/cpuinfo, else platform) and its cores."""
    name = ""
    try:
        with open("/proc/cpuinfo") as f:
            name = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{name or platform.processor() or platform.machine() or 'unknown CPU'}, {os.cpu_count()} cores"


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit(cwd: Path = Path(".")) -> str:
    """HEAD's short hash (12 digits), with " + uncommitted changes" where fedbench/ or params.yaml differ from it;
    "no git checkout" outside one."""
    head = _git(["rev-parse", "--short=12", "HEAD"], cwd)
    if head is None:
        return "no git checkout"
    dirty = _git(["status", "--porcelain", "--", "fedbench", "params.yaml"], cwd)
    return head + (DIRTY if dirty else "")


def this_build(cwd: Path = Path(".")) -> dict[str, str]:
    """The provenance of a verdict this build computes: machine, commit, date (UTC)."""
    return {"machine": machine(), "commit": commit(cwd),
            "date": datetime.datetime.now(datetime.UTC).date().isoformat()}


def last_commit_of(path: Path, as_committed: bool = False) -> dict[str, str]:
    """The commit and date of the last commit of ``path`` (a report file), or what stands in for them: an unknown
    commit where git has none; " + uncommitted changes" where the file differs from it (unless it is read
    ``as_committed``)."""
    path = Path(path)
    cwd = path.parent if path.parent.exists() else Path(".")
    out = _git(["log", "-1", "--format=%h %ad", "--date=short", "--", path.name], cwd)
    changed = None if as_committed else _git(["status", "--porcelain", "--", path.name], cwd)
    if not out:
        return {"commit": "not committed", "date": "unknown"}
    head, date = out.split(" ", 1)
    return {"commit": head + (DIRTY if changed else ""), "date": date}


def committed(path: Path, rev: str = "HEAD") -> bytes | None:
    """The bytes of ``path`` (a file inside a git checkout) as committed at ``rev``; None where git, the checkout or
    the file is missing. What a report file was before this build where the file itself is gone: ``dvc repro``
    removes a stage's outputs before it runs the stage."""
    path = Path(path).resolve()
    folder = next((p for p in path.parents if p.exists()), Path("."))
    top = _git(["rev-parse", "--show-toplevel"], folder)
    if top is None:
        return None
    try:
        rel = path.relative_to(Path(top).resolve()).as_posix()
        done = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=top, capture_output=True, timeout=60, check=False)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def committed_folder(folder: Path, rev: str = "HEAD") -> dict[str, bytes]:
    """Every file under ``folder`` as committed at ``rev``, by its path relative to ``folder`` (empty where git, the
    checkout or the folder is missing)."""
    folder = Path(folder).resolve()
    base = next((p for p in folder.parents if p.exists()), Path("."))
    top = _git(["rev-parse", "--show-toplevel"], base)
    if top is None:
        return {}
    try:
        rel = folder.relative_to(Path(top).resolve()).as_posix()
    except ValueError:
        return {}
    names = _git(["ls-tree", "-r", "--name-only", rev, "--", rel + "/"], Path(top))
    out = {}
    for name in (names or "").splitlines():
        data = committed(Path(top) / name, rev)
        if data is not None:
            out[Path(name).relative_to(rel).as_posix()] = data
    return out


def _numbers(e: dict[str, Any]) -> Any:
    """An entry as JSON without what says where and under which registration it stands: what a recomputation must
    give again for the verdict to be the same one."""
    return plain({k: v for k, v in e.items() if k not in ("registration", "provenance", "command", "cost")})


def carry(fresh: list[dict[str, Any]], previous: list[dict[str, Any]] | None, build: dict[str, str],
          previous_origin: dict[str, str] | None = None,
          registry: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``fresh`` (the entries this build judged, each with its registration) with ``provenance``, and each entry this
    build has no result for replaced by the judged one of ``previous`` (the report it replaces) under the same rule.

    ``build``: this build's provenance (:func:`this_build`); ``previous_origin``: commit and date standing in for an
    earlier entry with no provenance (:func:`last_commit_of` of the earlier claims.json); ``registry``: the rules'
    registry the registration of a kept entry is read from (default: fedbench/claims/registry.json)."""
    before = {e["id"]: e for e in previous or []}
    origin = {"machine": NOT_RECORDED, **(previous_origin or {"commit": "unknown", "date": "unknown"})}
    registry = rules_registry.load() if registry is None and previous else registry
    out = []
    for e in fresh:
        old = before.get(e["id"])
        old_judged = old is not None and old["verdict"] not in UNJUDGED
        if e["verdict"] not in UNJUDGED:
            same = old_judged and _numbers(old) == _numbers(e) and (old.get("provenance") or {}).get("machine") == \
                build["machine"]
            kept = {k: old["provenance"][k] for k in ("machine", "commit", "date")} if same else dict(build)
            out.append(e | {"provenance": kept | {"carried": False}})
        elif old_judged and old.get("rule") == e.get("rule"):
            was = old.get("provenance") or origin
            kept = {k: v for k, v in old.items() if k not in ("registration", "provenance", "command", "cost")}
            rerun = {k: e[k] for k in ("command", "cost") if e.get(k) is not None}
            out.append(kept | {"study": e.get("study", old.get("study"))} | rerun
                       | {"registration": rules_registry.status(kept, registry),
                          "provenance": {k: was.get(k, "unknown") for k in ("machine", "commit", "date")}
                          | {"carried": True}})
        elif old_judged:  # its rule changed since: not kept, but what it said is (claims.json removes nothing)
            was = old.get("provenance") or origin
            out.append(e | {"earlier": {"verdict": old["verdict"], "counted_verdict": counted_verdict(old),
                                        "effect": old.get("effect"), "rule": old.get("rule"),
                                        "provenance": {k: was.get(k, "unknown") for k in ("machine", "commit", "date")}}})
        elif old is not None and old.get("earlier"):  # still not judged: what it said under its earlier rule stays
            out.append(e | {"earlier": old["earlier"]})
        else:
            out.append(e)
    return out





def computed_here(e: dict[str, Any]) -> bool:
    """Whether entry ``e`` was judged by the build that wrote it (not kept from an earlier report)."""
    p = e.get("provenance")
    return p is not None and not p.get("carried")


def where_text(p: dict[str, Any] | None) -> str:
    """'AMD EPYC 7B13, 2 cores, commit 98f2964, 2026-12-07': a provenance in words ('—' without one)."""
    if not p:
        return "—"
    machine = p.get("machine", NOT_RECORDED)
    return (f"{'machine not recorded' if machine == NOT_RECORDED else machine}, commit {p.get('commit', 'unknown')}, "
            f"{p.get('date', 'unknown')}")

"""Confirmatory runs (issue 32, item 1): ``fedbench claims confirm`` judges a claim again, by its frozen rule, on
seeds that did not exist when the rule was frozen. A rule written after its data was seen can only be tested on new
data; this command makes that data and records the verdict beside the exploratory one.

    fedbench claims confirm                                   # every default claim study (params.yaml claim_studies.default)
    fedbench claims confirm --study mime_synthetic            # one study (repeat --study for more)
    fedbench claims confirm mime/synthetic-1-1/momentum-helps # these claims only (their study runs once)
    fedbench claims confirm --dry-run                         # what would be frozen and run, writing nothing

For the chosen claims (judged entries of reports/claims.json), in this order:

1. **Refuse** in one line per claim, before anything is written, a claim whose rule is not registered as it stands
   (``fedbench claims register``), or whose rule changed since it was frozen: its confirmation is void (freeze it
   again, on new seeds, with ``fedbench claims freeze``).
2. **Freeze** the claims not frozen yet (fedbench.claims.registry.freeze: frozen hash, commit, date and a block of
   fresh seeds from CONFIRM_START up that no run has used), one block per study, as many seeds as the study's
   exploratory run had; the registry is written before any study runs. A study with no seed randomness
   (``seeds=()``) is marked DETERMINISTIC instead: a rerun would repeat its numbers, so nothing is frozen or run.
3. **Run** each study at its params.yaml budget on exactly its frozen seeds (fedbench.studies.stage.run_study with
   the seeds replaced), into ``results/confirm/<study>/<budget>/``: never over the exploratory records in
   results/<study>/.
4. **Judge** each rerun entry by the frozen rule: its frozen hash must equal the one frozen (the study's code states
   the rule; a rerun whose rule differs is refused, its confirmation void), and its training seeds the frozen block
   (fedbench.claims.registry.confirm). The confirmatory verdict is recorded with its effect, the commit, the date and
   the wall seconds the study's run took; the registry is written after each study. A study whose chosen claims
   are all confirmed under their frozen rules is not run again (the same seeds would repeat the same numbers).

Pre-registration shown by git (issue 51, item 1): freezing and running are two invocations with a commit between
them. A run that freezes a new block writes the registry and stops: commit it, then run the command again. It runs
only from a clean tree (no uncommitted change to a tracked file: :func:`tree_clean`) whose HEAD's history holds each
frozen block (:func:`frozen_commit`), and records that commit with the verdict ("frozen_in"), so the result lands in
a later commit; ``fedbench claims audit`` and tests/claims/test_git_registration.py check it in the history. A block
is fresh only if no commit ever recorded a result on any of its seeds (:func:`seeds_in_history`), and a claim whose
confirmation git does not show pre-registered is frozen again on a fresh block, the earlier block and its verdict
kept under ``earlier_blocks`` (disclosed). A confirmation recorded from a tree with uncommitted changes before
issue 51 (its commit ends in DIRTY) is run again on a fresh block the same way.

Seeds (issue 51, item 3): a study's block has as many seeds as the power rule of its headline claims asks for
(fedbench.claims.registry.power_rule: fedbench.claims.stats.seeds_for_power, the half-width below half the published effect, or half
the exploratory one), at least its exploratory count; the rule is recorded with the block, before the run.

The claims of params.yaml's grid, which the report files under a name of their own (:data:`GROUPS`): the main job's
(``--study "main job"``: params.yaml studies stragglers and heterogeneity, 140 runs) and the MNIST-5k ones of "real
data" (``--study "real data"``: study fedprox_mnist5k, 30 runs) are confirmed as every claim study is, by their study's
own run on the frozen block (the main job study, fedbench.studies.fedprox_main_job, on those two params.yaml studies;
the MNIST-5k study, fedbench.studies.fedprox_real), run by the one driver into ``results/confirm/main-job/`` and
``results/confirm/real-data/`` (data from --data-root) and judged there, as the driver judges its exploratory run.
Their exploratory runs took 1593 and 184 s of run time on the project's 2-core CPU (reports/runs.csv): about 13 and 2
minutes on 2 workers; ``--dry-run`` quotes them. A "real data" claim of a paper-scale claim study (e.g. Mime's
Fashion-MNIST ordering, run by mime_fashion) is confirmed by that study's own run on the frozen seeds, its real
variant read from data/real (``--study mime_fashion`` or its id picks it).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fedbench.claims import registry as rules
from fedbench.claims.entry import UNJUDGED
from fedbench.claims.registry import power_rule
from fedbench.config import load_config
from fedbench.errors import FedbenchError
from fedbench.studies.fedprox_main_job import DECLARATION as MAIN_JOB_STUDY
from fedbench.studies.fedprox_main_job import MAIN_STUDIES
from fedbench.studies.fedprox_real_data import MNIST5K, MNIST5K_STUDY, declaration
from fedbench.study import registry as studies
from fedbench.study.experiments import DATA_ROOT, study_runs
from fedbench.study.layout import MAIN_JOB, adopt, confirm_root, home_budget, study_folder

CONFIRM_ROOT = confirm_root()  # the confirmatory runs' records: results/confirm/<study>/<budget>/ (git-ignored)
RUNS_CSV = Path("reports/runs.csv")  # the train stage's runs with their measured wall times (the dry run's cost)


@dataclasses.dataclass(frozen=True)
class Group:
    """Claims of params.yaml's grid that the report files under ``name`` (fedbench.report.build: "main job", "real
    data"): confirmed by claim study ``study`` run on the frozen block with params.yaml's ``studies`` only, into
    ROOT/<folder>/."""

    name: str
    study: str
    folder: str
    studies: tuple[str, ...]
    ids: tuple[str, ...]  # the claims the study judges (the rest of "real data" is judged elsewhere)


GROUPS = {g.name: g for g in (
    Group("main job", MAIN_JOB, "main-job", MAIN_STUDIES, tuple(c.id for c in MAIN_JOB_STUDY.claims)),
    Group("real data", MNIST5K, "real-data", (MNIST5K,), tuple(c.id for c in declaration(MNIST5K_STUDY).claims)),
)}


def group_of(entry: dict[str, Any]) -> str:
    """The confirmation group of a claim entry: its study; for a claim of a group's report study that the group does
    not judge (a paper-scale study's "real data" entry), the claim study that ran it where the study registry has it
    (its confirmatory run is that study's, fedbench.studies.stage.run_study: e.g. mime_fashion), else "<study>: <the
    study named>", which has no runner here."""
    study = entry.get("study") or ""
    group = GROUPS.get(study)
    if group is None or entry["id"] in group.ids:
        return study
    ran = (entry.get("scale") or {}).get("study") or "other"
    return ran if ran in studies.names() else f"{study}: {ran}"


def confirm_config(cfg, seeds: list[int], workers: int, group: Group | None = None):
    """``cfg`` with the frozen ``seeds`` as train.seeds, ``workers`` worker processes (no number changes with it) and,
    for a ``group``, only its params.yaml studies."""
    cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, seeds=tuple(seeds), workers=workers))
    return cfg if group is None else dataclasses.replace(cfg, studies={s: cfg.studies[s] for s in group.studies})


def measured_seconds(cfg, group: Group, runs_csv: Path) -> tuple[float, int] | None:
    """The summed wall time (s) and the number of the group's exploratory runs in ``runs_csv`` (reports/runs.csv:
    each stacked run with its share of its stack's time); None where the file or the runs are not there."""
    import csv

    from fedbench.study.experiments import study_runs

    cells = {tuple(k) for k in study_runs(cfg, group.studies)}
    try:
        with open(runs_csv, newline="") as f:
            rows = [r for r in csv.DictReader(f)
                    if (r["dataset"], r["variant"], float(r["stragglers"]), int(r["seed"])) in cells]
    except (OSError, KeyError, ValueError):
        return None
    return (sum(float(r["wall_time_s"]) for r in rows), len(rows)) if rows else None


def judged(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries that carry a verdict to confirm: judged (not not-run), not a study's placeholder (``/*``)."""
    return [e for e in entries if e.get("verdict") not in (None, *UNJUDGED) and not e["id"].endswith("/*")]


def choose(entries: list[dict[str, Any]], chosen_studies: list[str], ids: list[str],
           default: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The judged entries to confirm, by study (in the order the studies are named): those of ``ids`` where given,
    else of ``chosen_studies``, else of the ``default`` studies. ValueError in one line for an id or study that has
    no judged claim in ``entries``."""
    pool = judged(entries)
    known = sorted({e.get("study") or "" for e in pool} | {group_of(e) for e in pool})
    if unknown := [s for s in chosen_studies if s not in known]:
        raise ValueError(f"--study {', '.join(unknown)}: no judged claim in the claims read; allowed: {', '.join(known)}")
    if unknown := sorted(set(ids) - {e["id"] for e in pool}):
        raise ValueError(f"claim ids not judged in the claims read: {', '.join(unknown)}")
    picked = [e for e in pool if (e["id"] in ids if ids else
                                  {e.get("study"), group_of(e)} & set(chosen_studies or default))]
    out: dict[str, list[dict[str, Any]]] = {}
    for e in picked:
        out.setdefault(group_of(e), []).append(e)
    order = chosen_studies or default
    return dict(sorted(out.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def refusals(groups: dict[str, list[dict[str, Any]]], registry: dict[str, Any]) -> list[str]:
    """One line per claim that cannot be confirmed as it stands: its rule not registered as it is now, its rule changed
    since it was frozen (its confirmation void), or a study whose claims were frozen with different seed blocks and
    are not all confirmed yet (a study whose claims were confirmed on blocks of their own, as the refusal advises,
    has nothing to run: refusing it would stop every later ``fedbench claims confirm``)."""
    out = []
    for study, members in groups.items():
        for e in members:
            st = rules.status(e, registry)
            frozen = (registry.get(e["id"]) or {}).get("frozen")
            if st["status"] == "unregistered":
                out.append(f"{e['id']}: rule not registered (fedbench claims register), then confirm it")
            elif st["status"] != "registered":
                out.append(f"{e['id']}: rule changed since registration (fedbench claims register --why REASON), "
                           "then confirm it")
            elif frozen is not None and frozen["hash"] != rules.frozen_hash(e):
                try:
                    rules.check_frozen(e, registry)
                except ValueError as err:
                    out.append(str(err))
        if all(settled(e, registry) for e in members):
            continue
        blocks = {tuple(b["seeds"]) for e in members if (b := (registry.get(e["id"]) or {}).get("frozen"))}
        if len(blocks) > 1 or (blocks and any(not (registry.get(e["id"]) or {}).get("frozen") for e in members)):
            apart = [e["id"] for e in members if not (registry.get(e["id"]) or {}).get("frozen")] or [
                e["id"] for e in members]
            out.append(f"study {study}: its claims are frozen with different seed blocks ({sorted(blocks)}); confirm "
                       f"the others by id (frozen on a block of their own: fedbench claims confirm {' '.join(apart)}), "
                       f"or freeze them all together: fedbench claims freeze {' '.join(e['id'] for e in members)}")
    return out


def runnable(study: str) -> bool:
    """Whether ``study`` is a claim study this command can rerun (fedbench.study.registry) or a group of claims of
    params.yaml's grid (:data:`GROUPS`: the main job, the MNIST-5k claims of real data)."""
    return study in studies.names() or study in GROUPS


def deterministic(study: str) -> bool:
    """Whether ``study`` is a claim study with no seed randomness (the train stage's runs all have seeds)."""
    return study in studies.names() and studies.is_deterministic(study)


def fresh_data(study: str) -> bool:
    """Whether ``study`` draws its own data from a data seed (StudyDeclaration.fresh_data), so that its confirmatory
    block draws fresh data seeds too (the train stage's groups train on params.yaml's one data draw: not yet)."""
    return study in studies.names() and studies.declaration(study).fresh_data


def data_seeds_of(members: list[dict[str, Any]], registry: dict[str, Any]) -> list[int] | None:
    """The fresh data seeds frozen with the block of ``members`` (None where the block froze training seeds only)."""
    drawn = registry[members[0]["id"]]["frozen"].get("data_seeds")
    return None if drawn is None else list(drawn)


def settled(e: dict[str, Any], registry: dict[str, Any]) -> bool:
    """Whether ``e``'s claim needs no confirmatory run: confirmed under its frozen rule and shown pre-registered
    (fedbench.claims.registry.counted_confirmation), recorded from a committed tree."""
    return rules.status(e, registry).get("confirmation") == "confirmed"


def freeze_all(groups: dict[str, list[dict[str, Any]]], entries: list[dict[str, Any]], registry: dict[str, Any],
               commit: str, date: str, redraw: bool = False) -> tuple[dict[str, Any], list[str]]:
    """``registry`` with every chosen claim of a seeded study frozen (one fresh block per study, as many seeds as its
    exploratory run; a block chosen after the blocks frozen before it, so no two studies share a seed) and every
    claim of a deterministic study marked DETERMINISTIC; and the lines saying what was done. ``redraw``
    (``--fresh-data``): a claim of a study that draws its own data whose block drew no data seeds is frozen again on
    a block that does (fedbench.claims.registry.freeze)."""
    done = []
    for study, members in groups.items():
        if deterministic(study):
            for e in members:
                if rules.status(e, registry)["confirmation"] != rules.DETERMINISTIC:
                    registry = rules.mark_deterministic(e, registry, commit, date)
                    done.append(f"{e['id']}: {rules.DETERMINISTIC} (study {study} has no seed randomness)")
            continue
        todo = [e["id"] for e in members if not (registry.get(e["id"]) or {}).get("frozen") or unshown(e, registry)
                or (redraw and fresh_data(study) and "data_seeds" not in registry[e["id"]]["frozen"])]
        if todo:
            count = len((members[0].get("seeds") or {}).get("training") or [])
            power = power_rule([e for e in members if e["id"] in todo])
            registry, lines = rules.freeze(entries, registry, commit, date, max(count, 1, power["seeds"] if power else 0),
                                           todo, seeds_in_history(), power, lambda e, s=study: fresh_data(s),
                                           redraw)
            done += lines
    return registry, done


def unshown(e: dict[str, Any], registry: dict[str, Any]) -> bool:
    """Whether ``e``'s claim is confirmed under its frozen rule but git does not show it pre-registered (or it was
    recorded from a dirty tree before issue 51): it is frozen again on a fresh block."""
    return bool(rules.status(e, registry).get("unshown_confirmatory"))


def seeds_of(members: list[dict[str, Any]], registry: dict[str, Any]) -> list[int]:
    return list(registry[members[0]["id"]]["frozen"]["seeds"])


def blocks_text(members: list[dict[str, Any]], registry: dict[str, Any]) -> str:
    """The frozen seed blocks of ``members``, each once, in the order first met: "1010-1014 and 1040-1044"."""
    blocks = dict.fromkeys(tuple(registry[e["id"]]["frozen"]["seeds"]) for e in members)
    return " and ".join(rules.seeds_text(list(b)) for b in blocks)


def judge(study: str, members: list[dict[str, Any]], rerun: list[dict[str, Any]], registry: dict[str, Any],
          commit: str, date: str, seconds: float, where: str,
          frozen_in: dict[str, str] | None = None) -> tuple[dict[str, Any], list[str], list[str]]:
    """``registry`` with the confirmatory verdict of each of ``members`` read from ``rerun`` (the study's entries on
    the frozen seeds) and the commit holding its frozen block (``frozen_in``, by claim id), the lines to print, and
    the refusals (a claim the rerun did not judge, or judged under another rule than the frozen one: its confirmation
    void)."""
    by_id = {e["id"]: e for e in rerun}
    lines, refused = [], []
    for e in members:
        new = by_id.get(e["id"])
        if new is None or new.get("verdict") in (None, *UNJUDGED):
            refused.append(f"{e['id']}: the confirmatory run of {study} did not judge it")
            continue
        try:
            registry = rules.confirm(new, registry, commit, date, seconds, where, (frozen_in or {}).get(e["id"]))
        except ValueError as err:
            refused.append(str(err))
            continue
        lines.append(f"{new['verdict']:>15}  {e['id']}  (exploratory: {e['verdict']})")
    return registry, lines, refused


def git_commit() -> str:
    """HEAD's short hash."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True)
    return head.stdout.strip()


def tree_clean() -> bool:
    """Whether no tracked file differs from HEAD (untracked files aside: results/ and data/ are git-ignored)."""
    return not subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                              check=True).stdout.strip()


def frozen_commit(cid: str, frozen: dict[str, Any]) -> str:
    """The commit on HEAD's history whose registry first holds ``cid``'s ``frozen`` block (ValueError in one line where
    none does: the block was frozen and not committed)."""
    return rules.commit_of_block(frozen, cid)


def seeds_in_history() -> set[int]:
    """Every seed a commit of the repository recorded a result on or froze (fedbench.claims.registry.history_seeds)."""
    return rules.history_seeds(rules.history())


def _claims(members: list[dict[str, Any]]) -> str:
    return f"{len(members)} claim{'s' if len(members) != 1 else ''}"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fedbench claims confirm",
        description="Judge claims again on fresh seeds under their frozen rules (issue 32): freeze each chosen claim's "
                    "rule with a block of never-used seeds (recorded in the registry before anything runs), rerun its "
                    "study at the same budget on exactly those seeds into ROOT/<study>/<budget>/, and record the confirmatory "
                    "verdict, commit, date and wall time beside the exploratory one. The main job's claims (--study "
                    "'main job') and the MNIST-5k ones (--study 'real data') rerun the train stage's runs of their "
                    "params.yaml studies on the frozen seeds into ROOT/main-job/ and ROOT/real-data/ (about 13 and 2 "
                    "min on 2 CPU workers, from reports/runs.csv). A study with no seed randomness is marked "
                    "'deterministic: no seeds to confirm'. Freezing and running take two invocations: a run that "
                    "freezes new blocks writes the registry and stops (commit it); the next runs them from a clean tree "
                    "whose HEAD's history holds the blocks, and records that commit (issue 51). A block's seeds follow "
                    "the power rule of its headline claims, declared with it.",
        epilog="examples: fedbench claims confirm   (the default claim studies)  |  fedbench claims confirm --study "
               "mime_synthetic  |  fedbench claims confirm --study 'main job' --study 'real data'  |  fedbench claims "
               "confirm --dry-run")
    p.add_argument("ids", nargs="*", help="only these claim ids (default: every judged claim of the chosen studies)")
    p.add_argument("--study", action="append", default=[], metavar="NAME",
                   help="a study to confirm, as claims.json names it or the claim study that ran it (repeatable; "
                        "default: params.yaml's default claim_studies)")
    p.add_argument("--claims", default="reports/claims.json", help="the exploratory claims (default: %(default)s)")
    p.add_argument("--registry", default=str(rules.REGISTRY), help="the registry file (default: %(default)s)")
    p.add_argument("--params", default="params.yaml", help="the params file: budgets and executor (default: %(default)s)")
    p.add_argument("--root", default=str(CONFIRM_ROOT), help="where the confirmatory runs go (default: %(default)s)")
    p.add_argument("--data-root", default=str(DATA_ROOT), help="the train stage's synthetic data (its real variants "
                                                             "beside it, in ../real/), read by the main job's and "
                                                             "MNIST-5k's runs (default: %(default)s)")
    p.add_argument("--runs-csv", default=str(RUNS_CSV), help="the exploratory runs' measured wall times, quoted by "
                                                             "--dry-run (default: %(default)s)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default: %(default)s)")
    p.add_argument("--fresh-data", action="store_true",
                   help="freeze again, with fresh data seeds beside the training seeds, every chosen claim of a study "
                        "that draws its own data whose block drew none (its earlier confirmation is kept, disclosed, "
                        "and the new one counts once run; issue 51, item 2)")
    p.add_argument("--dry-run", action="store_true", help="say what would be frozen and run; write nothing")
    return p


def budget_of(study: str, members: list[dict[str, Any]]) -> str | None:
    """The budget ``study``'s exploratory entries ``members`` ran at (their ``scale.budget``), which its confirmation
    reruns: e.g. fedproxvr_fashion's Table 1 alone ("convex"), not its home budget ("paper", both tables). None where
    no entry names one (the home budget, fedbench.study.layout.home_budget); a ValueError naming them where they
    differ."""
    named = sorted({e["scale"]["budget"] for e in members
                    if isinstance(e.get("scale"), dict) and e["scale"].get("budget")})
    if len(named) > 1:
        raise ValueError(f"{study}: its entries ran at budgets {', '.join(named)}; a confirmation reruns one")
    return named[0] if named else None


def folder(study: str, root: str | Path, cfg, budget: str | None = None) -> Path:
    """Where ``study``'s confirmatory runs go: a claim study's ROOT/<study>/<budget>/ (``budget``: the one its
    exploratory entries ran at, :func:`budget_of`; default its home budget; the results layout,
    fedbench.study.layout), a train group's ROOT/<its folder>/ (main-job, real-data)."""
    group = GROUPS.get(study)
    return Path(root) / group.folder if group else study_folder(study, budget or home_budget(cfg, study), root)


def _plan_line(study: str, members: list[dict[str, Any]], registry: dict[str, Any], cfg, a: argparse.Namespace) -> str:
    """What the dry run says a study's confirmation would do: its claims, seeds and root; for a train group, how many
    runs and what its exploratory runs cost (reports/runs.csv)."""
    seeds = seeds_of(members, registry)
    group = GROUPS.get(study)
    if group is None:
        return (f"{study}: would run for {_claims(members)} on seeds {rules.seeds_text(seeds)} into "
                f"{folder(study, a.root, cfg, budget_of(study, members))}/")
    on = confirm_config(cfg, seeds, a.workers, group)
    cost = measured_seconds(cfg, group, Path(a.runs_csv))
    said = ("no measured cost at hand" if cost is None else
            f"its {cost[1]} exploratory runs took {cost[0]:.0f} s in {a.runs_csv}: about "
            f"{cost[0] / 60 / a.workers:.1f} min on {a.workers} worker{'s' if a.workers != 1 else ''}")
    return (f"{study}: would train {len(study_runs(on))} runs (params.yaml studies "
            f"{', '.join(group.studies)}) for {_claims(members)} on seeds {rules.seeds_text(seeds)} into "
            f"{folder(study, a.root, cfg)}/ ({said})")


def _rerun(study: str, seeds: list[int], cfg, a: argparse.Namespace,
           data_seeds: list[int] | None = None, budget: str | None = None) -> list[dict[str, Any]]:
    """The study's entries on the frozen ``seeds``, its runs in :func:`folder`, judged by the one driver as its
    exploratory run was: a claim study's by fedbench.studies.stage.run_study; a group's (:data:`GROUPS`) by its claim
    study's run through the same driver (fedbench.study.output.run_claim_study) on params.yaml's grid with the block
    as train.seeds and its studies only, its data from --data-root (generated there where missing), which run_study,
    reading a small study's data from data/generated, does not take."""
    group = GROUPS.get(study)
    if group is not None:
        from fedbench.executors import ExecutorSettings
        from fedbench.pipeline import ensure_dataset
        from fedbench.study.output import run_claim_study

        on = confirm_config(cfg, seeds, a.workers, group)
        for ds in dict.fromkeys(k.dataset for k in study_runs(on)):
            ensure_dataset(on, ds, Path(a.data_root))
        return run_claim_study(group.study, study_folder(group.study, None, folder(study, a.root, cfg)),
                               workers=a.workers, executor=ExecutorSettings.of(on.train), real_root=Path(a.data_root),
                               config=on)
    from fedbench.studies.stage import run_study  # here: --help and the refusals import no engine

    return run_study(cfg, study, budget=budget, root=Path(a.root), seeds=tuple(seeds), workers=a.workers,
                     data_seeds=None if data_seeds is None else tuple(data_seeds))


def main(argv: list[str]) -> int:
    """``fedbench claims confirm``."""
    a = parser().parse_args(argv)
    name = "fedbench claims confirm"
    try:
        entries = json.loads(Path(a.claims).read_text())["claims"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        print(f"{name}: --claims {a.claims}: not a readable claims.json with a 'claims' list (build it: dvc repro)",
              file=sys.stderr)
        return 2
    try:
        cfg = load_config(a.params)
        if Path(a.root) == CONFIRM_ROOT:  # the earlier layout's runs/ (runs/confirm/ among them), moved in first
            adopt(cfg)
        registry = rules.load(a.registry)
        default = [s for s, c in cfg.claim_studies.items() if c.default]
        groups = choose(entries, a.study, a.ids, default)
        commit = git_commit()
    except (ValueError, FedbenchError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2
    except (OSError, subprocess.CalledProcessError):
        print(f"{name}: needs a git checkout (the registry records the commit)", file=sys.stderr)
        return 2
    if a.workers < 1:
        print(f"{name}: --workers: must be >= 1, got {a.workers}", file=sys.stderr)
        return 2
    if refused := refusals(groups, registry):
        print("\n".join(f"{name}: {r}" for r in refused), file=sys.stderr)
        return 1
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    registry, done = freeze_all(groups, entries, registry, commit, date, a.fresh_data)
    if a.dry_run:
        print("\n".join(done) or "every chosen claim already frozen")
        for study, members in groups.items():
            if not runnable(study) or deterministic(study):
                continue
            if all(settled(e, registry) for e in members):
                print(f"{study}: already confirmed on its frozen seeds {blocks_text(members, registry)} (nothing to run)")
            else:
                print(_plan_line(study, members, registry, cfg, a))
        if any(line.startswith("froze ") for line in done):
            print("(a real run would write these blocks and stop: commit the registry, then run it again)")
        print("(dry run: nothing written)")
        return 0
    if any(line.startswith("froze ") for line in done):  # a new block: committed before anything runs on it
        rules.dump(registry, a.registry)
        print("\n".join(done), flush=True)
        print(f"{name}: new blocks frozen; nothing run. Commit the registry ({a.registry}) so that the blocks are on "
              "HEAD's history before their runs, then run this command again from a clean tree", flush=True)
        return 0
    if done:  # deterministic marks only: nothing to run on them
        rules.dump(registry, a.registry)
        print("\n".join(done), flush=True)
    if not tree_clean():
        print(f"{name}: the tree has uncommitted changes (git status): a confirmation runs from a clean tree, so that "
              f"the commit it records ({commit}) is what ran; commit or set them aside first", file=sys.stderr)
        return 1
    failed = []
    for study, members in groups.items():
        seeds = seeds_of(members, registry)
        if not runnable(study):
            print(f"{study}: frozen, not yet run ({_claims(members)} on seeds {rules.seeds_text(seeds)}: no "
                  "confirmatory runner for them yet)", flush=True)
            continue
        if deterministic(study):
            print(f"{study}: {rules.DETERMINISTIC} ({_claims(members)})", flush=True)
            continue
        if all(settled(e, registry) for e in members):
            print(f"{study}: already confirmed on its frozen seeds {blocks_text(members, registry)} "
                  "(a rerun on them repeats the numbers; a new confirmation needs the rule frozen again)", flush=True)
            continue
        try:
            frozen_in = {e["id"]: frozen_commit(e["id"], registry[e["id"]]["frozen"]) for e in members}
        except ValueError as e:
            failed.append(f"{study}: {e}")
            print(f"{name}: {e}", file=sys.stderr)
            continue
        drawn = data_seeds_of(members, registry)
        try:
            budget = budget_of(study, members)
        except ValueError as e:
            failed.append(str(e))
            print(f"{name}: {e}", file=sys.stderr)
            continue
        print(f"{study}: confirmatory run on seeds {rules.seeds_text(seeds)}"
              + (f", fresh data seeds {rules.seeds_text(drawn)}" if drawn else "") + " (frozen in "
              f"{', '.join(sorted({c[:12] for c in frozen_in.values()}))}) into {folder(study, a.root, cfg, budget)}/ ...",
              flush=True)
        t0 = time.perf_counter()
        try:
            rerun = _rerun(study, seeds, cfg, a, data_seeds_of(members, registry), budget)
        except (ValueError, FedbenchError) as e:
            failed.append(f"{study}: {e}")
            print(f"{name}: {study}: {e}", file=sys.stderr)
            continue
        seconds = time.perf_counter() - t0
        registry, lines, refused = judge(study, members, rerun, rules.load(a.registry), commit, date, seconds,
                                         str(folder(study, a.root, cfg, budget)), frozen_in)
        rules.dump(registry, a.registry)
        print(f"{study}: confirmed in {seconds:.1f} s wall")
        print("\n".join(lines), flush=True)
        for r in refused:
            print(f"{name}: {r}", file=sys.stderr)
        failed += refused
    return 1 if failed else 0

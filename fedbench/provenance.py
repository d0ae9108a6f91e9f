"""Which code determines fedbench's numbers, and which commit computed them. Imports nothing heavy.

``RUN_CODE`` is the source of a training run's numbers: the run fingerprint hashes it (a change makes every
finished run stale; a change of comments, docstrings or layout alone does not: :func:`code_hash`), and the commit
recorded with a run is ``-dirty`` only when a file of it differs from HEAD. ``STUDY_CODE`` is the same for the claim studies (the code they share; each also depends on its own module,
``study_code``). dvc.yaml's study stages depend on exactly ``study_code(name)``, its main job stage on ``MAIN_JOB_STAGE_CODE``;
tests/faults/test_layering.py checks that dvc.yaml says the same. Paths are relative to the fedbench
package; a folder stands for every ``.py`` file under it.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent

# a training run: the engine, the algorithms and models, the loader of its dataset and word table (data/load.py),
# and the one runner that stacks and runs it (study/runner.py)
RUN_CODE = ("engine", "algorithms", "models", "availability", "data/format.py", "data/transforms.py", "data/load.py",
            "study/runner.py", "seeding.py", "ops.py", "quantile.py", "optimizers.py", "proximal.py", "divergence.py")
# the claim model's code, file by file: fedbench/claims/ also holds the committed registry (registry.json), data that
# `fedbench claims register` rewrites and that changes no study's numbers, so the folder itself is no dependency
CLAIMS_CODE = tuple(f"claims/{m}.py" for m in ("__init__", "coverage", "entry", "fidelity", "magnitude", "papers", "readings", "registry",
                                                 "selection", "stats", "tally", "verdict"))
# the real data a params.yaml study reads itself (scaffold_concrete: UCI concrete from a package's wheel, checked by
# its sha256, split by SCAFFOLD's similarity partitioner)
STUDY_DATA = ("data/concrete.py", "data/sources.py", "data/download.py", "data/partition")
# a claim study: its own module (studies/<name>.py, see study_code) and this shared code: the studies' runner, their
# declaration, record format, outcome reuse and stage (params.yaml -> the run), the same engine, their synthetic
# data, the worker processes or Ray tasks (one torch thread each, which fixes the order of floating-point sums), the
# claim model that judges them and the figures they draw, and STUDY_PARTS: a params.yaml study's sibling modules (its
# claims, or an arm's algorithm, kept apart; dvc.yaml's one study stage lists the same deps for every study it runs,
# so each such study depends on every sibling)
STUDY_PARTS = ("studies/scaffold_quadratics_claims.py", "studies/fedprox_stragglers.py",
               "studies/scaffold_concrete_claims.py", *STUDY_DATA)
STUDY_CODE = ("studies/__init__.py", "study/declaration.py", "study/runner.py", "study/output.py", "study/contract.py",
              "study/layout.py", "study/record.py", "study/reuse.py", "studies/stage.py", *STUDY_PARTS, "engine", "algorithms", "models", "availability",
              "data/__init__.py", "data/format.py", "data/transforms.py", "data/load.py", "data/synthetic.py", "seeding.py", "ops.py",
              "quantile.py", "optimizers.py", "proximal.py", "parallel.py", "executors.py", "divergence.py", *CLAIMS_CODE,
              "plotting.py", "locking.py")

# what computes a simulation, the main job's and every claim study's (its fingerprint hashes it, fedbench.study.reuse): a
# training run's code and the one-torch-thread rule of the workers; every file of it is a dep of the study stages
# (STUDY_CODE), so an edit DVC calls up to date leaves no study's outcomes stale. Its hash is the one it had while the
# train store lived (6e95dcbb4a6aeeb0 at a75443e): the same files in the same order, runner.py never among them.
STUDY_RUN_CODE = RUN_CODE + ("parallel.py",)
# FROZEN, for one reader only: what the former train store's index lines hashed as their ``code`` (the train stage's
# run code, runner.py included, before issue 50 removed fedbench/runner.py). The one-time move of a checkout's
# results/train/ (fedbench.studies.fedprox_main_job._same_run_code) hashes these files as committed at the commit an
# old run records, where they all exist; never hashed in today's tree, so tests/faults/test_layering.py exempts it
# from its check that named files exist. Remove with adopt_train_store (after 2027-03-01).
LEGACY_TRAIN_RUN_CODE = ("engine", "algorithms", "models", "availability", "data/format.py", "data/transforms.py",
                         "data/load.py", "runner.py", "study/runner.py", "seeding.py", "ops.py", "quantile.py",
                         "optimizers.py", "proximal.py", "divergence.py", "parallel.py")


def study_code(name: str, base: str | None = None) -> tuple[str, ...]:
    """The code claim study ``name``'s numbers and entries come from: its module and STUDY_CODE (dvc.yaml's
    study@NAME deps; tests/faults/test_layering.py checks that a study imports nothing of fedbench outside them), and
    for a variant (fedbench.study.registry.VARIANTS) the module of its ``base`` study, whose hooks it runs."""
    return (f"studies/{name}.py", *((f"studies/{base}.py",) if base else ()), *STUDY_CODE)


# the main job's stage (dvc.yaml main_job: the study fedbench.studies.fedprox_main_job, whose grid is params.yaml's, then
# params.yaml's offline MNIST-5k study on its runs, fedbench.studies.fedprox_real): the shared code
# of every study stage, every study module and the study framework (its measures, figures and the real-data judges
# import across fedbench/studies, the real-data ones fedbench/data), and what turns params.yaml into its runs (config)
MAIN_JOB_STAGE_CODE = ("studies", "study", "data",
                       *(p for p in STUDY_CODE if not p.startswith(("studies/", "study/", "data/"))),
                       "config.py", "provenance.py")


def code_files(paths: Sequence[str], root: Path = PACKAGE) -> list[Path]:
    """The ``.py`` files ``paths`` stand for, in a fixed order (missing ones left out)."""
    out = []
    for rel in paths:
        path = root / rel
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.exists() else []
    return out


def code_hash(paths: Sequence[str] = RUN_CODE, root: Path = PACKAGE) -> str:
    """SHA-256 (16 hex digits) over the names and the code of the files ``paths`` stand for: each file's syntax
    tree without its docstrings (:func:`_code_digest`), so that a comment, a docstring or a line's layout changes no
    fingerprint and recomputes no run, and any other change does. The tree is as this Python parses it: another
    minor version of Python may hash the same files differently (its runs are then computed anew, never mixed)."""
    h = hashlib.sha256()
    for f in code_files(paths, root):
        h.update(str(f.relative_to(root)).encode())
        stat = f.stat()
        h.update(_code_digest(str(f), stat.st_mtime_ns, stat.st_size))
    return h.hexdigest()[:16]


def file_hash(path: str | Path) -> str:
    """The code of one Python file, as :func:`code_hash` reads it (16 hex digits)."""
    stat = Path(path).stat()
    return _code_digest(str(path), stat.st_mtime_ns, stat.st_size).hex()[:16]


@functools.cache
def _code_digest(path: str, mtime_ns: int, size: int) -> bytes:
    """SHA-256 of the code of the Python file ``path`` (parsed once per state of the file): its syntax tree
    (ast.dump: no comments, no layout) with every statement that is a bare string left out (docstrings: they run
    nothing; a body left empty is a ``pass``). A file that does not parse is hashed by its bytes."""
    source = Path(path).read_bytes()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return hashlib.sha256(source).digest()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).digest()


def git_commit(paths: Sequence[str] = RUN_CODE, root: Path = PACKAGE) -> str:
    """HEAD of the checkout ``root`` (the fedbench package) lives in, with ``-dirty`` when a ``.py`` file that
    ``paths`` stand for differs from HEAD (changed, staged or untracked). What the pipeline rewrites as it runs
    (dvc.lock, reports/) and any other file does not make it dirty: those do not change the numbers.
    ``unknown`` outside a git checkout."""
    run = dict(capture_output=True, text=True, check=True, cwd=root)
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], **run).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--",
                                 *(str(root / p) for p in paths)], **run).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = any(line.rstrip().endswith(".py") for line in status.splitlines())
    return sha + ("-dirty" if dirty else "")

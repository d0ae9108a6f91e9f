"""Issue 9, "Layering": the CLI's light commands import no torch; no import cycle in fedbench; tracking imports
no engine; the code that determines the numbers is one list (fedbench.provenance) that dvc.yaml agrees with;
algorithm hyperparameters are checked in one place, from the algorithms' own dataclass fields."""

import ast
import dataclasses
import subprocess
import sys

import pytest
import yaml

from tests.faults.conftest import ROOT

PROBE = """
import sys, time
t0 = time.perf_counter()
from fedbench.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(f"SECONDS {time.perf_counter() - t0:.3f}", file=sys.stderr)
print("HEAVY", sorted(m for m in ("torch", "mlflow", "pandas", "matplotlib") if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize("args, light", [(["--help"], True), (["check-config"], True), (["show"], False),
                                         (["show", "--claims"], True)])
def test_light_commands_import_no_torch(ws, args, light):
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ws.path, env=ws.env, capture_output=True,
                          text=True, timeout=60)
    heavy = eval(proc.stderr.split("HEAVY", 1)[1].strip())
    assert "torch" not in heavy, proc.stderr[-2000:]
    if light:  # nothing but the standard library, yaml and numpy: well under a second
        assert heavy == [], proc.stderr[-2000:]
    assert not (ws.path / "mlflow.db").exists() and not ws.store.exists()  # `show` creates no store


def _import_graph() -> dict[str, set[str]]:
    """fedbench module -> the fedbench modules it imports, at module level or inside functions."""
    files = {".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f
             for f in (ROOT / "fedbench").rglob("*.py")}

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for module, f in files.items():
        targets = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[module] = {o for t in targets if t.startswith("fedbench") and (o := owner(t)) and o != module}
    return graph


def test_no_import_cycles():
    graph = _import_graph()
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            assert state.get(n) != 1, f"import cycle: {' -> '.join(path[path.index(n):] + [n]) if n in path else n}"
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])


# The direction imports run in between fedbench's packages (a module imports, at module level or inside a function,
# nothing its package may not): the claim model (entry schema, rules, readings, statistics, verdicts, citations) is
# below both the studies and the report and imports neither; studies never import the report; the numbers' layers
# (data, availability, models, algorithms, engine) import nothing above them; the report renders entries and runs
# and imports no engine, algorithm, model or MLflow.
MAY_NOT_IMPORT = {
    "fedbench.claims": ("fedbench.studies", "fedbench.report", "fedbench.engine", "fedbench.algorithms",
                        "fedbench.models", "fedbench.data", "fedbench.bench", "fedbench.pipeline",
                        "fedbench.tracking", "fedbench.track", "fedbench.cli", "fedbench.executors"),
    "fedbench.studies": ("fedbench.report", "fedbench.tracking", "fedbench.track", "fedbench.cli"),
    # report/ only renders (issue 30, item 6): the entries the studies gather (fedbench.studies.entries) to markdown,
    # JSON and figures; it judges, fetches, trains and times nothing, and reads no run but through the studies
    "fedbench.report": ("fedbench.engine", "fedbench.algorithms", "fedbench.models", "fedbench.tracking",
                        "fedbench.paper", "fedbench.data.stages", "fedbench.data.download", "fedbench.bench",
                        "fedbench.pipeline", "fedbench.executors"),
    **{numbers: ("fedbench.claims", "fedbench.studies", "fedbench.report", "fedbench.bench",
                 "fedbench.pipeline", "fedbench.tracking", "fedbench.track", "fedbench.cli")
       for numbers in ("fedbench.data", "fedbench.availability", "fedbench.models", "fedbench.algorithms",
                       "fedbench.engine")},
}


# Every package and top-level module of fedbench on its floor, bottom first (issue 30, item 7: the layering covers
# every package, config, pipeline, bench and the CLI included). A module imports, at module level or inside a
# function, only its own package and what stands on a lower floor: no arrow runs back up, and two rooms of one floor
# import neither each other. The order is what `farm-studio look` draws: the study framework (fedbench.study:
# declaration, registry, scale, costs, paper profile and the one runner, which runs its stacks on the executors)
# below config, which asks it; the studies beside bench (the
# costs they quote are the framework's); `fedbench run`'s MLflow sink (fedbench.track) and `paper run`'s report
# rebuild handed in by the CLI, not imported; the stage scripts' guard (fedbench.guard) low, so pipelines/ need no CLI.
# The params file's reader is fedbench.data.params: `fedbench data --params` reads as config does, no floor of its own.
FLOORS = (
    ("fedbench.errors", "fedbench.provenance", "fedbench.seeding", "fedbench.ops", "fedbench.quantile",
     "fedbench.proximal", "fedbench.optimizers", "fedbench.plotting", "fedbench.locking", "fedbench.divergence",
     "fedbench.parallel", "fedbench.models", "fedbench.tracking_index", "fedbench.helptext"),
    ("fedbench.data", "fedbench.claims", "fedbench.tracking", "fedbench.guard"),
    ("fedbench.availability",),
    ("fedbench.engine", "fedbench.algorithms"),
    ("fedbench.executors",),
    ("fedbench.study",),
    ("fedbench.config",),
    ("fedbench.pipeline", "fedbench.compare"),
    ("fedbench.bench", "fedbench.studies"),
    ("fedbench.report", "fedbench.regression", "fedbench.track", "fedbench.paper"),
    ("fedbench.cli",),
)

def _room(module: str) -> str | None:
    """The entry of FLOORS that ``module`` belongs to (None: the package's face, fedbench/__init__.py)."""
    return next((r for floor in FLOORS for r in floor if module == r or module.startswith(r + ".")), None)


def test_every_module_stands_on_a_floor_and_imports_only_down():
    graph = _import_graph()
    floor_of = {r: i for i, floor in enumerate(FLOORS) for r in floor}
    assert [m for m in graph if m != "fedbench" and _room(m) is None] == []  # a new package is given its floor
    up = sorted(f"{m} imports {t}" for m, targets in graph.items() if m != "fedbench" for t in targets
                if t != "fedbench" and _room(t) != _room(m) and floor_of[_room(t)] >= floor_of[_room(m)])
    assert up == []


def test_packages_import_one_way():
    graph = _import_graph()
    wrong = sorted(f"{m} imports {t}" for m, targets in graph.items() for t in targets for pkg, banned in
                   MAY_NOT_IMPORT.items() if (m == pkg or m.startswith(pkg + ".")) and
                   any(t == b or t.startswith(b + ".") for b in banned))
    assert wrong == []


def test_claims_import_no_torch():
    probe = "import sys, fedbench.claims.entry, fedbench.claims.verdict, fedbench.claims.readings; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def test_tracking_imports_no_engine():
    graph = _import_graph()  # the MLflow module, even counting imports inside its functions
    seen, todo = set(), ["fedbench.tracking"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    computes = ("fedbench.engine", "fedbench.models", "fedbench.study.runner", "fedbench.study.experiments")
    assert not {m for m in seen if m.startswith(computes)}, seen
    # and the track stage loads no engine: it reads run folders (the runner imports the engine only to compute)
    probe = "import sys, fedbench.track, fedbench.tracking; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def _deps(stage: dict) -> set[str]:
    body = stage.get("do", stage)
    return {d for d in body["deps"] if d.startswith("fedbench/")}


def test_dvc_deps_are_the_provenance_lists():
    from fedbench.provenance import MAIN_JOB_STAGE_CODE, RUN_CODE, STUDY_CODE, STUDY_RUN_CODE, code_files

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]  # PyYAML resolves the '<<' merge key
    # every file a fingerprint hashes is a dep of the stage that computes it: an edit DVC calls up to date never
    # leaves a stored outcome stale (the study store once hashed fedbench/runner.py, which no study stage depended on)
    assert set(STUDY_RUN_CODE) <= set(STUDY_CODE)
    assert set(code_files(STUDY_RUN_CODE, ROOT / "fedbench")) <= set(code_files(MAIN_JOB_STAGE_CODE, ROOT / "fedbench"))
    assert _deps(stages["main_job"]) == {f"fedbench/{p}" for p in MAIN_JOB_STAGE_CODE}  # the main job, a study
    assert "train" not in stages  # no second pipeline: the main job's runs are its study's (issue 50, item 1)
    assert _deps(stages["study"]) == {"fedbench/studies/${key}.py"} | {f"fedbench/{p}" for p in STUDY_CODE}
    graph = _import_graph()  # the main job's stage depends on every module its script imports
    seen, todo = set(), ["fedbench.studies.fedprox_main_job", "fedbench.studies.fedprox_real", "fedbench.studies.stage"]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += graph[m]
    covered = {str(f.relative_to(ROOT)) for f in code_files(MAIN_JOB_STAGE_CODE, ROOT / "fedbench")}
    assert sorted(m for m in seen - set(NOT_STUDY_CODE) if f"fedbench/{_module_file(m)}" not in covered) == []
    for rel in RUN_CODE + STUDY_CODE + MAIN_JOB_STAGE_CODE:
        assert (ROOT / "fedbench" / rel).exists(), rel
    # exempt: LEGACY_TRAIN_RUN_CODE, what the removed train store's index hashed, is read only at the commit an old run
    # records (fedprox_main_job._same_run_code), never in this tree, and names the deleted fedbench/runner.py; it is
    # today's STUDY_RUN_CODE plus that one file, in the old order (so every old run that moves was computed by the code
    # that computes a study's simulation now)
    from fedbench.provenance import LEGACY_TRAIN_RUN_CODE

    assert not (ROOT / "fedbench" / "runner.py").exists()
    assert tuple(p for p in LEGACY_TRAIN_RUN_CODE if p != "runner.py") == STUDY_RUN_CODE
    assert "runner.py" in LEGACY_TRAIN_RUN_CODE and "runner.py" not in RUN_CODE + MAIN_JOB_STAGE_CODE
    from fedbench.provenance import CLAIMS_CODE  # every module of the claim model, file by file

    assert {f"claims/{p.name}" for p in (ROOT / "fedbench" / "claims").glob("*.py")} == set(CLAIMS_CODE)


def test_fingerprint_hashes_run_code(tmp_path):
    import shutil

    from fedbench import provenance

    pkg = tmp_path / "fedbench"
    shutil.copytree(ROOT / "fedbench", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    before = provenance.code_hash(provenance.RUN_CODE, pkg)
    (pkg / "cli.py").write_text("x = 1  # not a number's code\n" + (pkg / "cli.py").read_text())
    assert provenance.code_hash(provenance.RUN_CODE, pkg) == before
    local = pkg / "engine" / "local.py"
    source = local.read_text()
    # a comment, a docstring (the module's and a function's) and a line's layout change no number, nor the hash
    assert source.startswith('"""') and '    """' in source
    edited = ('"""Reworded."""\n# a comment\n' + source.split('"""', 2)[2].replace('    """', '    """Reworded. ', 1)
              .replace("\n\n\n", "\n\n\n\n", 1))
    local.write_text(edited)
    assert provenance.code_hash(provenance.RUN_CODE, pkg) == before
    local.write_text(edited + "\nSTEP = 1\n")  # code: the hash changes
    assert provenance.code_hash(provenance.RUN_CODE, pkg) != before
    local.write_text(edited.replace('"""Reworded."""', '"""Reworded."""\nassert True', 1))
    assert provenance.code_hash(provenance.RUN_CODE, pkg) != before
    local.write_text("this is not Python\n" + edited)  # a file that does not parse: hashed by its bytes
    assert provenance.code_hash(provenance.RUN_CODE, pkg) != before


def test_hyperparameters_are_the_dataclass_fields():
    from fedbench.algorithms import ALGORITHMS, DOMAINS, NOT_HYPERPARAMETERS, algorithm_class, hyperparameters

    types = {"float": float, "int": int, "str": str, "bool": bool}
    for name in ALGORITHMS:
        fields = {f.name: types[f.type] for f in dataclasses.fields(algorithm_class(name))
                  if f.name not in NOT_HYPERPARAMETERS}
        assert hyperparameters(name) == fields, name
        assert set(DOMAINS.get(name, {})) <= set(fields), name


@pytest.mark.parametrize("name, bad", [
    ("fedprox", {"mu": -1.0}), ("delta_fl", {"theta": 0.0}), ("delta_fl", {"weighting": "x"}),
    ("scaffold", {"eta_g": 0.0}), ("fedavg_momentum", {"beta": 1.0}), ("mime", {"base": "sgd"}),
    ("fedproxvr", {"tau": 0}), ("feddane", {"gradient_clients": -1}), ("fedprox", {"mu": "1"}),
    ("fedavg", {"mu": 1.0}),
])
def test_one_check_for_config_and_build(tmp_path, name, bad):
    from fedbench.algorithms import build_algorithm
    from fedbench.config import ConfigError, parse_config

    raw = yaml.safe_load((ROOT / "params.yaml").read_text())
    raw["algorithms"]["v"] = {"name": name, **bad}
    with pytest.raises(ConfigError) as at_load:
        parse_config(raw)
    with pytest.raises(ValueError) as at_build:
        build_algorithm(name, 0.1, **bad)
    key = next(iter(bad))
    assert f"algorithms.v.{key}:" in str(at_load.value) and f"{name}.{key}:" in str(at_build.value)


# what a claim study may import without it being a dvc.yaml dep: the package root and the modules of errors,
# provenance, commands' help text and how a process ends on an error or a stop (fedbench.guard, which the executors
# ask whether an error is a stop; pipelines/study.py runs under it): no number comes from them
NOT_STUDY_CODE = ("fedbench", "fedbench.errors", "fedbench.provenance", "fedbench.helptext", "fedbench.guard")


def _module_file(module: str) -> str:
    rel = "/".join(module.split(".")[1:])
    return f"{rel}/__init__.py" if (ROOT / "fedbench" / rel).is_dir() else f"{rel}.py"


@pytest.mark.parametrize("group", ["default", "opt_in"])
def test_each_study_stage_depends_on_what_the_study_imports(group):
    """Item 19.2: a claim study's stage depends on its own module, the shared STUDY_CODE and its own params, and the
    study imports (at any depth, module level or inside functions) nothing of fedbench outside those deps; so
    editing one study reruns that study only, and no edit to code a study runs goes unseen."""
    from fedbench.study import registry
    from fedbench.provenance import code_files, study_code

    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["study"]
    assert stage["foreach"] == "${claim_studies.default}"  # the opt-in studies have no stage
    assert stage["do"]["params"] == ["claim_studies.default.${key}"]
    assert "fedbench/studies" not in stage["do"]["deps"]
    graph = _import_graph()
    studies = yaml.safe_load((ROOT / "params.yaml").read_text())["claim_studies"][group]
    assert studies
    assert group != "default" or not set(studies) & set(registry.VARIANTS)  # a stage cannot name a variant's base
    for name in studies:
        base = registry.VARIANTS.get(name)
        deps = {d.replace("${key}", name) for d in _deps(stage)} | ({f"fedbench/studies/{base}.py"} if base else set())
        assert deps == {f"fedbench/{p}" for p in study_code(name, base)}
        covered = {str(f.relative_to(ROOT)) for f in code_files(study_code(name, base), ROOT / "fedbench")}
        seen, todo = set(), [f"fedbench.studies.{name}"]
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        outside = sorted(m for m in seen - set(NOT_STUDY_CODE) if f"fedbench/{_module_file(m)}" not in covered)
        assert outside == [], f"{name} imports code its stage does not depend on"
        others = {m.rpartition(".")[2] for m in seen if m.startswith("fedbench.studies.")} - {name, base}
        assert not others & set(registry.names()), f"{name} imports another study"

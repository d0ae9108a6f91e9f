"""What the paper-scale studies on real data share (FedLaAvg on CIFAR-10, SCAFFOLD on EMNIST, Delta-FL's five
dataset-model pairs, FedProxVR's CNN, Mime on EMNIST-62): their claims' declaration, their data, and the
``not-run`` entries that stand in the report until they have run.

A paper-scale study is a claim study (fedbench.studies: ``run(out_dir, workers, budget, real_root) -> claims``)
that trains on real variants built by the data pipeline (``data/real/<variant>``, fedbench.data) and declares,
at module level, without importing torch:

    NAME       the study's name, e.g. "fedlaavg_cifar10" (its module is fedbench.studies.<NAME>)
    VARIANTS   the data.real variants it trains on (``fedbench paper run NAME`` fetches, prepares and builds them
               with params.yaml's data.variants parameters)
    CLAIMS     one PaperClaim per claim it judges: the claim, the published value and the rule, stated before any
               run; ``run`` returns one entry per claim with the same ids
    BUDGETS    the scales it runs at: "paper" (the paper's, or the stated stand-in's) and "fixture" (the test
               suite's: fixture-sized data, a few rounds, the same code path)
    SCALES     the runs of the "paper" budget as fedbench.bench.costs.Scale, for its projected cost

``fedbench paper run NAME`` runs it at the "paper" budget into ``runs/studies/NAME/`` (kept with the train
stage's runs, so a later ``dvc repro`` reports it); until then the report carries ``not_run_entry`` for each of
its claims, with that command and the projected cost.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fedbench.bench.costs import Scale, load_measured, project_study
from fedbench.claims.entry import CLAIM_KEYS, claim, new_entry, not_run
from fedbench.claims.magnitude import combine as combine_parts, split

if TYPE_CHECKING:
    from fedbench.data.format import FederatedDataset

REAL_ROOT = Path("data/real")  # where the partition stage builds the real variants
PAPER_STUDIES_ROOT = Path("runs/studies")  # where `fedbench paper run` writes a paper-scale study


@dataclass(frozen=True)
class PaperClaim:
    """A real-data claim a paper-scale study judges: what the paper says (``claim``, ``where``, ``published``
    with keys value, unit, scope, statement), the ``rule`` its verdict comes from (written before any run and
    never from the published number), the paper's round budget, the fidelity of the ``paper`` budget
    (paper-scale, or stand-in where the paper leaves its setup unstated), and ``note``: what the study assumes
    where the paper is silent (said in the not-run entry)."""

    id: str
    paper: str
    where: str
    claim: str
    published: dict[str, Any]
    rule: str
    rounds_paper: int | None
    fidelity: str = "paper-scale"
    note: str = ""


def study_module(name: str) -> ModuleType:
    return importlib.import_module(f"fedbench.studies.{name}")


def command(name: str) -> str:
    """The one command that fetches a paper-scale study's data, runs it and rebuilds the report."""
    return f"fedbench paper run {name}"


def study_cost(scales: tuple[Scale, ...] | list[Scale]) -> dict[str, Any]:
    """The projected cost of a study's runs that its claims read (fedbench.bench.costs.project_study)."""
    return project_study(scales, load_measured())


def base_entry(c: PaperClaim, *, scale: dict[str, Any], deviations: list[str], figure: dict[str, str] | None,
               fidelity: str | None = None, rounds_run: int | None = None, training_seeds: list[int] = (),
               data_seeds: list[int] = (), observed: str = "", reproduced: Any = None) -> dict[str, Any]:
    """A not-yet-judged entry of claim ``c`` (fedbench.claims.entry.new_entry), its fidelity the claim's
    unless the budget run says otherwise (the fixture budget: stand-in, fixture-sized data)."""
    return new_entry(id=c.id, paper=c.paper, where=c.where, claim_text=c.claim, published=c.published, rule=c.rule,
                     scale=scale, deviations=deviations, figure=figure, fidelity=fidelity or c.fidelity,
                     rounds_run=rounds_run, rounds_paper=c.rounds_paper, training_seeds=list(training_seeds),
                     data_seeds=list(data_seeds), observed=observed, reproduced=reproduced)


def redeclared(entry: dict[str, Any], c: PaperClaim) -> dict[str, Any]:
    """A judged ``entry`` of claim ``c``, as a paper run left it, with ``c``'s current published value and its
    direction, magnitude and verdict split again from the entry's recorded parts (no retraining): a corrected
    published value or magnitude part applies to runs made before it. Unchanged where the entry was not judged or
    its rule is not ``c``'s current one (the runs judged another rule: they must run again)."""
    if entry.get("verdict") in (None, "not-run") or entry.get("rule") != c.rule:
        return entry
    fields = {k: v for k, v in entry.items() if k in CLAIM_KEYS}
    verdict = combine_parts([p["verdict"] for p in entry["parts"]])
    direction, magnitude, final = split(c.id, c.published, verdict, entry["effect"], entry["parts"])
    fields.update(published=c.published, direction=direction, magnitude=magnitude, verdict=final)
    return claim(**fields) | {k: v for k, v in entry.items() if k not in CLAIM_KEYS}


def declared_seeds(module: ModuleType) -> tuple[int, ...]:
    """The training seeds a paper-scale study's "paper" budget runs."""
    d = getattr(module, "DECLARATION", None)
    return d.seeds_at("paper") if d is not None else tuple(module.BUDGETS["paper"].seeds)


# what a paper-scale study declares, read from its DECLARATION (fedbench.studies.declaration.StudyDeclaration), or,
# until every study has one (issue 19.2, in progress), from its module-level CLAIMS, VARIANTS and SCALES
def claims_of(name: str) -> tuple[Any, ...]:
    module = study_module(name)
    d = getattr(module, "DECLARATION", None)
    return d.claims if d is not None else tuple(module.CLAIMS)


def variants_of(name: str) -> tuple[str, ...]:
    module = study_module(name)
    d = getattr(module, "DECLARATION", None)
    return d.variants if d is not None else tuple(module.VARIANTS)


def scales_of(name: str) -> tuple[Scale, ...]:
    module = study_module(name)
    d = getattr(module, "DECLARATION", None)
    return tuple(d.scales) if d is not None else tuple(module.SCALES)


def not_run_entry(name: str) -> list[dict[str, Any]]:
    """Study ``name``'s claims as not-run entries: the command that runs it, its projected cost at the paper
    budget, the variants it needs, what it assumes where the paper is silent, and the runs and seeds it declares
    (its SCALES and the paper budget's seeds, in the entry's scale and seeds: the registry's hash covers them,
    so they cannot change silently before the study has run)."""
    module = study_module(name)
    scales, variants = scales_of(name), variants_of(name)
    cost = study_cost(scales)
    cmd = command(name)
    out = []
    for c in claims_of(name):
        declared = {"study": name, "variants": list(variants), "budget": "paper",
                    "runs": [dataclasses.asdict(s) for s in scales]}
        fields = dict(scale=declared, deviations=[c.note] if c.note else [], figure=None,
                      training_seeds=list(declared_seeds(module)))
        d = getattr(module, "DECLARATION", None)
        e = (d.entry(c.id, **fields, rounds_run=None, data_seeds=list(d.data_seeds)) if d is not None
             else base_entry(c, **fields))
        out.append(not_run(e, f"not run: the paper-scale study {name} has not run on this machine; `{cmd}` fetches "
                              f"its data ({', '.join(variants)}) and runs it (projected {cost['hours']:g} h on "
                              f"{cost['device']})", f"running `{cmd}` ({cost['basis']})")
                   | {"command": cmd, "cost": cost})
    return out


@functools.cache
def load_real(variant: str, real_root: str | Path = REAL_ROOT) -> FederatedDataset:
    """The real variant built in ``real_root/variant`` (loaded once per process, so that runs sharing it share
    one copy and worker processes inherit it); a missing or corrupt one is one line saying how to build it."""
    from fedbench.runner import _load_dataset

    return _load_dataset(Path(real_root) / variant, variant)


def embedding(ds: FederatedDataset):
    """The frozen word table a token dataset refers to, as a tensor (None for other inputs): what build_model
    takes for the Sent140 models."""
    from fedbench.runner import _embedding

    return _embedding(ds)


def build(model: str, ds: FederatedDataset):
    """Model ``model`` for dataset ``ds`` (its input shape, classes and word table)."""
    from fedbench.models import build_model

    table = embedding(ds)
    return build_model(model, ds.feature_shape, ds.num_classes, table) if table is not None else \
        build_model(model, ds.feature_shape, ds.num_classes)

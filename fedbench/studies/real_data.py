"""What the paper-scale studies on real data share (FedLaAvg on CIFAR-10, SCAFFOLD on EMNIST, Delta-FL's five
dataset-model pairs, FedProxVR's CNN, Mime on EMNIST-62): their claims' declaration, their data, and the
``not-run`` entries that stand in the report until they have run.

A paper-scale study is a claim study (fedbench.studies: ``run(out_dir, workers, budget, real_root) -> claims``)
that trains on real variants built by the data pipeline (``data/real/<variant>``, fedbench.data) and declares,
at module level, without importing torch, one ``DECLARATION`` (fedbench.study.declaration.StudyDeclaration):
its arms, seeds, knobs and evaluation protocol, its ``variants`` (``fedbench paper run NAME`` fetches, prepares and
builds them with params.yaml's data.variants parameters), its ``budgets`` ("paper": the paper's, or the stated
stand-in's; "fixture": the test suite's, fixture-sized data, a few rounds, the same code path), its claims (each
with the rule, stated before any run; ``run`` returns one entry per claim, built by ``DECLARATION.entry``) and
its ``scales``: the runs of the paper budget its claims read, as fedbench.study.scale.Scale, for its projected
cost.

``fedbench paper run NAME`` runs it at the "paper" budget into ``results/NAME/paper/`` (fedbench.study.layout; a later
``dvc repro`` reports it); until then the report carries ``not_run_entry`` for each of
its claims, with that command and the projected cost.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from fedbench.claims import registry
from fedbench.claims.entry import CLAIM_KEYS, claim, not_run
from fedbench.claims.fidelity import relabelled
from fedbench.claims.magnitude import combine as combine_parts
from fedbench.claims.magnitude import split
from fedbench.study.scale import Scale

if TYPE_CHECKING:
    from fedbench.data.format import FederatedDataset
    from fedbench.study.declaration import Claim, StudyDeclaration

REAL_ROOT = Path("data/real")  # where the partition stage builds the real variants


def study_module(name: str) -> ModuleType:
    return importlib.import_module(f"fedbench.studies.{name}")


def command(name: str) -> str:
    """The one command that fetches a paper-scale study's data, runs it and rebuilds the report."""
    return f"fedbench paper run {name}"


def study_cost(scales: tuple[Scale, ...] | list[Scale], name: str = "") -> dict[str, Any]:
    """The projected cost of study ``name``'s runs that its claims read: the one figure every place quotes
    (fedbench.study.costs.study_cost; without a name, from the per-model table, and it says so)."""
    from fedbench.study.costs import study_cost as quoted_cost

    return quoted_cost(name, scales)


def redeclared(entry: dict[str, Any], c: Claim) -> dict[str, Any]:
    """A judged ``entry`` of claim ``c``, as a paper run left it, labelled by the current rules (fedbench.claims.
    fidelity.relabelled: its rounds, and ``c``'s declared setup), with ``c``'s current published value and its
    direction, magnitude and verdict split again from the entry's recorded parts (no retraining): a corrected
    published value or magnitude part applies to runs made before it. Unchanged where the entry was not judged or
    its rule is not ``c``'s current one (the runs judged another rule: they must run again). An entry that states
    ``c``'s rule in words it was reworded from (fedbench.claims.registry.reword: the same rule) takes the current
    words."""
    entry = in_current_words(entry | {"fidelity": relabelled(entry["fidelity"], entry["rounds_run"],
                                                             entry["rounds_paper"], c.fidelity)})
    if entry.get("verdict") in (None, "not-run") or entry.get("rule") != c.rule:
        return entry
    fields = {k: v for k, v in entry.items() if k in CLAIM_KEYS}
    verdict = combine_parts([p["verdict"] for p in entry["parts"]])
    direction, magnitude, final = split(c.id, c.published, verdict, entry["effect"], entry["parts"])
    fields.update(published=c.published, direction=direction, magnitude=magnitude, verdict=final)
    return claim(**fields) | {k: v for k, v in entry.items() if k not in CLAIM_KEYS}


@functools.cache
def _registered() -> dict[str, Any]:
    """The registry, read once per process (the rewordings below read it for every entry of a report)."""
    return registry.load()


def reworded_from(claim_id: str) -> tuple[str, ...]:
    """The words claim ``claim_id``'s current rule was registered with before it was reworded (the registry's
    ``rewordings``)."""
    return tuple(w["rule"] for w in (_registered().get(claim_id) or {}).get("rewordings", []))


def in_current_words(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` as a run recorded it, its rule in the words it is registered with now where it states it in words
    the registry reworded (fedbench.claims.registry.reword: the same rule), so that a record made before a rewording
    (a paper run's, an opt-in study's) is still its registered rule, and its confirmation stands."""
    if entry.get("rule") in reworded_from(entry["id"]):
        return entry | {"rule": _registered()[entry["id"]]["spec"]["rule"]}
    return entry


def declaration(name: str) -> StudyDeclaration:
    """Paper-scale study ``name``'s declaration: its module's ``DECLARATION``."""
    return study_module(name).DECLARATION


def not_run_entry(name: str) -> list[dict[str, Any]]:
    """Study ``name``'s claims as not-run entries: the command that runs it, its projected cost at the paper
    budget, the variants it needs, what it assumes where the paper is silent, and the runs and seeds it declares
    (its scales, or a claim's own as registered (Claim.scales), and the paper budget's seeds, in the entry's
    scale and seeds: the registry's hash covers them,
    so they cannot change silently before the study has run)."""
    d = declaration(name)
    cost = study_cost(d.scales, name)
    cmd = command(name)
    out = []
    for c in d.claims:
        declared = {"study": name, "variants": list(d.variants), "budget": "paper",
                    "runs": [dataclasses.asdict(s) for s in c.scales or d.scales]}  # as registered
        e = d.entry(c.id, scale=declared, deviations=[c.note] if c.note else [], figure=None, rounds_run=None,
                    training_seeds=list(d.seeds_at("paper")))
        out.append(not_run(e, f"not run: the paper-scale study {name} has not run on this machine; `{cmd}` fetches "
                              f"its data ({', '.join(d.variants)}) and runs it (projected {cost['hours']:g} h on "
                              f"{cost['device']})", f"running `{cmd}` ({cost['basis']})")
                   | {"command": cmd, "cost": cost})
    return out


def load_real(variant: str, real_root: str | Path = REAL_ROOT) -> FederatedDataset:
    """The real variant built in ``real_root/variant``, loaded once per process and content (so that runs sharing it
    share one copy and worker processes inherit it, while a variant rebuilt in place is loaded anew); a missing or
    corrupt one is one line saying how to build it."""
    folder = Path(real_root) / variant
    return _load_real(str(folder), variant, _content_hash(folder))


def _content_hash(folder: Path) -> str:
    """The built dataset's content hash ('' where it has none: loading it then says how to build it)."""
    from fedbench.data.format import read_meta

    try:
        return str(read_meta(folder).get("content_hash", ""))
    except (OSError, ValueError):
        return ""


@functools.cache
def _load_real(folder: str, variant: str, content_hash: str) -> FederatedDataset:
    from fedbench.data.load import load

    return load(folder, variant)


def embedding(ds: FederatedDataset):
    """The frozen word table a token dataset refers to, as a tensor (None for other inputs): what build_model
    takes for the Sent140 models."""
    from fedbench.data.load import word_table_of

    return word_table_of(ds)


def build(model: str, ds: FederatedDataset):
    """Model ``model`` for dataset ``ds`` (its input shape, classes and word table)."""
    from fedbench.models import build_model

    table = embedding(ds)
    return build_model(model, ds.feature_shape, ds.num_classes, table) if table is not None else \
        build_model(model, ds.feature_shape, ds.num_classes)


def repartitioned(variant: str, real_root: str, built_n: int, n: int) -> FederatedDataset:
    """Real variant ``variant`` over ``n`` clients: the one built in ``real_root`` when ``n`` is ``built_n`` (one line
    saying how to rebuild it when it was built with another N), else its partition re-run with num_clients = ``n``
    (and the built one's seed) from the prepared source beside ``real_root`` (``<real_root>/../prepared``): a study
    that sweeps N partitions the whole training set again for each N, as FedLaAvg's authors' code does."""
    return _repartitioned(variant, real_root, built_n, n, _content_hash(Path(real_root) / variant))


@functools.cache
def _repartitioned(variant: str, real_root: str, built_n: int, n: int, content_hash: str) -> FederatedDataset:
    built = load_real(variant, real_root)
    if built.num_clients != built_n:
        raise ValueError(f"{Path(real_root) / variant}: built with N = {built.num_clients} clients; this budget needs "
                         f"N = {built_n} (params.yaml data.variants.{variant}.num_clients)")
    if n == built_n:
        return built
    from fedbench.data.stages import build_variant

    seed = int((built.partition.get("params") or {}).get("seed", 1))
    return build_variant(variant, Path(real_root).parent, {"num_clients": n, "seed": seed})


def pooled(variant: str, real_root: str, built_n: int) -> FederatedDataset:
    """The built variant's clients pooled into one (fedbench.algorithms.sequential_sgd.pool_clients: sequential SGD's
    data), once per process and content of the built variant."""
    return _pooled(variant, real_root, built_n, _content_hash(Path(real_root) / variant))


@functools.cache
def _pooled(variant: str, real_root: str, built_n: int, content_hash: str) -> FederatedDataset:
    from fedbench.algorithms.sequential_sgd import pool_clients

    return pool_clients(repartitioned(variant, real_root, built_n, built_n))


def global_test_every(ds: FederatedDataset, variant: str, every: int, max_test: int) -> tuple[Any, ...]:
    """The protocol of the FedLaAvg authors' code (train/command_line.py: tb_every, max_test): the global test set
    every ``every`` rounds and on the final model, on a seeded sample of ``max_test`` of its images where it has
    more; one line saying how to rebuild ``ds`` (real variant ``variant``) when it has no global test set."""
    from fedbench.engine.evaluation import EvalSpec

    if ds.global_test is None:
        raise ValueError(f"{ds.name}: no global test set (built by an older fedbench? rebuild it with "
                         f"`fedbench data prepare {variant}`)")
    cap = max_test if len(ds.global_test.y) > max_test else None
    return (EvalSpec("global_test", every=every, samples_sample=cap),)

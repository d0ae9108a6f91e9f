"""Every claim study run end to end, small: the one run of each study that the parametrised test
(tests/studies/test_study_end_to_end.py) and each study's own tests read (through the session fixture ``study_run``,
tests/conftest.py), so that a study runs once a session however many tests read it.

How a study is run small is data here, one entry a study: a paper-scale study runs its declared "fixture" budget on
fixture-sized real variants (tests/studies/real_fixtures.BUILDERS) through ``run_claim_study``, as ``fedbench paper
run`` does; a small study runs its ``run()`` with a few rounds, seeds and settings (:class:`Small`: the module
settings replaced for the run only). Every simulation is spied (tests.studies.spy_simulate), so the tests can hold
the records against the runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fedbench.study import registry
from fedbench.study.contract import drive
from tests.studies import spy_simulate
from tests.studies.real_fixtures import BUILDERS


@dataclass(frozen=True)
class Small:
    """A small study's run at test size: module ``attrs`` and ``budgets`` entries replaced while it runs, any other
    replacement (``patch(monkeypatch, module)``), and ``run()``'s keyword arguments."""

    attrs: dict[str, Any] = field(default_factory=dict)
    budgets: dict[str, Any] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    patch: Callable[[pytest.MonkeyPatch, ModuleType], None] | None = None


def _fedproxvr_synthetic(mp: pytest.MonkeyPatch, study: ModuleType) -> None:
    """A few rounds, seeds 0 and 1, 10 users and FedAvg at 1 local epoch (its declaration replaced)."""
    d = study.DECLARATION
    arms = tuple(dataclasses.replace(a, settings={**a.settings, "local_epochs": 1}) if a.name == "FedAvg" else a
                 for a in d.arms)
    mp.setattr(study, "DECLARATION", dataclasses.replace(d, budgets={"pipeline": 2, "paper": 4}, seeds=(0, 1),
                                                         arms=arms))
    mp.setattr(study, "NUM_USERS", 10)
    study._dataset.cache_clear()


def _scaffold_concrete(mp: pytest.MonkeyPatch, study: ModuleType) -> None:
    """A generated table in place of UCI concrete (60 rows, 8 z-scored inputs; no package needed), with fresh caches
    of the split and the optimum (restored with the real ones when the patch is undone)."""
    import functools

    import numpy as np

    def table():
        rng = np.random.default_rng(0)
        z = rng.standard_normal((60, 8))
        return (z - z.mean(0)) / z.std(0), 30.0 + z @ np.arange(1.0, 9.0) + rng.standard_normal(60)

    mp.setattr(study, "table", table)
    mp.setattr(study, "federated", functools.cache(study.federated.__wrapped__))
    mp.setattr(study, "optimum", functools.cache(study.optimum.__wrapped__))


def _on(base: str, **attrs: Any) -> Callable[[pytest.MonkeyPatch, ModuleType], None]:
    """A variant's patch: its base study's module ``attrs`` replaced (a variant runs its base's hooks)."""
    def patch(mp: pytest.MonkeyPatch, study: ModuleType) -> None:
        for attr, value in attrs.items():
            mp.setattr(registry.module(base), attr, value)

    return patch


def _main_job_config():
    """params.yaml's main job shrunk: 2 rounds of E = 2 on seeds 0 and 1, stragglers 0/50/90%, the four synthetic
    sets only (the MNIST-5k study left out: it needs its real variant)."""
    from fedbench.config import load_config

    cfg = load_config("params.yaml", {"train.rounds": 2, "train.seeds": [0, 1], "train.local_epochs": 2,
                                      "train.workers": 1, "studies.stragglers.stragglers": [0.0, 0.5, 0.9]})
    return dataclasses.replace(cfg, studies={k: v for k, v in cfg.studies.items() if k != "fedprox_mnist5k"})


def _fedprox_main_job(mp: pytest.MonkeyPatch, study: ModuleType) -> None:
    """The four synthetic sets generated into a fresh folder, the study reading its data there."""
    import tempfile

    from fedbench.pipeline import generate

    data = Path(tempfile.mkdtemp(prefix="fedprox_main_job_data."))
    for name in ("synthetic_iid", "synthetic_0_0", "synthetic_0p5_0p5", "synthetic_1_1"):
        generate(_main_job_config(), name, data)
    mp.setattr(study, "DATA_ROOT", data)


SEEDS = {"seeds": (0, 1)}
SMALL: dict[str, Small] = {
    "delta_fl_triangle": Small(attrs={"ROUNDS": 60}),
    "feddane_mu1": Small(budgets={"pipeline": 2}, kwargs=SEEDS, patch=_on(
        "feddane_synthetic", EPOCHS=1, DATASETS=("synthetic_iid", "synthetic_1_1"), NON_IID=("synthetic_1_1",))),
    "feddane_synthetic": Small(attrs={"EPOCHS": 1, "DATASETS": ("synthetic_iid", "synthetic_1_1"),
                                      "NON_IID": ("synthetic_1_1",)}, budgets={"pipeline": 2}, kwargs=SEEDS),
    "fedlaavg_diurnal": Small(attrs={"ROUNDS": 15}, kwargs=SEEDS),
    "fedlaavg_example1": Small(attrs={"ETAS": (0.2, 0.1)}),
    "fedprox_main_job": Small(kwargs={"config": _main_job_config}, patch=_fedprox_main_job),
    "fedprox_code_sensitivity": Small(attrs={"ROUNDS": 3, "EPOCHS": 2}, kwargs=SEEDS),
    "fedprox_synthetic": Small(attrs={"EPOCHS": 2}, budgets={"pipeline": 3}, kwargs=SEEDS),
    "fedprox_synthetic_others": Small(budgets={"pipeline": 3}, kwargs=SEEDS, patch=_on("fedprox_synthetic", EPOCHS=1)),
    "fedproxvr_synthetic": Small(patch=_fedproxvr_synthetic),
    "mime_synthetic": Small(attrs={"ROUNDS": 4, "LR_GRID": (0.003, 0.03)}, kwargs=SEEDS),
    "scaffold_concrete": Small(attrs={"MAX_ROUNDS": 30, "LR_FACTORS": (1.0, 0.5), "SELECTION_SEEDS": (100,)},
                               kwargs=SEEDS, patch=_scaffold_concrete),
    "scaffold_quadratics": Small(attrs={"G_VALUES": (1.0, 100.0), "LR_GRID": (0.5, 0.25), "COMMON_LRS": (0.1,),
                                       "MAX_ROUNDS": 30}),
}


@dataclass(frozen=True)
class Ran:
    """A study's end-to-end run: its claims, its output folder and each simulation's (config, algorithm, result)."""

    name: str
    claims: list[dict[str, Any]]
    out: Path
    calls: list[tuple[Any, Any, Any]]
    real_root: Path | None = None

    @property
    def module(self) -> ModuleType:
        return registry.module(self.name)


def run_small(name: str, tmp: Path, real_root: Callable[[str], Path]) -> Ran:
    """Study ``name`` run end to end at test size into ``tmp`` (a fresh folder); ``real_root(name)``: the study's
    fixture-sized real variants (paper-scale studies)."""
    module = registry.module(name)
    if (name in BUILDERS) == (name in SMALL):
        raise AssertionError(f"study {name}: give it either fixture-sized real data (real_fixtures.BUILDERS) or a "
                             "small run (end_to_end.SMALL)")
    with pytest.MonkeyPatch.context() as mp:
        calls = spy_simulate(mp)
        if name in BUILDERS:
            from fedbench.study.output import run_claim_study

            root = real_root(name)
            claims = run_claim_study(name, tmp / name, workers=1, budget="fixture", real_root=root)
            return Ran(name, claims, tmp / name, calls, root)
        small = SMALL[name]
        for attr, value in small.attrs.items():
            mp.setattr(module, attr, value)
        for budget, value in small.budgets.items():
            mp.setitem(module.BUDGETS, budget, value)
        if small.patch:
            small.patch(mp, module)
        try:
            config = small.kwargs.get("config")  # params.yaml's, for a study whose grid it sets (the main job)
            claims = drive(module, tmp, seeds=small.kwargs.get("seeds"), workers=1,
                           config=config() if callable(config) else config)  # the one driver
        finally:
            if small.patch and hasattr(module, "_dataset"):  # the shrunk data is not kept for other tests
                module._dataset.cache_clear()
    return Ran(name, claims, tmp, calls)

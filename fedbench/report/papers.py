"""The papers fedbench checks and their headline claims: what the coverage line of each paper counts.

A headline claim is listed with the ids of the entries that check it (the paper-scale one first, then a
stand-in), or None where fedbench has no entry for it (real datasets not wired, or not implemented): those
count as not checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedbench.studies import (
    DELTA_FL_PAPER,
    FEDLAAVG_PAPER,
    FEDPROX_PAPER,
    FEDPROXVR_PAPER,
    MIME_PAPER,
    SCAFFOLD_PAPER,
)


@dataclass(frozen=True)
class Paper:
    name: str
    citation: str  # the ``paper`` field of its claim entries
    headline: tuple[tuple[str | tuple[str, ...] | None, str], ...]  # (claim id(s) or None, what the paper says)

    def ids(self, index: int) -> tuple[str, ...]:
        ids = self.headline[index][0]
        return () if ids is None else (ids,) if isinstance(ids, str) else tuple(ids)


PAPERS = (
    Paper("FedProx", FEDPROX_PAPER, (
        ("fedprox/synthetic-1-1/stragglers-90/accuracy-gain", "+22 points of test accuracy at 90% stragglers"),
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
        (None, "the same comparisons on MNIST, FEMNIST, Shakespeare and Sent140 (real data not wired yet)"),
    )),
    Paper("SCAFFOLD", SCAFFOLD_PAPER, (
        ("scaffold/quadratics/unaffected-by-heterogeneity", "SCAFFOLD unaffected by G, FedAvg degrades"),
        ("scaffold/quadratics/local-steps-help", "more local steps help SCAFFOLD (2x, 4x)"),
        (None, ("EMNIST logistic regression: rounds to 0.5 accuracy by epochs and similarity (Table 3) and by "
               "sampling (Table 4); 2-layer network accuracy (Table 5) (EMNIST not wired yet)")),
    )),
    Paper("Mime", MIME_PAPER, (
        ("mime/synthetic-1-1/momentum-helps", "Mime and MimeLite beat FedAvg with momentum"),
        ("mime/synthetic-1-1/beats-server-only", "Mime and MimeLite beat the server-only baseline"),
        ("mime/synthetic-1-1/better-use-of-momentum", "Mime makes better use of momentum than FedAvg"),
        (None, "the same with Adam, on EMNIST62 and CIFAR100 (not wired yet)"),
    )),
    Paper("FedProxVR", FEDPROXVR_PAPER, (
        ("fedproxvr/synthetic/matches-or-beats-fedavg", "SVRG and SARAH at least FedAvg's accuracy (convex task)"),
        (None, "the non-convex task (Table 2; its model is not stated)"),
    )),
    Paper("Delta-FL", DELTA_FL_PAPER, (
        ("delta-fl/gaussian-triangle/longest-side-midpoint", "the Gaussian-triangle illustration"),
        (None, ("lower 90th-percentile test error than FedAvg on EMNIST, Sent140, Shakespeare (Tables 2-3; real "
               "data not wired yet)")),
    )),
    Paper("FedLaAvg", FEDLAAVG_PAPER, (
        ("fedlaavg/example-1/fedavg-bias", "FedAvg's bias in Example 1 (Theorem 1)"),
        ("fedlaavg/example-1/fedlaavg-converges", "FedLaAvg converges on Example 1 (Theorem 2)"),
        (("fedlaavg/cifar10/ica-gain", "fedlaavg/synthetic/diurnal-gain"),
         "+4.23 points on CIFAR-10 under intermittent availability (Table 2)"),
    )),
)


def paper_of(citation: str) -> Paper | None:
    for p in PAPERS:
        if p.citation == citation:
            return p
    return None

"""The figures of fedbench.studies.fedlaavg_cifar10 (FedLaAvg on CIFAR-10, Yan et al., arXiv 2002.07399 v1): Table 2
and Figure 2's curves (the mean of the seeds, and the last periods of the first seed), and Table 3's sweeps of N, P
and gamma (the mean of the seeds) with the rounds to the target against N. A sibling of the study module for its
size; it reads the runs' curves through fedbench.studies.fedlaavg_cifar10_claims.Curves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedbench.studies.fedlaavg_cifar10_claims import NAME, Curves


def figures(out_dir: Path, c: Curves, reach: dict[Any, int]) -> None:
    from fedbench.plotting import pyplot, save_figure

    plt = pyplot()
    b, roles, t = c.b, c.roles, c.rounds()

    def mean_curve(role: str) -> np.ndarray:
        return np.vstack([c(r) for r in roles[role]]).mean(0)

    fig, (a, z) = plt.subplots(1, 2, figsize=(12, 4.2))
    styles = {"fedlaavg_ica": ("FedLaAvg (ICA)", "tab:blue", "-"), "fedavg_ica": ("FedAvg (ICA)", "tab:red", "-"),
              "fedlaavg_fca": ("FedLaAvg (FCA)", "tab:blue", ":"), "fedavg_fca": ("FedAvg (FCA)", "tab:red", ":"),
              "sequential": ("sequential SGD", "k", "--")}
    for role, (label, color, ls) in styles.items():
        a.plot(t, mean_curve(role), color=color, ls=ls, lw=0.8, label=label)
    a.set_xlabel("round")
    a.set_ylabel(f"test accuracy (%), mean of {len(b.seeds)} seeds")
    a.set_title(f"(a) Table 2: N={b.n}, K={b.k(b.n)}, P={b.period}, beta={b.beta}")
    a.legend(fontsize=8)
    window = min(b.rounds + 1, 10 * b.cycle() * b.eval_every)  # about ten periods' worth of evaluations
    shown = t > b.rounds - window
    for role in ("fedavg_ica", "fedlaavg_ica"):
        z.plot(t[shown], c(roles[role][0])[shown], color=styles[role][1], lw=0.8, marker=".", ms=2,
               label=styles[role][0])
    z.set_xlabel("round")
    z.set_title(f"(b) the last {window} rounds, seed {b.seeds[0]} (period {b.cycle()})")
    z.legend(fontsize=8)
    save_figure(fig, out_dir / f"{NAME}_table2.png", dpi=110)

    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    panels = [("(a) N (mean of seeds)", [(f"N={n}", f"n={n}") for n in b.clients]),
              ("(b) P (mean of seeds)", [(f"P={p}", f"p={p}") for p in b.periods]),
              ("(c) gamma (mean of seeds)", [(f"gamma={g:g}", f"gamma={g:g}") for g in b.gammas])]
    for ax, (title, lines) in zip(axes.flat, panels):
        for label, role in lines:
            ax.plot(t, mean_curve(role), lw=0.8, label=label)
        ax.axhline(b.target, color="grey", lw=0.6, ls="--")
        ax.set_title(title)
        ax.set_xlabel("round")
        ax.set_ylabel("test accuracy (%)")
        ax.legend(fontsize=7)
    ax = axes.flat[3]
    for i, s in enumerate(b.seeds):
        ax.plot(b.clients, [reach[roles[f"n={n}"][i]] for n in b.clients], marker="o", lw=0.8, label=f"seed {s}")
    ax.set_xlabel("N (clients)")
    ax.set_ylabel(f"rounds to {b.target:g}% ({b.rounds} = never)")
    ax.set_title("(d) rounds to the target against N")
    ax.legend(fontsize=7)
    save_figure(fig, out_dir / f"{NAME}_table3.png", dpi=110)

"""The claims and figure of fedbench.studies.scaffold_quadratics (SCAFFOLD on the paper's quadratic instance, ICML
2020, section 7.2, Figure 3; what is measured: that module's docstring): the two claims measured from the curves
(curves[(method, G, K, lr)] = f - f* per round; the driver judges them, fedbench.study.contract) and the figure.
Each function takes the study module ``q`` and reads its settings and readings (rounds_per_decade, plateau) from
it, so that the study stays the one place they are written (and the one a test shrinks), and its rules from the
claim it measures. A sibling of the study module for its size; it imports nothing of it.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from fedbench.claims import readings
from fedbench.claims.stats import fmt_number
from fedbench.claims.verdict import Part
from fedbench.study.contract import Measurement

if TYPE_CHECKING:
    from fedbench.study.declaration import Claim


def _best_rpd(q: ModuleType, curves: dict, method: str, g: float, k: int, rounds: int | None = None) -> tuple[float, float]:
    """(rounds per decade, step size) at the best step size of LR_GRID."""
    return min((q.rounds_per_decade(curves[(method, g, k, lr)], rounds), lr) for lr in q.LR_GRID)


def _best_plateau(q: ModuleType, curves: dict, g: float, k: int, rounds: int | None = None) -> tuple[float, float]:
    return min((q.plateau(curves[("fedavg", g, k, lr)], rounds), lr) for lr in q.LR_GRID)


def heterogeneity_claim(q: ModuleType, claim: Claim, curves: dict) -> Measurement:
    """Parts 1-4, SCAFFOLD's change of speed with G; parts 5-8, FedAvg's plateau; curves[(method, G, K, lr)] =
    f - f* per round."""
    g0 = q.G_VALUES[0]
    parts, rows = [], []
    for k in q.K_VALUES:
        for g in q.G_VALUES[1:]:
            parts.append(Part(f"SCAFFOLD K={k}: rounds per decade, G={g:g} vs G={g0:g}", claim.rule_for("parts 1-4")))
            rows.append(("scaffold", k, g))
    for k in q.K_VALUES:
        for lo, hi in zip(q.G_VALUES, q.G_VALUES[1:]):
            parts.append(Part(f"FedAvg K={k}: log10 plateau, G={hi:g} vs G={lo:g}", claim.rule_for("parts 5-8")))
            rows.append(("fedavg", k, (lo, hi)))

    def values(reading, budget):
        rounds = max(1, int(round(budget * q.MAX_ROUNDS)))
        out = []
        for method, k, g in rows:
            if method == "scaffold":
                a, b = _best_rpd(q, curves, "scaffold", g, k, rounds)[0], _best_rpd(q, curves, "scaffold", g0, k, rounds)[0]
                out.append([100 * (a / b - 1) if math.isfinite(a) and math.isfinite(b) else math.inf])
            else:
                lo, hi = g
                a, b = _best_plateau(q, curves, hi, k, rounds)[0], _best_plateau(q, curves, lo, k, rounds)[0]
                out.append([math.log10(max(a, 1e-300) / max(b, 1e-300))])
        return out

    rpd = {(k, g): _best_rpd(q, curves, "scaffold", g, k) for k in q.K_VALUES for g in q.G_VALUES}
    warm = {(k, g): _best_rpd(q, curves, "scaffold-warm", g, k) for k in q.K_VALUES for g in q.G_VALUES}
    plat = {(k, g): _best_plateau(q, curves, g, k) for k in q.K_VALUES for g in q.G_VALUES}
    to_target = {(m, k, g): _rounds_to(q, curves, m, g, k) for m in ("scaffold", "scaffold-warm") for k in q.K_VALUES
                 for g in q.G_VALUES}
    observed = (
        "SCAFFOLD (zero start) rounds per decade at its best step size: "
        + "; ".join(f"K={k}: " + ", ".join(f"G={g:g} {fmt_number(rpd[(k, g)][0])}" for g in q.G_VALUES) for k in q.K_VALUES)
        + f". FedAvg's plateau (f - f* after {q.MAX_ROUNDS} rounds at its best step size): "
        + "; ".join(f"K={k}: " + ", ".join(f"G={g:g} {plat[(k, g)][0]:.2e}" for g in q.G_VALUES) for k in q.K_VALUES)
        + ". Rounds to f - f* <= 1e-8 (f(x0) - f*), zero start: "
        + "; ".join(f"K={k}: " + ", ".join(f"G={g:g} {_fmt_rounds(q, to_target[('scaffold', k, g)])}" for g in q.G_VALUES)
                    for k in q.K_VALUES)
        + ". Other initialisation (c_i = grad f_i(x0), reported, not judged): rounds per decade "
        + "; ".join(f"K={k}: " + ", ".join(f"G={g:g} {fmt_number(warm[(k, g)][0])}" for g in q.G_VALUES) for k in q.K_VALUES)
        + ", rounds to target "
        + "; ".join(f"K={k}: " + ", ".join(f"G={g:g} {_fmt_rounds(q, to_target[('scaffold-warm', k, g)])}"
                                          for g in q.G_VALUES) for k in q.K_VALUES))
    entry = dict(
        reproduced={"scaffold_rounds_per_decade": {f"K={k}, G={g:g}": {"rpd": _num(rpd[(k, g)][0]),
                                                                       "lr": rpd[(k, g)][1]}
                                                   for k in q.K_VALUES for g in q.G_VALUES},
                    "fedavg_plateau": {f"K={k}, G={g:g}": {"gap": plat[(k, g)][0], "lr": plat[(k, g)][1]}
                                       for k in q.K_VALUES for g in q.G_VALUES},
                    "scaffold_warm_start_rounds_per_decade": {f"K={k}, G={g:g}": _num(warm[(k, g)][0])
                                                              for k in q.K_VALUES for g in q.G_VALUES},
                    "rounds_to_1e-8": {f"{m}, K={k}, G={g:g}": to_target[(m, k, g)]
                                       for m, k, g in to_target}},
        scale={"clients": 2, "participation": "both clients every round", "instance": "f1 = x^2 + G x, f2 = -G x",
               "mu": q.MU, "x0": q.X0, "G": list(q.G_VALUES), "local_steps_K": list(q.K_VALUES), "max_rounds": q.MAX_ROUNDS,
               "local_lr_grid": [round(v, 4) for v in q.LR_GRID], "gradients": "exact (full batch)",
               "scaffold_option": "II", "eta_g": 1.0},
        figure={"path": "studies/scaffold_quadratics/scaffold_quadratics.png",
                "panel": "left and middle: SCAFFOLD and FedAvg, f - f* for each G"},
        fidelity="stand-in", rounds_run=q.MAX_ROUNDS,
        observed=observed)
    return Measurement(parts, values, "full", budgets=(0.5, 1.0), deterministic=True,
                       reading_names={"full": f"best step size, {q.MAX_ROUNDS} rounds"}, entry=entry)


def local_steps_claim(q: ModuleType, claim: Claim, curves: dict) -> Measurement:
    """At each shared step size, the order of the speedups over SGD and each within its band."""
    parts, rows = [], []
    for lr in q.COMMON_LRS:
        parts.append(Part(f"step {lr:g}: speedup(K=10) - speedup(K=2)", claim.rule_for("speedup(K=10) - speedup(K=2)")))
        rows.append(("order", lr))
        for k, (lo, hi) in q.SPEEDUP_BANDS.items():
            band = f"speedup(K={k}) - {(lo + hi) / 2:g}"
            parts.append(Part(f"step {lr:g}: {band}", claim.rule_for(band)))
            rows.append((k, lr))

    def speedup(k, lr, rounds, tuned=False):
        if tuned:
            sgd = min(q.rounds_per_decade(curves[("sgd", q.STEPS_G, 1, x)], rounds) for x in sorted(set(q.LR_GRID)))
            mine = min(q.rounds_per_decade(curves[("scaffold", q.STEPS_G, k, x)], rounds) for x in q.LR_GRID)
        else:
            sgd = q.rounds_per_decade(curves[("sgd", q.STEPS_G, 1, lr)], rounds)
            mine = q.rounds_per_decade(curves[("scaffold", q.STEPS_G, k, lr)], rounds)
        return sgd / mine if math.isfinite(mine) and mine > 0 else 0.0

    def values(reading, budget):
        rounds = max(1, int(round(budget * q.MAX_ROUNDS)))
        tuned = reading == "tuned"
        out = []
        for what, lr in rows:
            if what == "order":
                out.append([speedup(10, lr, rounds, tuned) - speedup(2, lr, rounds, tuned)])
            else:
                lo, hi = q.SPEEDUP_BANDS[what]
                out.append([speedup(what, lr, rounds, tuned) - (lo + hi) / 2])
        return out

    table = {f"step {lr:g}": {f"K={k}": round(speedup(k, lr, q.MAX_ROUNDS), 3) for k in q.K_VALUES} for lr in q.COMMON_LRS}
    k10 = [table[f"step {lr:g}"]["K=10"] for lr in q.COMMON_LRS]
    k2 = [table[f"step {lr:g}"]["K=2"] for lr in q.COMMON_LRS]
    summary = (f"K=2 {min(k2):.2f}x to {max(k2):.2f}x, K=10 {min(k10):.2f}x to {max(k10):.2f}x over the shared step "
               f"sizes {', '.join(f'{lr:g}' for lr in q.COMMON_LRS)}")
    tuned = {f"K={k}": round(speedup(k, None, q.MAX_ROUNDS, tuned=True), 3) for k in q.K_VALUES}
    rpd_sgd = {lr: q.rounds_per_decade(curves[("sgd", q.STEPS_G, 1, lr)]) for lr in q.COMMON_LRS}
    observed = ("speedup = SGD's rounds per decade / SCAFFOLD's (zero start, G = 1), at the same step size: "
                + "; ".join(f"step {lr:g}: SGD {fmt_number(rpd_sgd[lr])} rounds per decade, K=2 "
                            f"{table[f'step {lr:g}']['K=2']:.2f}x, K=10 {table[f'step {lr:g}']['K=10']:.2f}x"
                            for lr in q.COMMON_LRS)
                + f". Each method at its best step size: K=2 {tuned['K=2']:.2f}x, K=10 {tuned['K=10']:.2f}x (SGD at "
                  "step 1 = 1/beta solves this one-dimensional f in one round)")
    entry = dict(
        reproduced={"speedup_same_step": table, "speedup_tuned": tuned,
                    "sgd_rounds_per_decade": {f"step {lr:g}": _num(v) for lr, v in rpd_sgd.items()}},
        scale={"clients": 2, "instance": "f1 = x^2 + G x, f2 = -G x", "G": q.STEPS_G, "mu": q.MU, "x0": q.X0,
               "common_step_sizes": list(q.COMMON_LRS), "local_steps_K": [1, *q.K_VALUES], "max_rounds": q.MAX_ROUNDS,
               "scaffold_option": "II", "eta_g": 1.0},
        figure={"path": "studies/scaffold_quadratics/scaffold_quadratics.png",
                "panel": "right: SGD and SCAFFOLD K=2, K=10 at step 0.1"},
        fidelity="stand-in", rounds_run=q.MAX_ROUNDS,
        observed=observed,
        verdict_text=summary)
    return Measurement(parts, values, "common", ("common", "tuned"), budgets=(0.5, 1.0), deterministic=True,
                       reading_names={"common": "same step size", "tuned": "each method at its best step size"},
                       entry=entry)


def _rounds_to(q: ModuleType, curves: dict, method: str, g: float, k: int) -> int | None:
    """The fewest rounds to f - f* <= 1e-8 (f(x0) - f*) over the step sizes of LR_GRID; None if none gets there."""
    hits = [readings.rounds_to_loss(curves[(method, g, k, lr)], 1e-8 * 0.5 * q.MU * q.X0**2) for lr in q.LR_GRID]
    return min((r for r in hits if r is not None), default=None)


def _fmt_rounds(q: ModuleType, r: int | None) -> str:
    return f">{q.MAX_ROUNDS}" if r is None else str(r)


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def figure(q: ModuleType, path: Path, curves: dict) -> None:
    from fedbench.plotting import pyplot, save_figure

    fig, axes = pyplot().subplots(1, 3, figsize=(14, 4))
    k = q.K_VALUES[-1]
    for ax, method, title in ((axes[0], "scaffold", "SCAFFOLD (zero start)"), (axes[1], "fedavg", "FedAvg")):
        for g in q.G_VALUES:
            lr = _best_rpd(q, curves, "scaffold", g, k)[1] if method == "scaffold" else _best_plateau(q, curves, g, k)[1]
            ax.semilogy(np.maximum(curves[(method, g, k, lr)], 1e-30), label=f"G={g:g} (step {lr:.3g})")
        ax.set(title=f"{title}, K={k}", xlabel="round", ylabel="f - f*")
        ax.legend(fontsize=8)
    lr = q.COMMON_LRS[len(q.COMMON_LRS) // 2]
    axes[2].semilogy(np.maximum(curves[("sgd", q.STEPS_G, 1, lr)], 1e-30), "k--", label="SGD (K=1)")
    for k in q.K_VALUES:
        axes[2].semilogy(np.maximum(curves[("scaffold", q.STEPS_G, k, lr)], 1e-30), label=f"SCAFFOLD K={k}")
    axes[2].set(title=f"same step size {lr:g}, G={q.STEPS_G:g}", xlabel="round")
    axes[2].legend(fontsize=8)
    save_figure(fig, path, dpi=120)

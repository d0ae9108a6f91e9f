"""The claim of fedbench.studies.scaffold_concrete: its reading (rounds to the 1% target), the step-size selection, the
three parts of the registered rule, the measurement and the figure. Each function takes the study module (``study``) for its
constants, so a test can shrink them; curves are keyed (method, step factor, split seed) -> training loss per round
0..MAX_ROUNDS (inf where a diverged run stopped).

Part (c), "SGD's step / FedAvg's step >= 2 in each seed's selection", is read as one deterministic value: the fewest
grid halvings by which FedAvg's selected step lies below SGD's over the selection seeds, log2(SGD's / FedAvg's). On the
grid (powers of 2) it is an integer, so the rule "greater than 0.5 halvings" is exactly "ratio >= 2 in every seed"
(no integer lies between 0.5 and 1: no value is inconclusive); a seed where FedAvg converges at no grid step counts
as infinitely many halvings (it needs a smaller step than any), one where SGD converges at none leaves the part
without a value (inconclusive).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import numpy as np

from fedbench.claims.stats import fmt_number
from fedbench.claims.verdict import Fixed, Part
from fedbench.study.contract import Measurement
from fedbench.study.declaration import Claim

READING = "rounds to 1% of f*"
PART_A, PART_B, PART_C = ("(a) SGD's rounds - SCAFFOLD's", "(b) FedAvg's rounds - SGD's",
                          "(c) halvings of FedAvg's step below SGD's")
HALVING_EDGE = 0.5  # between 0 and 1 halving: "> 0.5" is ">= 1 halving" (ratio >= 2) on the integer values


def rounds_to_target(study: ModuleType, curve: np.ndarray, f_star: float, rounds: int | None = None) -> int:
    """The first round whose training loss is within TARGET of ``f_star``, looking at rounds 0..``rounds`` (default
    MAX_ROUNDS); ``rounds`` itself when none is (never: the rounds run)."""
    rounds = study.MAX_ROUNDS if rounds is None else rounds
    hit = np.flatnonzero(np.asarray(curve[: rounds + 1]) <= (1 + study.TARGET) * f_star)
    return int(hit[0]) if len(hit) else rounds


def converges(study: ModuleType, curve: np.ndarray, f_star: float) -> bool:
    """Whether the run gets within TARGET of ``f_star`` within MAX_ROUNDS rounds."""
    return bool(np.any(np.asarray(curve[: study.MAX_ROUNDS + 1]) <= (1 + study.TARGET) * f_star))


def selections(study: ModuleType, curves: dict, f_star: float) -> dict[tuple[str, int], float | None]:
    """(method, selection seed) -> the largest grid step factor whose run converges on that split (None: none does)."""
    return {(m, s): max((f for f in study.LR_FACTORS if converges(study, curves[(m, f, s)], f_star)), default=None)
            for m in study.METHODS for s in study.SELECTION_SEEDS}


def chosen_steps(study: ModuleType, curves: dict, f_star: float) -> dict[str, float | None]:
    """method -> the largest grid step factor whose run converges on every selection seed (None: none does): the step
    each method is judged at."""
    return {m: max((f for f in study.LR_FACTORS
                    if all(converges(study, curves[(m, f, s)], f_star) for s in study.SELECTION_SEEDS)), default=None)
            for m in study.METHODS}


def step_halvings(study: ModuleType, curves: dict, f_star: float) -> float | None:
    """Part (c)'s value: the fewest halvings log2(SGD's step / FedAvg's) over the selection seeds (module docstring)."""
    picked = selections(study, curves, f_star)
    values = []
    for s in study.SELECTION_SEEDS:
        sgd, fedavg = picked[("sgd", s)], picked[("fedavg", s)]
        if sgd is None:
            return None
        values.append(math.inf if fedavg is None else math.log2(sgd / fedavg))
    return min(values)


def measurement(study: ModuleType, claim: Claim, curves: dict, steps: dict[str, float | None], seeds,
                f_star: float) -> Measurement:
    """The claim's parts (a) and (b) on the judged seeds' rounds to the target at each method's chosen step (a method
    with no chosen step: never, the rounds run), at 25, 50 and 100% of the rounds; part (c) from the selection,
    deterministic, judged beside them (fedbench.claims.verdict.Fixed); and what its entry reports."""
    def rounds(method: str, seed: int, budget: float) -> int:
        cut = round(budget * study.MAX_ROUNDS)
        step = steps[method]
        return cut if step is None else rounds_to_target(study, curves[(method, step, seed)], f_star, cut)

    def values(reading: str, budget: float) -> list[list[float]]:
        return [[rounds("sgd", s, budget) - rounds("scaffold", s, budget) for s in seeds],
                [rounds("fedavg", s, budget) - rounds("sgd", s, budget) for s in seeds]]

    rule_ab = claim.rule_for("(a) and (b)")  # the rules it declares: (a) and (b) alike, and (c)
    halvings = Fixed(Part(PART_C, claim.rule_for("(c)")), step_halvings(study, curves, f_star),
                     " (on the grid: SGD's step / FedAvg's >= 2 in every selection seed)",
                     "SGD converged at no grid step on some selection seed")
    picked = selections(study, curves, f_star)
    median = {m: (None if steps[m] is None else
                  float(np.median([rounds_to_target(study, curves[(m, steps[m], s)], f_star) for s in seeds])))
              for m in study.METHODS}
    step_text = ", ".join(f"{m} {'none' if steps[m] is None else fmt_number(steps[m])}/L" for m in study.METHODS)
    observed = (f"steps chosen on split seeds {list(study.SELECTION_SEEDS)}: {step_text}; rounds to within "
                f"{study.TARGET:.0%} of f* (median over split seeds {list(seeds)}; never = {study.MAX_ROUNDS}): "
                + ", ".join(f"{m} {'-' if v is None else fmt_number(v)}" for m, v in median.items()))
    entry = dict(
        scale={"data": "UCI concrete, 1,030 rows, 8 z-scored inputs + intercept", "clients": study.NUM_CLIENTS,
               "similarity_percent": study.SIMILARITY, "local_steps": study.K, "rounds": study.MAX_ROUNDS,
               "lr_grid": f"2^-j / L, j = 0..{study.GRID_HALVINGS - 1}", "selection_seeds": list(study.SELECTION_SEEDS),
               "target": f"within {study.TARGET:.0%} of f*"},
        training_seeds=list(seeds), rounds_run=study.MAX_ROUNDS, observed=observed,
        reproduced={"unit": "rounds to the target (median over split seeds)", "value": median,
                    "chosen_step_x_1_over_L": steps,
                    "selection_x_1_over_L": {f"{m}/seed={s}": v for (m, s), v in picked.items()},
                    "f_star": f_star},
        figure={"path": "studies/scaffold_concrete/scaffold_concrete.png", "panel": "both panels"})
    return Measurement([Part(PART_A, rule_ab), Part(PART_B, rule_ab)], values, READING, (READING,), entry=entry,
                       fixed=(halvings,))


def figure(study: ModuleType, path: Path, curves: dict, steps: dict[str, float | None], seeds, f_star: float) -> None:
    """Left: (loss - f*) / f* per round at each method's chosen step (median over the judged seeds), the target
    dotted. Right: rounds to the target against the step factor on the selection seeds (median)."""
    from fedbench.plotting import pyplot, save_figure

    fig, (left, right) = pyplot().subplots(1, 2, figsize=(11, 3.8))
    for m in study.METHODS:
        if steps[m] is not None:
            stack = np.stack([np.asarray(curves[(m, steps[m], s)], float) for s in seeds])
            with np.errstate(all="ignore"):
                left.plot(np.median((stack - f_star) / f_star, 0), label=f"{m}, step {fmt_number(steps[m])}/L")
        right.plot(study.LR_FACTORS, [np.median([rounds_to_target(study, curves[(m, f, s)], f_star)
                                                 for s in study.SELECTION_SEEDS]) for f in study.LR_FACTORS],
                   marker="o", label=m)
    left.axhline(study.TARGET, color="grey", ls=":", lw=0.8)
    left.set(xlabel="round", ylabel="(training loss - f*) / f*", yscale="log",
             title=f"chosen steps, median of split seeds {list(seeds)}")
    right.set(xlabel="step x L", ylabel=f"rounds to {study.TARGET:.0%} of f* (never = {study.MAX_ROUNDS})",
              xscale="log", title=f"selection, median of split seeds {list(study.SELECTION_SEEDS)}")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    fig.suptitle(f"SCAFFOLD slides' quick demo: least squares on UCI concrete, {study.NUM_CLIENTS} clients, "
                 f"K = {study.K}", fontsize=10)
    save_figure(fig, path, dpi=120)

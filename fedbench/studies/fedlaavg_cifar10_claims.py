"""The claims of fedbench.studies.fedlaavg_cifar10 (FedLaAvg on CIFAR-10, Yan et al., arXiv 2002.07399 v1, Tables 2
and 3, Figures 2 and 3): the readings of the runs' test-accuracy curves (:class:`Curves`, the registry's readings,
fedbench.claims.readings), one function per claim judging it from them, and the three claims declared after the
study's first four (:data:`LATER_CLAIMS`, each registered as a placeholder before any run; its rule, declared as
data, decides as registered, its words generated since issue 30), and the Rule objects that the study's claims
declare and these judges judge by (:data:`GAIN_RULE` and the others beside it). The study module holds the
declaration, the plan of runs and run(); fedlaavg_cifar10_figures its figures (siblings for their size; this one
imports nothing of either).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from fedbench.claims import readings
from fedbench.claims.verdict import COMBINES, Rule
from fedbench.study.declaration import Claim

if TYPE_CHECKING:
    from fedbench.study.runner import Outcome

NAME = "fedlaavg_cifar10"
ROUNDS_PAPER = 70000
ACCURACY = "global_test/accuracy"  # the metric every reading reads
MIN_GAIN = 0.0  # accuracy points: the sign; the size is the magnitude part's (issue 32: the 1-point threshold
# registered before any run was this project's choice, not the paper's)
NEAR_SEQUENTIAL = 1.0  # accuracy points: "within a point" of sequential SGD
# The rules the claims declare (fedlaavg_cifar10's DECLARATION and LATER_CLAIMS) and their judges below judge with
GAIN_RULE = Rule("greater", MIN_GAIN, "accuracy points")  # ica-gain; fca-gain's full availability
NEAR_SEQUENTIAL_RULE = Rule("at_least", NEAR_SEQUENTIAL, "accuracy points")  # fca-gain's near sequential SGD
RHO_BELOW_RULE = Rule("at_most", 0.0, "Spearman rho")  # sublinear-speedup (N); gamma-and-period-trends' gamma
RHO_ABOVE_RULE = Rule("greater", 0.0, "Spearman rho")  # gamma-and-period-trends' P; oscillation-grows-with-period
POWER_RULE = Rule("greater", 0.0, "accuracy points^2")  # fedavg-oscillates
EARLY_RULE = Rule("greater", 0.0, "accuracy points")  # early-oscillation, each availability
SMOOTH = 10  # evaluations in the running mean of the smoothed rounds-to-target reading
EARLY = 0.05  # share of the rounds run that early-oscillation reads (the rule's first 5%)
EARLY_MIN = 3  # evaluations it reads at least (2 changes; binds only below 41 evaluations, e.g. the fixture)
MIXED = "'generally': one part is not-reproduced and the other is not, so inconclusive (the rule's combination)"

ASSUMED = ("reconstructed, not paper-scale (issue 32, item 3): the paper's tuned step sizes, its beta and its "
           "per-client size distribution are stripped, and the authors' code defaults fill them; "
           "lr 0.01 * 0.9999^round for every method (the authors' code default; the paper's tuned rates are "
           "stripped), beta = 0.5 (authors' default), seeds 0-4, test accuracy every 20 rounds and on the final model "
           "(the authors' tb_every = 20)")

PUBLISHED_ICA = {"fedavg": 56.75, "fedlaavg": 60.98}
PUBLISHED_FCA = {"fedavg": 59.25, "fedlaavg": 64.70}
PUBLISHED_SEQUENTIAL_FINAL = 61.59
PUBLISHED_ROUNDS_P = {1: 10000, 5: 9950, 10: 10100, 15: 13400}
PUBLISHED_ROUNDS_GAMMA = {0.02: 27800, 0.04: 32200, 0.06: 13450, 0.08: 9400, 0.10: 10100}


# --- readings (fedbench.claims.readings), by the rounds evaluated -----------------------------------------------

@dataclass(frozen=True)
class Curves:
    """The runs' test accuracy (%) at the evaluated rounds, cut at a fraction ``frac`` of the rounds run, and the
    readings the rules take from it (fedbench.claims.readings)."""

    b: Any  # the study's Budget (fedbench.studies.fedlaavg_cifar10)
    roles: dict[str, list[Any]]  # the study's Runs by role (fedbench.studies.fedlaavg_cifar10.plan)
    outcomes: dict[Any, Outcome]

    def rounds(self, frac: float = 1.0) -> np.ndarray:
        return readings.evaluation_rounds(self.b.rounds, self.b.eval_every, frac)

    def __call__(self, r: Any, frac: float = 1.0) -> np.ndarray:
        o = self.outcomes[r]
        diverged_at = int(o.history[-1]["round"]) if o.diverged else None
        return readings.accuracy_at(o.at_rounds(ACCURACY), self.rounds(frac), diverged_at)

    def read(self, r: Any, reading: str, frac: float = 1.0) -> float:
        """``best``, ``tail`` (the mean of the last 5) or ``final`` evaluation."""
        return readings.read_curve(self(r, frac), reading)

    def reach(self, r: Any, frac: float = 1.0, smooth: int = 1) -> int:
        """Rounds to the budget's target: the first evaluated round at it (``smooth``: of the running mean)."""
        return readings.rounds_to_smoothed(self(r, frac), self.b.target, smooth, self.rounds(frac))

    def power(self, r: Any, frac: float = 1.0, whole: bool = False) -> float:
        """Oscillation power at the run's availability period, over the second half of the rounds (or ``whole``)."""
        return readings.period_power(self(r, frac), self.b.cycle(r.period), whole, self.rounds(frac))

    def early(self, r: Any, frac: float = 1.0, share: float = EARLY) -> float:
        """Early oscillation: the (population) standard deviation of the accuracy's changes between consecutive
        evaluations (its round-to-round changes) up to ``share`` of the rounds run, at least EARLY_MIN evaluations."""
        t, curve = self.rounds(frac), self(r, frac)
        inside = (t <= share * t[-1]) | (np.arange(len(t)) < EARLY_MIN)
        return float(np.std(np.diff(curve[inside])))

    def per_seed(self, role: str, reading: str = "best", frac: float = 1.0) -> list[float]:
        return [self.read(r, reading, frac) for r in self.roles[role]]

    def mean_best(self, role: str) -> float:
        return float(np.mean(self.per_seed(role)))


# --- the claims: each judged from the runs' curves; its id, the judgement, and what its entry reports --------------

FIGURE_2 = {"path": f"figures/{NAME}/{NAME}_table2.png", "panel": "(a) test accuracy, mean of the seeds"}


def _judge(c: Curves, parts: list, measure: Callable[[str, float], list], primary: str,
           also: tuple[str, ...]) -> dict[str, Any]:
    """fedbench.claims.verdict.judge at the study's budget: ``measure(reading, frac)`` per part, per seed, read with
    ``primary`` and, for the sensitivity, the readings ``also``."""
    from fedbench.claims.verdict import judge

    names = {"best": "best evaluation", "tail": "mean of the last 5 evaluations", "final": "final round",
             "first": f"first round >= {c.b.target:g}%",
             "smoothed": f"first round the mean of {SMOOTH} >= {c.b.target:g}%",
             "half": "second half of the rounds", "whole": "whole curve",
             "early": f"first {EARLY:.0%} of the rounds", "early10": f"first {2 * EARLY:.0%} of the rounds"}
    return judge(parts, measure, primary, also, paper_budget=ROUNDS_PAPER / c.b.rounds, reading_names=names)


def _gains(c: Curves, a: str, z: str, reading: str, frac: float) -> list[float]:
    """Per seed, role ``a``'s reading minus role ``z``'s."""
    return [x - y for x, y in zip(c.per_seed(a, reading, frac), c.per_seed(z, reading, frac))]


def _best(c: Curves, role: str) -> list[float]:
    return [round(v, 2) for v in c.per_seed(role)]


def ica_gain(c: Curves) -> tuple[str, dict, dict]:
    """Table 2, ICA: FedLaAvg's best accuracy minus FedAvg's under diurnal availability."""
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part

    part = Part("diurnal availability (ICA)", GAIN_RULE)
    result = _judge(c, [part], lambda reading, frac: [_gains(c, "fedlaavg_ica", "fedavg_ica", reading, frac)],
                    "best", ("best", "tail", "final"))
    observed = (f"best test accuracy, mean of {len(c.b.seeds)} seeds: FedLaAvg {c.mean_best('fedlaavg_ica'):.2f}% vs "
                f"FedAvg {c.mean_best('fedavg_ica'):.2f}% under diurnal availability (gain "
                f"{fmt_effect(result['effect'])}). Published: {PUBLISHED_ICA['fedlaavg']}% vs "
                f"{PUBLISHED_ICA['fedavg']}% (+4.23)")
    return "fedlaavg/cifar10/ica-gain", result, {"figure": FIGURE_2, "observed": observed,
        "reproduced": {"unit": "best test accuracy (%)", "fedlaavg_best": _best(c, "fedlaavg_ica"),
                       "fedavg_best": _best(c, "fedavg_ica")}}


def fca_gain(c: Curves) -> tuple[str, dict, dict]:
    """Table 2, FCA and sequential SGD: FedLaAvg's gain under full availability, and FedLaAvg (ICA) against
    sequential SGD's final accuracy."""
    from fedbench.claims.verdict import Part

    def near_sequential(reading: str, frac: float) -> list[float]:
        return [c.read(x, reading, frac) - c.read(s, "tail", frac)
                for x, s in zip(c.roles["fedlaavg_ica"], c.roles["sequential"])]
    parts = [Part("full availability (FCA)", GAIN_RULE), Part("FedLaAvg (ICA) vs sequential SGD", NEAR_SEQUENTIAL_RULE)]
    result = _judge(c, parts, lambda reading, frac: [_gains(c, "fedlaavg_fca", "fedavg_fca", reading, frac),
                                                     near_sequential(reading, frac)],
                    "best", ("best", "tail", "final"))
    seq_final = float(np.mean(c.per_seed("sequential", "tail")))
    observed = (f"best test accuracy, mean of {len(c.b.seeds)} seeds, full availability: FedLaAvg "
                f"{c.mean_best('fedlaavg_fca'):.2f}% vs FedAvg {c.mean_best('fedavg_fca'):.2f}%; FedLaAvg under "
                f"diurnal availability {c.mean_best('fedlaavg_ica'):.2f}% vs sequential SGD's final {seq_final:.2f}% "
                f"(best {c.mean_best('sequential'):.2f}%). Published: FCA {PUBLISHED_FCA['fedlaavg']}% vs "
                f"{PUBLISHED_FCA['fedavg']}%, sequential SGD {PUBLISHED_SEQUENTIAL_FINAL}% (FedLaAvg ICA 0.61 below)")
    return "fedlaavg/cifar10/fca-gain", result, {"figure": FIGURE_2, "observed": observed,
        "reproduced": {"unit": "test accuracy (%)", "fedlaavg_fca_best": _best(c, "fedlaavg_fca"),
                       "fedavg_fca_best": _best(c, "fedavg_fca"), "fedlaavg_ica_best": _best(c, "fedlaavg_ica"),
                       "sequential_final": [round(v, 2) for v in c.per_seed("sequential", "tail")]}}


def sublinear_speedup(c: Curves) -> tuple[str, dict, dict]:
    """Table 3, N: per seed, Spearman's rho of N against FedLaAvg's rounds to the target; P and gamma as context."""
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part

    b = c.b
    def rho(reading: str, frac: float) -> list[list[float]]:
        smooth = SMOOTH if reading == "smoothed" else 1
        return [[readings.spearman(b.clients, [c.reach(c.roles[f"n={n}"][i], frac, smooth) for n in b.clients])
                 for i in range(len(b.seeds))]]
    part = Part(f"N = {b.clients[0]}..{b.clients[-1]}", RHO_BELOW_RULE)
    result = _judge(c, [part], rho, "first", ("first", "smoothed"))
    table_n = {n: [c.reach(r) for r in c.roles[f"n={n}"]] for n in b.clients}
    context_p = {p: c.reach(c.roles[f"p={p}"][0]) for p in b.periods}
    context_g = {g: c.reach(c.roles[f"gamma={g:g}"][0]) for g in b.gammas}
    never = f"{b.rounds} = never within the budget"
    observed = (f"rounds to {b.target:g}% per N (seeds {list(b.seeds)}; {never}): "
                + "; ".join(f"N={n}: {v}" for n, v in table_n.items())
                + f"; Spearman rho of N and rounds {fmt_effect(result['effect'])}. Context (seed {b.seeds[0]}): P "
                + ", ".join(f"{p}: {v}" for p, v in context_p.items()) + "; gamma "
                + ", ".join(f"{g:g}: {v}" for g, v in context_g.items())
                + ". Published: N 200..1000: 33550/14800/12850/12700/10100")
    return "fedlaavg/cifar10/sublinear-speedup", result, {"scale": {"N": list(b.clients)}, "observed": observed,
        "figure": {"path": f"figures/{NAME}/{NAME}_table3.png", "panel": "(d) rounds to the target against N"},
        "reproduced": {"unit": f"rounds to {b.target:g}% test accuracy",
                       "by_N": {str(n): v for n, v in table_n.items()},
                       "context_first_seed": {"P": {str(p): v for p, v in context_p.items()},
                                              "gamma": {f"{g:g}": v for g, v in context_g.items()}}}}


def fedavg_oscillates(c: Curves) -> tuple[str, dict, dict]:
    """Figure 2: per seed, FedAvg's oscillation power at the availability period minus FedLaAvg's (ICA)."""
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part

    def oscillation(reading: str, frac: float) -> list[list[float]]:
        whole = reading == "whole"
        return [[c.power(x, frac, whole) - c.power(y, frac, whole)
                 for x, y in zip(c.roles["fedavg_ica"], c.roles["fedlaavg_ica"])]]
    part = Part("diurnal availability (ICA)", POWER_RULE)
    result = _judge(c, [part], oscillation, "half", ("half", "whole"))
    p_avg = [c.power(r) for r in c.roles["fedavg_ica"]]
    p_la = [c.power(r) for r in c.roles["fedlaavg_ica"]]
    observed = (f"power of the period-{c.b.cycle()} component of the test accuracy over the second half of the rounds "
                f"(points^2, per seed): FedAvg {[round(v, 4) for v in p_avg]}, FedLaAvg {[round(v, 4) for v in p_la]} "
                f"(difference {fmt_effect(result['effect'])})")
    return "fedlaavg/cifar10/fedavg-oscillates", result, {
        "figure": {"path": f"figures/{NAME}/{NAME}_table2.png", "panel": "(b) the last periods, first seed"},
        "observed": observed,
        "reproduced": {"unit": "period power (accuracy points^2)", "fedavg": p_avg, "fedlaavg": p_la}}


# --- the later claims (issue 32 item 4): registered before any run as placeholders, each rule as data -----------

def _later(id: str, where: str, claim_text: str, statement: str, unit: str, effect: str,
           rules: tuple[tuple[str, Rule], ...], notes: str, reads: tuple[str, ...], note: str,
           combination: str = "every") -> Claim:
    return Claim(id=id, where=where, claim_text=claim_text, effect=effect, rules=rules, combination=combination,
                 notes=notes, reads=reads, rounds_paper=ROUNDS_PAPER,
                 published={"value": None, "unit": unit, "scope": where, "statement": statement},
                 fidelity="reconstructed", note=ASSUMED + note)


LATER_CLAIMS = (
    _later("fedlaavg/cifar10/gamma-and-period-trends", "section 5.3, Table 3",
           "FedLaAvg needs fewer rounds to reach 55% test accuracy when the proportion gamma of selected clients "
           "increases or the period length P decreases.",
           "'FedLaAvg generally needs fewer training rounds to reach a certain test accuracy when either the total "
           "number of clients or the proportion of selected clients increases, or the period length decreases'; "
           "Table 3: gamma 0.02-0.10: 27800/32200/13450/9400/10100 rounds; P 1/5/10/15: 10000/9950/10100/13400",
           "rounds to 55% test accuracy",
           "per seed, the Spearman correlation of gamma (0.02-0.10) and the rounds to 55% (never: the rounds run), and "
           "that of P (5, 10, 15) and the rounds",
           (("gamma's", RHO_BELOW_RULE), ("P's", RHO_ABOVE_RULE)), "5 seeds",
           ("fedlaavg_ica",), "; K = round(gamma N) at N = 1000; P = 1 not run (int(beta P) = 0)",
           combination="generally"),
    _later("fedlaavg/cifar10/oscillation-grows-with-period", "section 5.3, Figure 3(b)",
           "With a larger period length P, FedLaAvg's test accuracy oscillates more severely.",
           "'From Subfigure 3(b), we further observe that with a larger P, the test accuracy of FedLaAvg oscillates "
           "more severely'", "accuracy oscillation",
           "per seed, the Spearman correlation of P (5, 10, 15) and the power of FedLaAvg's test-accuracy curve at its "
           "availability period T = (1 + beta) P (fedlaavg/cifar10/fedavg-oscillates' measure, second half of the "
           "rounds)",
           (("", RHO_ABOVE_RULE),), "5 seeds",
           ("fedlaavg_ica",), "; T = P + int(beta P) = 7, 15, 22 rounds"),
    _later("fedlaavg/cifar10/early-oscillation", "section 5.2, Figure 2",
           "FedLaAvg's test accuracy oscillates more than FedAvg's early in training (under both full and "
           "intermittent availability), before it converges.",
           "'The test accuracy of FedLaAvg with both intermittent and full client availability suffers from large "
           "oscillation at first but finally converges ... FedAvg has a smaller oscillation in the early stage of "
           "training'", "accuracy points",
           "per seed and availability (ICA, FCA), the standard deviation of the round-to-round changes of the test "
           "accuracy (points) over the first 5% of the rounds run, FedLaAvg minus FedAvg",
           (("each part", EARLY_RULE),), "5 seeds",
           ("fedlaavg_ica", "fedavg_ica", "fedlaavg_fca", "fedavg_fca"),
           "; its runs are Table 2's; the accuracy is evaluated every 20 rounds (the authors' tb_every), so its "
           "round-to-round changes are those between consecutive evaluations"),
)


def gamma_and_period_trends(c: Curves) -> tuple[str, dict, dict]:
    """Table 3, gamma and P: per seed, Spearman's rho of gamma (below 0) and of P (above 0) against FedLaAvg's rounds
    to the target, combined by the rule's 'generally' (each part judged alone too, for the sensitivity cells')."""
    from fedbench.claims.verdict import Part

    b = c.b
    rows = ((b.gammas, lambda g: f"gamma={g:g}"), (b.periods, lambda p: f"p={p}"))

    def rho(reading: str, frac: float) -> list[list[float]]:
        smooth = SMOOTH if reading == "smoothed" else 1
        return [[readings.spearman(xs, [c.reach(c.roles[role(x)][i], frac, smooth) for x in xs])
                 for i in range(len(b.seeds))] for xs, role in rows]
    parts = [Part(f"gamma = {b.gammas[0]:g}..{b.gammas[-1]:g}", RHO_BELOW_RULE),
             Part(f"P = {', '.join(map(str, b.periods))}", RHO_ABOVE_RULE)]
    result = _judge(c, parts, rho, "first", ("first", "smoothed"))
    alone = [_judge(c, [p], lambda r, f, i=i: rho(r, f)[i:i + 1], "first", ("first", "smoothed"))
             for i, p in enumerate(parts)]
    generally = COMBINES[next(x for x in LATER_CLAIMS if x.id.endswith("trends")).combination][0]  # as declared
    cells = [cell | {"verdict": generally([a["sensitivity"][k]["verdict"] for a in alone])}
             for k, cell in enumerate(result["sensitivity"])]
    verdict = generally([p["verdict"] for p in result["parts"]])
    mixed = [MIXED] if verdict != result["verdict"] else []
    result = result | {"verdict": verdict, "sensitivity": cells, "notes": [*result["notes"], *mixed]}
    by = {f"gamma={g:g}": [c.reach(r) for r in c.roles[f"gamma={g:g}"]] for g in b.gammas}
    by |= {f"P={p}": [c.reach(r) for r in c.roles[f"p={p}"]] for p in b.periods}
    observed = (f"rounds to {b.target:g}% per setting (seeds {list(b.seeds)}; {b.rounds} = never): "
                + "; ".join(f"{k}: {v}" for k, v in by.items()) + ". Spearman rho per seed: "
                + "; ".join(f"{p['part']}: {[None if x is None else round(x, 3) for x in p['per_seed']]}" for p in result["parts"])
                + f". Published: gamma {PUBLISHED_ROUNDS_GAMMA}; P {PUBLISHED_ROUNDS_P}")
    return "fedlaavg/cifar10/gamma-and-period-trends", result, {
        "scale": {"P": list(b.periods), "gamma": list(b.gammas)}, "observed": observed,
        "figure": {"path": f"figures/{NAME}/{NAME}_table3.png", "panel": "(b) P and (c) gamma, mean of the seeds"},
        "reproduced": {"unit": f"rounds to {b.target:g}% test accuracy", "by_setting": by}}


def oscillation_grows_with_period(c: Curves) -> tuple[str, dict, dict]:
    """Figure 3(b): per seed, Spearman's rho of P against FedLaAvg's oscillation power at its period T(P)."""
    from fedbench.claims.stats import fmt_effect
    from fedbench.claims.verdict import Part

    b = c.b

    def rho(reading: str, frac: float) -> list[list[float]]:  # per seed
        whole = reading == "whole"
        return [[readings.spearman(b.periods, [c.power(c.roles[f"p={p}"][i], frac, whole) for p in b.periods])
                 for i in range(len(b.seeds))]]

    part = Part(f"P = {', '.join(map(str, b.periods))}", RHO_ABOVE_RULE)
    result = _judge(c, [part], rho, "half", ("half", "whole"))
    power = {str(p): [c.power(r) for r in c.roles[f"p={p}"]] for p in b.periods}
    observed = (f"FedLaAvg's power at its period T = P + int({b.beta:g} P) over the second half of the rounds (points^2, "
                "per seed): " + "; ".join(f"P={p}: {[round(v, 4) for v in vs]}" for p, vs in power.items())
                + f"; Spearman rho of P and the power {fmt_effect(result['effect'])}")
    return "fedlaavg/cifar10/oscillation-grows-with-period", result, {
        "scale": {"P": list(b.periods)}, "observed": observed,
        "figure": {"path": f"figures/{NAME}/{NAME}_table3.png", "panel": "(b) P, mean of the seeds"},
        "reproduced": {"unit": "period power (accuracy points^2)", "by_P": power}}


def early_oscillation(c: Curves) -> tuple[str, dict, dict]:
    """Figure 2: per seed and availability, FedLaAvg's early oscillation (:meth:`Curves.early`) minus FedAvg's."""
    from fedbench.claims.verdict import Part

    def spread(reading: str, frac: float) -> list[list[float]]:
        share = EARLY if reading == "early" else 2 * EARLY
        return [[c.early(x, frac, share) - c.early(y, frac, share)
                 for x, y in zip(c.roles[f"fedlaavg_{a}"], c.roles[f"fedavg_{a}"])] for a in ("ica", "fca")]

    parts = [Part("intermittent availability (ICA)", EARLY_RULE), Part("full availability (FCA)", EARLY_RULE)]
    result = _judge(c, parts, spread, "early", ("early", "early10"))
    sd = {role: [round(c.early(r), 3) for r in c.roles[role]]
          for role in ("fedlaavg_ica", "fedavg_ica", "fedlaavg_fca", "fedavg_fca")}
    observed = (f"standard deviation of the changes between evaluations over the first {EARLY:.0%} of the rounds "
                "(points, per seed): " + "; ".join(f"{k}: {v}" for k, v in sd.items()))
    return "fedlaavg/cifar10/early-oscillation", result, {
        "figure": FIGURE_2, "observed": observed, "reproduced": {"unit": "accuracy points", **sd}}

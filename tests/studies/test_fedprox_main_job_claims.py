"""The main-job claims on hand-made run histories: exact effects and intervals, every verdict, not-run, fidelity
and the budget rule, and the same code at the paper's 200 rounds, 5 seeds and a 10% straggler level."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fedbench.config import load_config
from fedbench.studies.fedprox_curves import Curves as _Curves
from fedbench.studies.fedprox_main_job import HETERO
from fedbench.studies import fedprox_main_job_claims as measures
from fedbench.studies.fedprox_main_job import DECLARATION, evaluate_claims, judged_on


def _judged(measure):
    """The claim ``measure`` measures, judged as the one driver judges it (its entry), from (cfg, curves)."""
    claim = DECLARATION.claim(next(i for i, m in measures.MEASURES.items() if m is measure))
    return lambda cfg, curves: judged_on(cfg, curves, claim)


accuracy_gain, accuracy_gain_0_50, mu_increases_accuracy, mu_stabilises, partial_work, stragglers_hurt_fedavg = map(
    _judged, (measures.accuracy_gain, measures.accuracy_gain_0_50, measures.mu_increases_accuracy,
              measures.mu_stabilises, measures.partial_work, measures.stragglers_hurt_fedavg))
dissimilarity_tracks_loss, heterogeneity_hurts, iid_partial_work_no_effect, iid_robust = map(
    _judged, (measures.dissimilarity_tracks_loss, measures.heterogeneity_hurts, measures.iid_partial_work_no_effect,
              measures.iid_robust))
from fedbench.claims.entry import CLAIM_KEYS

# the rules on a pinned grid (3 seeds, 10 rounds, stragglers 0/50/90%), whatever params.yaml runs
CFG = load_config("params.yaml", {"train.seeds": [0, 1, 2], "train.rounds": 10,
                                  "studies.stragglers.stragglers": [0.0, 0.5, 0.9]})
VARIANTS = ("fedavg", "fedprox_mu0", "fedprox_mu1")


def _curves(cfg, loss_of, acc_of=lambda *a: 0.5, dis_of=lambda *a: 1.0, wiggle_of=lambda *a: 0.0,
            levels=(0.0, 0.5, 0.9), drop=()):
    """Curves where run (dataset, variant, stragglers, seed) has training loss loss_of(...) + 0.01 (R - r) +
    wiggle_of(...) at odd rounds r (so its mean over the last 5 rounds is loss_of(...) + 0.02 + 0.6 wiggle for
    R = 10), a constant test accuracy and a constant dissimilarity."""
    rounds = cfg.train.rounds
    rows = []
    for ds in HETERO:
        for v in VARIANTS:
            for f in levels:
                for s in cfg.train.seeds:
                    if (ds, v, f) in drop:
                        continue
                    for r in range(rounds + 1):
                        rows.append({"dataset": ds, "variant": v, "stragglers": f, "seed": s, "round": r,
                                     "train/loss": loss_of(ds, v, f, s) + 0.01 * (rounds - r)
                                     + wiggle_of(ds, v, f, s) * (r % 2),
                                     "test/accuracy": acc_of(ds, v, f, s), "diverging": 0.0,
                                     "train/dissimilarity": dis_of(ds, v, f, s)})
    return _Curves(pd.DataFrame(rows))


def _t_interval(values):
    v = np.asarray(values, float)
    half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))
    return [pytest.approx(v.mean() - half, rel=1e-5), pytest.approx(v.mean() + half, rel=1e-5)]


def test_accuracy_gain_exact_effect_and_verdicts():
    c = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.8 + 0.01 * s if v == "fedprox_mu1" else 0.5)
    e = accuracy_gain(CFG, c)
    assert tuple(e) == CLAIM_KEYS
    assert e["verdict"] == "reproduced" and e["effect"]["estimate"] == pytest.approx(31.0)
    assert e["effect"]["per_seed"] == [pytest.approx(30.0), pytest.approx(31.0), pytest.approx(32.0)]
    assert e["effect"]["ci95"] == _t_interval([30.0, 31.0, 32.0])
    assert e["effect"]["p_value"] == pytest.approx(stats.ttest_1samp([30.0, 31.0, 32.0], 0).pvalue, rel=1e-5)
    assert (e["fidelity"], e["rounds_run"], e["rounds_paper"]) == ("smoke-check", 10, 200)  # a twentieth
    assert e["seeds"] == {"training": [0, 1, 2], "data": [0]}
    assert e["figure"]["path"] == "figures/fig1_stragglers_synthetic_1_1.png"
    readings = [(x["reading"], x["budget"]) for x in e["sensitivity"]]
    assert readings == [("mean of last 5 rounds", 1.0), ("paper's rule (C.3.2)", 1.0), ("final round", 1.0),
                        ("best round", 1.0), ("mean of last 5 rounds", 0.25), ("mean of last 5 rounds", 0.5)]
    small = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.52 + 0.001 * s if v == "fedprox_mu1" else 0.5)
    e = accuracy_gain(CFG, small)
    # a small gain (+2.0, +2.1, +2.2 points) is real: the rule is the sign (issue 32 removed the 5-point threshold,
    # this project's choice), and the +22 is a five-dataset mean, so no size part decides it
    assert e["verdict"] == "reproduced" and e["effect"]["ci95"] == _t_interval([2.0, 2.1, 2.2])
    assert e["magnitude"]["kind"] == "none" and "+5" not in e["verdict_text"]
    noisy = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.5 + 0.2 * (s - 0.5) if v == "fedprox_mu1" else 0.5)
    assert accuracy_gain(CFG, noisy)["verdict"] == "inconclusive"  # gains -10, +10, +30
    missing = _curves(CFG, lambda *a: 1.0, drop=[("synthetic_1_1", "fedavg", 0.9)])
    e = accuracy_gain(CFG, missing)
    assert e["verdict"] == "not-run" and "fedavg on synthetic_1_1 at 90% stragglers (0/3 seeds)" in e["observed"]


def test_partial_work_verdicts():
    def loss(prox, avg):
        return lambda ds, v, f, s: (prox(s) if v == "fedprox_mu0" else avg(s))

    e = partial_work(CFG, _curves(CFG, loss(lambda s: 1.0, lambda s: 2.0 + 0.1 * s)))
    assert e["verdict"] == "reproduced" and e["effect"]["estimate"] == pytest.approx(1.1)
    assert [p["part"] for p in e["parts"]] == ["50% stragglers", "90% stragglers"]
    assert partial_work(CFG, _curves(CFG, loss(lambda s: 3.0 + 0.1 * s, lambda s: 2.0)))["verdict"] == "not-reproduced"
    assert partial_work(CFG, _curves(CFG, loss(lambda s: 2.0 + (s - 1), lambda s: 2.0)))["verdict"] == "inconclusive"


def test_mu_stabilises_upward_variation():
    # mu=0 rises by 0.1 + 0.01 s - 0.01 at each of the 5 odd rounds: upward variation 5 (0.09 + 0.01 s)
    c = _curves(CFG, lambda *a: 1.0, wiggle_of=lambda ds, v, f, s: 0.1 + 0.01 * s if v == "fedprox_mu0" else 0.0)
    e = mu_stabilises(CFG, c)
    assert e["verdict"] == "reproduced"
    assert e["parts"][0]["per_seed"] == [pytest.approx(0.45), pytest.approx(0.5), pytest.approx(0.55)]
    assert e["parts"][0]["ci95"] == _t_interval([0.45, 0.5, 0.55])
    flat = _curves(CFG, lambda *a: 1.0)
    assert mu_stabilises(CFG, flat)["verdict"] == "inconclusive"  # no rises anywhere: zero effect
    worse = _curves(CFG, lambda *a: 1.0, wiggle_of=lambda ds, v, f, s: 0.1 + 0.01 * s if v == "fedprox_mu1" else 0.0)
    assert mu_stabilises(CFG, worse)["verdict"] == "not-reproduced"


def test_heterogeneity_and_dissimilarity_verdicts():
    level = {d: i for i, d in enumerate(HETERO)}
    # every difference varies a little with the seed: equal per-seed differences give an order-statistic interval,
    # whose coverage with 3 seeds (75%) cannot meet a 95% rule (issue 51)
    loss = lambda ds, v, f, s: (1.0 + level[ds] * (1 + 0.01 * s) + 0.01 * s
                                - (0.5 + 0.01 * s if v == "fedprox_mu1" and level[ds] else 0.0))
    dis = lambda ds, v, f, s: (1.0 + level[ds] * (1 + 0.01 * s) + 0.01 * s
                               - (0.2 + 0.01 * s if v == "fedprox_mu1" and level[ds] else 0.0))
    c = _curves(CFG, loss, dis_of=dis)
    e = heterogeneity_hurts(CFG, c)
    assert e["verdict"] == "reproduced" and len(e["parts"]) == 6
    assert e["parts"][0]["estimate"] == pytest.approx(1.01)  # FedAvg (0,0) - IID: 1 + 0.01 s
    assert dissimilarity_tracks_loss(CFG, c)["verdict"] == "reproduced"
    assert dissimilarity_tracks_loss(CFG, c)["reproduced"]["spearman_dissimilarity_vs_loss_per_seed"] == [1.0] * 3
    up = _curves(CFG, loss, dis_of=lambda ds, v, f, s: 1.0 + level[ds] + 0.01 * s + (0.2 + 0.01 * s if v == "fedprox_mu1"
                                                                                    else 0))
    assert dissimilarity_tracks_loss(CFG, up)["verdict"] == "not-reproduced"  # mu=1 raises the dissimilarity
    assert heterogeneity_hurts(CFG, _curves(CFG, lambda ds, v, f, s: 4.0 - level[ds] * (1 + 0.01 * s) + 0.01 * s,
                                            dis_of=dis))["verdict"] == "not-reproduced"
    same = _curves(CFG, lambda ds, v, f, s: 1.0 + level[ds] + 0.01 * s, dis_of=dis)  # every seed the same differences
    assert heterogeneity_hurts(CFG, same)["verdict"] == "inconclusive"  # 3 equal values: 75% coverage, more seeds


def test_iid_robust_verdicts_and_no_extrapolation_across_budgets():
    # +0.5% and +0.9%: below the 10% this project chose for "rather robust", which the paper does not state (issue 51,
    # item 4): counted without it (an increase is shown), reproduced only with it, beside
    e = iid_robust(CFG, _curves(CFG, lambda ds, v, f, s: 1.0 + 0.01 * f + 0.001 * s))
    assert e["verdict"] == "not-reproduced" and [p["part"] for p in e["parts"]] == ["50% stragglers", "90% stragglers"]
    assert next(c for c in e["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == "reproduced"
    assert iid_robust(CFG, _curves(CFG, lambda ds, v, f, s: 1.0 - 0.01 * f + 0.001 * s))["verdict"] == "reproduced"
    assert "10% stragglers (shown in the paper's Figure 5) is not run" in e["deviations"]
    # the loss at 90% is 1.5 + 0.1 s against 1.0 at 0%; both curves add 0.01 (R - r), so read at the end
    e = iid_robust(CFG, _curves(CFG, lambda ds, v, f, s: 1.0 + (0.5 + 0.1 * s) * (f > 0.6)))
    expected = [100 * ((1.5 + 0.1 * s + 0.02) / 1.02 - 1) for s in range(3)]
    assert e["parts"][1]["per_seed"] == [pytest.approx(x, rel=1e-5) for x in expected]
    assert e["verdict"] == "not-reproduced" and "budget-limited" not in e["verdict_text"]
    assert e["verdict_text"] == ("with this project's thresholds (not stated by the paper; not counted): "
                                 "not-reproduced, against not-reproduced without them")
    # a 90% curve that starts far above and closes in on the 0% curve: not-reproduced at the end, and still so
    # though it moves toward the paper's side fast enough to cross +10% by the paper's 200 rounds: no verdict is
    # extrapolated across budgets (issue 21)
    rows = []
    for f in (0.0, 0.5, 0.9):
        for s in CFG.train.seeds:
            for r in range(11):
                gap = 3.0 * (f > 0.6) * (1 - r / 15) + 0.01 * s * (f > 0.6)
                rows.append({"dataset": "synthetic_iid", "variant": "fedavg", "stragglers": f, "seed": s, "round": r,
                             "train/loss": 1.0 + gap, "test/accuracy": 0.5, "diverging": 0.0,
                             "train/dissimilarity": 1.0})
    e = iid_robust(CFG, _Curves(pd.DataFrame(rows)))
    assert e["verdict"] == "not-reproduced" and "budget-limited" not in e["verdict_text"]
    assert "Budget rule applied" not in e["would_change"] and e["fidelity"] == "smoke-check"  # 10 of 200 rounds


def test_same_code_at_the_papers_budget_with_five_seeds_and_ten_percent_stragglers():
    cfg = load_config("params.yaml", {"train.seeds": [0, 1, 2, 3, 4], "train.rounds": 200,
                                      "studies.stragglers.stragglers": [0.0, 0.1, 0.5, 0.9]})
    c = _curves(cfg, lambda ds, v, f, s: 1.0 - 0.01 * f + 0.001 * s, levels=(0.0, 0.1, 0.5, 0.9),
                acc_of=lambda ds, v, f, s: 0.8 + 0.01 * s if v == "fedprox_mu1" else 0.5)
    claims = evaluate_claims(cfg, c.frame)
    assert all(x["fidelity"] == "paper-scale" and x["rounds_run"] == 200 for x in claims)
    robust = next(x for x in claims if x["id"] == "fedprox/synthetic-iid/robust-to-stragglers")
    assert [p["part"] for p in robust["parts"]] == ["10% stragglers", "50% stragglers", "90% stragglers"]
    assert robust["verdict"] == "reproduced" and robust["effect"]["n"] == 5
    assert not any("not run" in d for d in robust["deviations"])
    assert not any("rounds per run" in d for d in claims[0]["deviations"])  # no reduced budget to declare


def test_accuracy_gain_at_0_and_50_percent_exact_and_verdicts():
    c = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.8 + 0.01 * s if v == "fedprox_mu1" else 0.5)
    e = accuracy_gain_0_50(CFG, c)
    assert tuple(e) == CLAIM_KEYS and e["id"] == "fedprox/synthetic-1-1/stragglers-0-50/accuracy-gain"
    assert [p["part"] for p in e["parts"]] == ["0% stragglers", "50% stragglers"]
    assert e["verdict"] == "reproduced" and e["magnitude"] is None  # direction only: no published number
    assert e["parts"][0]["per_seed"] == [pytest.approx(30.0), pytest.approx(31.0), pytest.approx(32.0)]
    assert e["parts"][1]["ci95"] == _t_interval([30.0, 31.0, 32.0])
    assert "computed before this rule was registered" in e["deviations"][0]
    worse = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.4 - 0.01 * s if v == "fedprox_mu1" else 0.5)
    assert accuracy_gain_0_50(CFG, worse)["verdict"] == "not-reproduced"
    only_90 = _curves(CFG, lambda *a: 1.0, acc_of=lambda ds, v, f, s: 0.8 if v == "fedprox_mu1" and f > 0.6 else 0.5)
    assert accuracy_gain_0_50(CFG, only_90)["verdict"] == "inconclusive"  # zero gain at 0% and 50%
    missing = _curves(CFG, lambda *a: 1.0, drop=[("synthetic_1_1", "fedavg", 0.5)])
    assert accuracy_gain_0_50(CFG, missing)["verdict"] == "not-run"


def test_stragglers_hurt_fedavg_exact_and_verdicts():
    e = stragglers_hurt_fedavg(CFG, _curves(CFG, lambda ds, v, f, s: 1.0 + 2.0 * f + 0.01 * s * f))
    assert [p["part"] for p in e["parts"]] == ["FedAvg 50% - 0% stragglers", "FedAvg 90% - 50% stragglers"]
    assert e["parts"][0]["per_seed"] == [pytest.approx(1.0 + 0.005 * s) for s in range(3)]
    assert e["parts"][1]["per_seed"] == [pytest.approx(0.8 + 0.004 * s) for s in range(3)]
    assert e["verdict"] == "reproduced"
    better = _curves(CFG, lambda ds, v, f, s: 3.0 - 2.0 * f * (1 + 0.01 * s))
    assert stragglers_hurt_fedavg(CFG, better)["verdict"] == "not-reproduced"


def test_mu_increases_accuracy_share_of_cases():
    def acc(better_on):
        return lambda ds, v, f, s: (0.6 if better_on(ds, s) else 0.4) if v == "fedprox_mu1" else 0.5

    # the seed is the unit (issue 51): per seed the share of the six cases minus 50, read as any per-seed value
    e = mu_increases_accuracy(CFG, _curves(CFG, lambda *a: 1.0, acc_of=acc(lambda ds, s: s != 1 or ds != "synthetic_iid")))
    shares = [50.0, 100 * 5 / 6 - 50, 50.0]  # seed 1 worse on Synthetic-IID: 5 of 6
    assert e["effect"]["per_seed"] == [pytest.approx(x, abs=1e-4) for x in shares]
    assert e["effect"]["ci95"] == _t_interval(shares) and e["verdict"] == "reproduced"
    assert e["reproduced"]["Synthetic-IID at 0%"] == [10.0, -10.0, 10.0]  # per-case gains, in points
    every = mu_increases_accuracy(CFG, _curves(CFG, lambda *a: 1.0, acc_of=acc(lambda ds, s: True)))
    # all 6 cases on each of 3 seeds: three equal shares, the sign test p = 2 / 2^3 and a 75% interval: no 95% verdict
    # (pooled as 18 Clopper-Pearson trials until issue 51: reproduced)
    assert every["effect"]["per_seed"] == [50.0] * 3 and every["effect"]["p_value"] == 0.25
    assert every["effect"]["coverage"] == 0.75 and every["verdict"] == "inconclusive"
    # better on Synthetic(1,1) only: its three cases of six, not 'most'
    half = mu_increases_accuracy(CFG, _curves(CFG, lambda *a: 1.0, acc_of=acc(lambda ds, s: ds == "synthetic_1_1")))
    assert half["effect"]["estimate"] == 0.0 and half["verdict"] == "inconclusive"
    tie = mu_increases_accuracy(CFG, _curves(CFG, lambda *a: 1.0))  # equal accuracies: never above
    assert tie["effect"]["estimate"] == -50.0 and tie["verdict"] == "inconclusive"  # 3 seeds cannot decide


def test_iid_partial_work_no_effect_equivalence():
    def loss(avg):
        return lambda ds, v, f, s: avg + 0.001 * s if v == "fedavg" else 0.98

    near = lambda ds, v, f, s: 0.5 + (0.001 * s if v == "fedavg" else 0.0)  # 0, 0.1, 0.2 points apart
    e = iid_partial_work_no_effect(CFG, _curves(CFG, loss(1.03), acc_of=near))  # tail losses 1.05 + 0.001 s, 1.00
    assert [p["part"] for p in e["parts"]] == ["loss at 50% stragglers", "loss at 90% stragglers",
                                               "accuracy at 50% stragglers", "accuracy at 90% stragglers"]
    assert e["parts"][0]["per_seed"] == [pytest.approx(5.0 + 0.1 * s) for s in range(3)]
    assert e["parts"][2]["per_seed"] == [pytest.approx(0.1 * s) for s in range(3)]
    # +5% is within the 10% this project chose (no number in the paper): reproduced with it, beside; counted without
    # it, a difference of the loss is shown: not-reproduced (issue 51, item 4)
    assert e["verdict"] == "not-reproduced"
    assert next(c for c in e["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == "reproduced"
    assert "10% stragglers (shown in Figure 5) is not run" in e["deviations"]
    far = iid_partial_work_no_effect(CFG, _curves(CFG, loss(1.28), acc_of=near))  # +30%: outside the 10% margin
    assert far["parts"][0]["per_seed"] == [pytest.approx(30.0 + 0.1 * s) for s in range(3)]
    assert far["verdict"] == "not-reproduced"
    assert next(c for c in far["sensitivity"] if c["reading"] == "with this project's thresholds")["verdict"] == (
        "not-reproduced")
    acc = _curves(CFG, loss(0.98), acc_of=lambda ds, v, f, s: 0.5 + (0.1 + 0.001 * s if v == "fedavg" else 0.0))
    assert iid_partial_work_no_effect(CFG, acc)["verdict"] == "not-reproduced"  # 10 points apart
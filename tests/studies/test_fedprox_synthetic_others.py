"""FedProx Figures 11-12 on the other synthetic sets, a variant of fedprox_synthetic: the rules are the ones registered
before any run, the adaptive-mu parts (and the ones the heuristic cannot reach), the twelve sampling parts on made-up
curves, its entries' own words, and the test-size run."""

from __future__ import annotations

import pytest

from fedbench.claims import registry
from fedbench.studies import fedprox_synthetic as base
from fedbench.studies import fedprox_synthetic_others as study
from fedbench.studies.entries import not_run_entries
from fedbench.study.contract import StudyRun, drive, entry


class Loss:
    """A finished run as the hooks read it: its training loss by round."""

    def __init__(self, curve):
        self.curve = curve

    def series(self, key):
        assert key == "train/loss"
        return self.curve


def judge_all(loss, rounds):
    """Each claim's entry, judged by the one driver's entry() from ``loss(arm, dataset, seed)``, a run's per-round
    training loss over ``rounds`` rounds."""
    d = study.DECLARATION
    keys = [(a.name, data, s) for s in d.seeds for a in d.arms for data in a.settings["datasets"]]
    run = StudyRun(d, "pipeline", rounds, outcomes={k: Loss(loss(*k)) for k in keys})
    return [entry(run, claim, study.measure(claim, run)) for claim in d.claims]


def test_the_rules_are_the_registered_ones_word_for_word():
    book = registry.load()
    entries = not_run_entries("fedprox_synthetic_others", "not run", "running it")  # as the report shows them
    for claim, unjudged in zip(study.DECLARATION.claims, entries, strict=True):
        # adaptive-mu was re-registered under issue 51's statistics after its first result: before_result no longer
        rereg = claim.id == "fedprox/synthetic-0-0-and-0p5-0p5/adaptive-mu"
        assert book[claim.id]["before_result"] is not rereg and book[claim.id]["spec"]["rule"] == claim.rule
        assert registry.status(unjudged, book)["status"] == "registered", claim.id


def test_a_declared_variant_of_fedprox_synthetic():
    """Its runs, readings and figure are fedprox_synthetic's hooks; what differs is its declaration: other sets (adaptive
    mu started at 0 on two, the sampling arms on three), the two claims and their rules."""
    assert (study.simulations, study.measure, study.figure) == (base.simulations, base.measure, base.figure)
    assert isinstance(study.DECLARATION, base.Synthetic)
    assert study.DECLARATION.claim(study.ADAPTIVE_ID).rule_for() == base.ADAPTIVE_RULE
    assert study.SAMPLING_RULE == base.INSTABILITY_RULE  # the rule of fedprox_synthetic's two sampling claims
    assert base.rounds_to_reach(0.0, 1.0) == 11  # ten rises of 0.1, the first round only records the loss


def test_runs_and_arms():
    runs = study.simulations(StudyRun(study.DECLARATION, "paper", study.BUDGETS["paper"]))
    assert len(runs) == 5 * (4 * 3 + 2)  # the 70 runs: four sampling arms on three sets, adaptive on two
    assert ("adaptive", "synthetic_iid", 0) not in runs and ("adaptive", "synthetic_0p5_0p5", 4) in runs
    assert list(runs)[:5] == [(a, "synthetic_iid", 0) for a in ("mu0", "mu1", "prop-mu0", "prop-mu1")] + [
        ("mu0", "synthetic_0_0", 0)]
    adaptive = runs[("adaptive", "synthetic_0_0", 1)]
    assert adaptive.algorithm.mu_init == 0.0 and adaptive.config.rounds == 200
    prop = runs[("prop-mu1", "synthetic_iid", 1)]
    assert (prop.config.sampling, prop.algorithm.mu, prop.config.local_epochs) == ("proportional", 1.0, 20)
    assert runs[("mu0", "synthetic_iid", 1)].config.sampling == "uniform"
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline, paper"):
        drive(study, "unused", budget="full")


def _base(rounds):
    return [1.0 + 0.01 * (rounds - r) for r in range(rounds + 1)]


def test_adaptive_parts_and_the_mechanism_that_cannot_act():
    def levels(arm, d, s):
        return {"adaptive": 1.0, "mu0": 1.05, "mu1": 1.02}.get(arm, 1.0) + 0.001 * s

    def loss_at(rounds):
        return lambda arm, d, s: [levels(arm, d, s) + x - 1.0 for x in _base(rounds)]

    adaptive, _ = judge_all(loss_at(200), rounds=200)
    assert [p["part"] for p in adaptive["parts"]] == [
        "Synthetic(0,0): adaptive vs mu=0", "Synthetic(0,0): adaptive vs mu=1",
        "Synthetic(0.5,0.5): adaptive vs mu=0", "Synthetic(0.5,0.5): adaptive vs mu=1"]
    assert adaptive["verdict"] == "reproduced" and "cannot act" not in adaptive["verdict_text"]
    # the mean of the last 5 rounds: 1.0 + 0.001 s + 0.01 (0+1+2+3+4) / 5 = 1.02 + 0.001 s for adaptive
    assert adaptive["parts"][0]["per_seed"] == [pytest.approx(100 * ((1.02 + 0.001 * s) / (1.07 + 0.001 * s) - 1))
                                                for s in study.SEEDS]
    # in 10 rounds the heuristic cannot climb from 0 to 1 (11 rounds at the least): those parts cannot act
    adaptive, _ = judge_all(loss_at(10), rounds=10)
    assert [p["verdict"] for p in adaptive["parts"]] == ["reproduced", "inconclusive"] * 2
    assert adaptive["verdict"] == "inconclusive" and adaptive["verdict_text"].endswith(
        "(at most one step of 0.1 a rising round, one per 5 decreasing rounds): inconclusive whatever the interval, "
        "the mechanism cannot act within the budget")
    assert adaptive["deviations"] == [
        "mu is kept >= 0 (the paper does not say what happens at 0)",
        ("10 of the paper's 200 rounds per run (`fedbench study run fedprox_synthetic_others` runs 200 at the paper "
         "budget); no verdict is extrapolated to the paper's budget"), *base.DECLARATION.deviations]
    worse, _ = judge_all(lambda arm, d, s: [x + (1.0 + 0.01 * s if arm == "adaptive" else 0.0) for x in _base(200)],
                               rounds=200)
    assert worse["verdict"] == "not-reproduced"


def test_sampling_parts_every_dataset_and_both_statements():
    rounds = 40

    def wiggle(rising, rise=lambda s: 0.05 + 0.01 * s):
        """The arms in ``rising`` rise by rise(s) - 0.01 at each odd round."""
        def loss(arm, d, s):
            return [b + rise(s) * (r % 2) if arm in rising else b for r, b in enumerate(_base(rounds))]
        return loss

    # mu = 0 under uniform sampling wiggles most, then mu = 0 proportional and mu = 1 uniform, mu = 1 proportional none
    def ordered(arm, d, s):
        rise = {"mu0": 0.09 + 0.002 * s, "prop-mu0": 0.05 + 0.001 * s, "mu1": 0.05 + 0.001 * s, "prop-mu1": 0.0}.get(arm, 0.0)
        return [b + rise * (r % 2) for r, b in enumerate(_base(rounds))]

    _, sampling = judge_all(ordered, rounds=rounds)
    assert len(sampling["parts"]) == 12 and sampling["verdict"] == "reproduced"
    assert sampling["parts"][0]["part"] == "Synthetic-IID, mu=0: uniform - proportional"
    assert sampling["parts"][-1]["part"] == "Synthetic(0.5,0.5), proportional: mu=0 - mu=1"
    assert list(sampling["reproduced"])[1:5] == [f"{a} on synthetic_iid" for a in ("mu0", "prop-mu0", "mu1", "prop-mu1")]
    assert sampling["figure"] == {"path": "studies/fedprox_synthetic_others/fedprox_synthetic_others.png",
                                  "panel": "last three panels: sampling schemes"}
    assert "; Synthetic(0,0): mu0 " in sampling["observed"]
    n_odd = rounds // 2  # each odd round rises by (rise - 0.01) above the falling base
    assert sampling["parts"][0]["per_seed"] == [pytest.approx(n_odd * (0.04 + 0.001 * s)) for s in study.SEEDS]
    _, flat = judge_all(wiggle(set()), rounds=rounds)
    assert flat["verdict"] == "inconclusive"  # no rises anywhere: zero effect, no interval excludes 0
    _, against = judge_all(wiggle({"prop-mu1"}), rounds=rounds)  # the paper's most stable arm wiggles
    verdicts = [p["verdict"] for p in against["parts"]]
    assert verdicts.count("not-reproduced") == 3 * 2 and against["verdict"] == "not-reproduced"


def test_the_test_size_run(study_run):
    ran = study_run("fedprox_synthetic_others")
    assert len(ran.calls) == 2 * (4 * 3 + 2)
    assert {cfg.sampling for cfg, *_ in ran.calls} == {"uniform", "proportional"}
    adaptive, sampling = ran.claims
    assert (adaptive["rounds_run"], adaptive["rounds_paper"], adaptive["fidelity"]) == (3, 200, "smoke-check")
    # in 3 rounds mu cannot climb from 0 to 1: the two parts against mu = 1 are inconclusive whatever their interval
    assert [p["verdict"] for p in adaptive["parts"]][1::2] == ["inconclusive"] * 2
    assert len(sampling["parts"]) == 12 and sampling["rule"] == study.DECLARATION.claim(study.SAMPLING_ID).rule
    book = registry.load()
    assert [registry.status(e, book)["status"] for e in ran.claims] == ["registered"] * 2  # judged, rules unchanged

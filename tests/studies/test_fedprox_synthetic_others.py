"""FedProx Figures 11-12 on the other synthetic sets: the rules are the ones registered before any run, the adaptive-mu
parts (and the ones the heuristic cannot reach), the twelve sampling parts on made-up curves, and the test-size run."""

from __future__ import annotations

import numpy as np
import pytest

from fedbench.claims import registry
from fedbench.studies import fedprox_synthetic_others as study
from fedbench.studies.entries import not_run_entries


def test_the_rules_are_the_registered_ones_word_for_word():
    book = registry.load()
    entries = not_run_entries("fedprox_synthetic_others", "not run", "running it")  # as the report shows them
    for claim, entry in zip(study.DECLARATION.claims, entries, strict=True):
        # adaptive-mu was re-registered under issue 51's statistics after its first result: before_result no longer
        rereg = claim.id == "fedprox/synthetic-0-0-and-0p5-0p5/adaptive-mu"
        assert book[claim.id]["before_result"] is not rereg and book[claim.id]["spec"]["rule"] == claim.rule
        assert registry.status(entry, book)["status"] == "registered", claim.id


def test_the_setting_is_fedprox_synthetics():
    """The copies (a study imports no other study) equal fedprox_synthetic's: its constants, its data and the rounds
    the heuristic needs."""
    from fedbench.studies import fedprox_synthetic as fig3

    for name in ("NUM_DEVICES", "DATA_SEED", "TRAIN_FRACTION", "K", "EPOCHS", "BATCH", "LR", "ADAPTIVE_MARGIN",
                 "INSTABILITY", "ADAPTIVE_RULE"):
        assert getattr(study, name) == getattr(fig3, name), name
    assert study.SAMPLING_RULE == fig3.INSTABILITY_RULE  # the rule of fedprox_synthetic's two sampling claims
    for mu_init, mu in ((0.0, 1.0), (0.0, 0.0), (1.0, 0.0), (0.5, 0.2)):
        assert study.rounds_to_reach(mu_init, mu) == fig3.rounds_to_reach(mu_init, mu)
    assert study.rounds_to_reach(0.0, 1.0) == 11  # ten rises of 0.1, the first round only records the loss
    data, theirs = study._synthetic("synthetic_0p5_0p5"), fig3._synthetic("synthetic_0p5_0p5")
    assert np.array_equal(data.train.x, theirs.train.x) and np.array_equal(data.test.y, theirs.test.y)


def test_runs_and_arms():
    runs = study.declare()
    assert len(runs) == 5 * (4 * 3 + 2)  # the 70 runs: four sampling arms on three sets, adaptive on two
    assert ("adaptive", "synthetic_iid", 0) not in runs and ("adaptive", "synthetic_0p5_0p5", 4) in runs
    adaptive = study.simulation("adaptive", "synthetic_0_0", 1, rounds=study.BUDGETS["paper"])
    assert adaptive.algorithm.mu_init == 0.0 and adaptive.config.rounds == 200
    prop = study.simulation("prop-mu1", "synthetic_iid", 1)
    assert (prop.config.sampling, prop.algorithm.mu, prop.config.rounds) == ("proportional", 1.0, 40)
    assert study.simulation("mu0", "synthetic_iid", 1).config.sampling == "uniform"
    with pytest.raises(ValueError, match="budget 'full'; allowed: pipeline, paper"):
        study.run("unused", budget="full")


def _base(rounds):
    return [1.0 + 0.01 * (rounds - r) for r in range(rounds + 1)]


def test_adaptive_parts_and_the_mechanism_that_cannot_act():
    def levels(arm, d, s):
        return {"adaptive": 1.0, "mu0": 1.05, "mu1": 1.02}.get(arm, 1.0) + 0.001 * s

    def loss_at(rounds):
        return lambda arm, d, s: [levels(arm, d, s) + x - 1.0 for x in _base(rounds)]

    adaptive, _ = study.judge_all(loss_at(200), rounds=200)
    assert [p["part"] for p in adaptive["parts"]] == [
        "Synthetic(0,0): adaptive vs mu=0", "Synthetic(0,0): adaptive vs mu=1",
        "Synthetic(0.5,0.5): adaptive vs mu=0", "Synthetic(0.5,0.5): adaptive vs mu=1"]
    assert adaptive["verdict"] == "reproduced" and not any("cannot act" in n for n in adaptive.get("notes", []))
    # the mean of the last 5 rounds: 1.0 + 0.001 s + 0.01 (0+1+2+3+4) / 5 = 1.02 + 0.001 s for adaptive
    assert adaptive["parts"][0]["per_seed"] == [pytest.approx(100 * ((1.02 + 0.001 * s) / (1.07 + 0.001 * s) - 1))
                                                for s in study.SEEDS]
    # in 10 rounds the heuristic cannot climb from 0 to 1 (11 rounds at the least): those parts cannot act
    adaptive, _ = study.judge_all(loss_at(10), rounds=10)
    assert [p["verdict"] for p in adaptive["parts"]] == ["reproduced", "inconclusive"] * 2
    assert adaptive["verdict"] == "inconclusive" and "cannot act within the budget" in adaptive["notes"][-1]
    worse, _ = study.judge_all(lambda arm, d, s: [x + (1.0 + 0.01 * s if arm == "adaptive" else 0.0) for x in _base(200)],
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

    _, sampling = study.judge_all(ordered, rounds=rounds)
    assert len(sampling["parts"]) == 12 and sampling["verdict"] == "reproduced"
    assert sampling["parts"][0]["part"] == "Synthetic-IID, mu=0: uniform - proportional"
    assert sampling["parts"][-1]["part"] == "Synthetic(0.5,0.5), proportional: mu=0 - mu=1"
    n_odd = rounds // 2  # each odd round rises by (rise - 0.01) above the falling base
    assert sampling["parts"][0]["per_seed"] == [pytest.approx(n_odd * (0.04 + 0.001 * s)) for s in study.SEEDS]
    _, flat = study.judge_all(wiggle(set()), rounds=rounds)
    assert flat["verdict"] == "inconclusive"  # no rises anywhere: zero effect, no interval excludes 0
    _, against = study.judge_all(wiggle({"prop-mu1"}), rounds=rounds)  # the paper's most stable arm wiggles
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

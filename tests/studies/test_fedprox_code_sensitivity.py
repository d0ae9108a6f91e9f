"""The FedProx code-vs-paper sensitivity study: its rule is the headline's, each variant changes one setting, the
rule on made-up curves with exact numbers, and a shortened run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedprox import FedProx
from fedbench.claims.entry import sensitivity_of
from fedbench.claims.magnitude import magnitude_of
from fedbench.config import load_config
from fedbench.study import contract
from fedbench.studies import fedprox_curves as main_curves
from fedbench.studies import fedprox_main_job as main_job
from fedbench.studies import fedprox_code_sensitivity as study

PARAMS = Path(__file__).resolve().parents[2] / "params.yaml"


def test_the_rule_and_readings_are_the_headlines():
    cfg = load_config(PARAMS)
    headline = main_job.judged_on(cfg, main_curves.Curves(pd.DataFrame()), main_job.DECLARATION.claim(study.HEADLINE))  # not-run: its rule only
    assert headline["id"] == study.HEADLINE
    first_sentence = headline["rule"].split(". ")[0]
    assert first_sentence.endswith("reproduced if the 95% interval lies above 0, not-reproduced if it lies below 0")
    # every variant's rule: the sign (issue 32: no project-chosen threshold)
    assert all(c.rule_for() == main_job.GAIN_RULE for c in study.DECLARATION.claims)
    declared = main_job.DECLARATION.claim(study.HEADLINE)  # every variant's rule: the headline's effect and Rule
    for c in study.DECLARATION.claims:
        assert (c.effect, c.rules, c.combination) == (declared.effect, declared.rules, declared.combination)
        assert c.rule.split(". ")[0] == first_sentence
    assert study.READINGS == main_curves.ACCURACY_READINGS and study.PRIMARY == "tail"
    # the main job's settings, which each variant changes in one field
    t = cfg.train
    assert (t.rounds, t.clients_per_round, t.local_epochs, t.batch_size, t.lr, t.sampling, t.straggler_epochs) == \
        (study.ROUNDS, study.K, study.EPOCHS, study.BATCH, study.LR, "uniform", "authors_code")
    assert tuple(t.seeds) == study.DECLARATION.seeds and cfg.algorithms["fedprox_mu1"].hyper == {"mu": study.MU}


def test_each_variant_changes_one_setting_of_the_main_jobs():
    base = dataclasses.asdict(study.simulation("paper-sampling", "fedavg", 3).config) | {"sampling": "uniform"}
    assert (base["straggler_fraction"], base["rounds"], base["cohort_seed"]) == (0.9, 200, None)
    for variant, changed in {"paper-sampling": {"sampling": "proportional"},
                             "paper-straggler-epochs": {"straggler_epochs": "paper"},
                             "code-seeding": {"cohort_seed": 503}}.items():  # seed 3's own stream, 500 + 3
        for arm, algorithm in (("fedavg", FedAvg(lr=0.01)), ("fedprox_mu1", FedProx(lr=0.01, mu=1.0))):
            sim = study.simulation(variant, arm, 3)
            cfg = dataclasses.asdict(sim.config)
            assert {k: v for k, v in cfg.items() if base[k] != v} == changed
            assert sim.algorithm == algorithm and sim.config.seed == 3
    assert len(study.declare()) == 3 * 2 * 5
    with pytest.raises(ValueError, match="variant 'paper'; allowed: paper-sampling, paper-straggler-epochs, code-seeding"):
        study.simulation("paper", "fedavg", 0)


def _curves(gain_of_seed):
    """FedAvg at 50% accuracy every round, FedProx at 50 + gain_of_seed(s) points; falling losses."""
    def curves(arm, s):
        loss = [2.0 - 0.001 * r for r in range(study.ROUNDS + 1)]
        level = 0.5 + (gain_of_seed(s) / 100 if arm == "fedprox_mu1" else 0.0)
        return loss, [level] * (study.ROUNDS + 1)
    return curves


def judge_variant(curves):
    """A variant's entry (the first's) from made-up ``curves`` on the declared seeds, judged as the driver judges it
    (fedbench.study.contract)."""
    claim = study.DECLARATION.claims[0]
    run = contract.StudyRun(study.DECLARATION, "pipeline", study.ROUNDS)
    return contract.entry(run, claim, study.measured(claim, curves, study.DECLARATION.seeds))


def test_rule_on_made_up_curves():
    result = judge_variant(_curves(lambda s: 10.0 + s))
    assert result["effect"]["per_seed"] == [pytest.approx(10.0 + s) for s in study.DECLARATION.seeds]
    assert result["effect"]["estimate"] == pytest.approx(12.0)
    assert result["verdict"] == "reproduced"
    assert [c["reading"] for c in result["sensitivity"] if c["budget"] == 1.0] == \
        ["mean of last 5 rounds", "paper's rule (C.3.2)", "final round", "best round"]
    small = judge_variant(_curves(lambda s: 1.0 + 0.1 * s))  # a real gain of ~1.2 points: the sign holds
    assert small["effect"]["estimate"] == pytest.approx(1.2) and small["verdict"] == "reproduced"
    worse = judge_variant(_curves(lambda s: -1.0 - 0.1 * s))
    assert worse["effect"]["estimate"] == pytest.approx(-1.2) and worse["verdict"] == "not-reproduced"
    noisy = judge_variant(_curves(lambda s: [-6.0, 14.0, -2.0, 16.0, 3.0][s]))
    assert noisy["verdict"] == "inconclusive"


def test_sensitivity_ids_name_their_claim_and_take_its_magnitude():
    cid = f"{study.HEADLINE}/sensitivity-code-seeding"
    assert sensitivity_of(cid) == study.HEADLINE and sensitivity_of(study.HEADLINE) is None
    assert magnitude_of(cid) == magnitude_of(study.HEADLINE) and magnitude_of(cid).kind == "none"


def test_a_run_names_its_data_draw_as_the_declaration_does():
    """One fixed draw: no data seed in the record; a fresh-data block: each run its own, as the declaration pairs
    them (fedbench.study.declaration.StudyDeclaration.data_label), and trains on that draw."""
    assert "data_seed" not in study.simulation("paper-sampling", "fedavg", 3).knobs
    block = study.DECLARATION.on_seeds((11, 12), (21, 22))
    sim = study.simulation("paper-sampling", "fedprox_mu1", 12, declaration=block)
    assert sim.knobs["data_seed"] == 22 and sim.dataset.args[1] == 22

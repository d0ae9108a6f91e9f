"""A paper-scale study runs on a confirmatory block of other seeds (`fedbench claims confirm` passes them to
the driver): it trains on exactly those seeds, its rule names them where the declared rule names its own (where
it does: NAMES_ITS_SEEDS), and the rule's frozen hash (fedbench.claims.registry.frozen_hash, which reads a
mention of a run's own seeds as a placeholder) is the declared rule's, so the confirmation is not refused as a changed
rule. deltafl_iambic, mime_fashion and scaffold_concrete are held to it in their own test files."""

from __future__ import annotations

import dataclasses

import pytest

from fedbench.claims import registry
from fedbench.claims.registry import seeds_text, without_seeds
from fedbench.study import registry as studies
from fedbench.study.contract import drive, seeded
from fedbench.study.record import read_simulations

# the studies whose rules name their judged seeds ("judged on seeds 0-4"); the others' rules name none
NAMES_ITS_SEEDS = ("fedlaavg_fashion", "fedproxvr_fashion", "scaffold_emnist", "scaffold_fashion")


# The paper studies, and the one of each family of studies sharing hooks that is run here on a block (every study
# runs on a block through the one driver, fedbench.study.contract.seeded; the families differ in their hooks: the
# others are held to their rules' words below, without training)
PAPER_STUDIES = ("fedlaavg_fashion", "fedproxvr_fashion", "scaffold_emnist", "scaffold_fashion", "mime_emnist",
                 "mime_emnist_adam", "fedproxvr_mnist", "delta_fl_real", "fedlaavg_cifar10")
RUN_ON_A_BLOCK = ("fedlaavg_fashion", "fedproxvr_fashion", "scaffold_fashion", "mime_emnist", "delta_fl_real")
# run on the block at one round, not their fixture budget's 2 or 3 (what is checked is which seeds the block trains on
# and how its rules name them, not its numbers); delta_fl_real's time is not in its rounds
ONE_ROUND = ("fedproxvr_fashion", "scaffold_fashion")


@pytest.mark.parametrize("name", PAPER_STUDIES)
def test_a_paper_studys_rules_on_a_confirmatory_block_name_the_block(name):
    """Without training: the declaration on a block names it wherever the declared rule names its own seeds."""
    module, block = studies.module(name), (20, 21)
    declared = module.DECLARATION
    on_block = seeded(declared, "fixture", block).declaration
    for claim in declared.claims:
        rule = claim.rule
        if name in NAMES_ITS_SEEDS:
            assert without_seeds(rule, list(declared.seeds)) != rule
        assert on_block.claim(claim.id).rule == without_seeds(rule, list(declared.seeds)).replace(
            "{seeds}", seeds_text(list(block)))


@pytest.mark.parametrize("name", RUN_ON_A_BLOCK)
def test_a_paper_study_on_a_confirmatory_block_names_its_seeds(name, real_root_of, tmp_path, monkeypatch):
    module, block = studies.module(name), (20, 21)
    declared = module.DECLARATION
    if name in ONE_ROUND:
        monkeypatch.setitem(declared.budgets, "fixture", dataclasses.replace(declared.budgets["fixture"], rounds=1))
    entries = drive(module, tmp_path / name, "fixture", block, workers=1, real_root=real_root_of(name))
    judged = [e for e in entries if e["verdict"] != "not-run"]
    assert judged
    if name in ONE_ROUND:
        assert {r["params"]["rounds"] for r in read_simulations(tmp_path / name)} == {1}  # the one round took effect
    for e in judged:
        rule = declared.claim(e["id"]).rule
        assert e["seeds"]["training"] == list(block)
        if name in NAMES_ITS_SEEDS:
            assert without_seeds(rule, list(declared.seeds)) != rule  # the declared rule names its seeds ...
        assert e["rule"] == without_seeds(rule, list(declared.seeds)).replace("{seeds}", seeds_text(list(block)))
        on_declared = {**e, "rule": rule, "seeds": {**e["seeds"], "training": list(declared.seeds)}}
        assert registry.frozen_hash(e) == registry.frozen_hash(on_declared)  # ... and the frozen hash does not see it

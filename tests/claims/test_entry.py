"""A not-run entry ran no rounds (issue 32 item 3: 20 not-run entries carried a rounds_run, and claims.md printed
"100 / 100" for runs that never happened)."""

import pytest

from fedbench.claims.entry import claim, new_entry, not_implemented, not_run


def _planned(rounds_run):
    return new_entry(id="fedprox/mnist/gain", paper="FedProx", where="Fig. 7", claim_text="c",
                     published={"value": None, "unit": "", "scope": "", "statement": ""}, rule="r",
                     scale={"rounds": 100}, deviations=[], figure=None, fidelity="paper-scale", rounds_run=rounds_run,
                     rounds_paper=100, training_seeds=[0, 1], data_seeds=[0])


def test_left_not_run_an_entry_carries_no_rounds_run_and_keeps_its_plan_in_its_scale():
    e = not_run(_planned(100), "not run: missing runs", "running them")
    assert e["verdict"] == "not-run" and e["rounds_run"] is None
    assert e["scale"] == {"rounds": 100} and e["rounds_paper"] == 100


def test_building_a_not_run_entry_with_rounds_run_is_an_error():
    with pytest.raises(ValueError, match=r"^fedprox/mnist/gain: a not-run claim ran no rounds: rounds_run must be "
                                         r"None, got 100 "):
        claim(**_planned(100))
    assert claim(**_planned(None))["rounds_run"] is None


def test_a_claim_planned_as_a_smoke_check_and_left_not_run_stays_one():
    """The labels (smoke-check derived from the planned rounds) and the not-run rule (no rounds_run) together: 10 of
    the paper's 100 rounds is a tenth, a smoke check; left not-run it keeps that label with rounds_run None, so it
    is counted with the smoke checks, not toward a headline, before and after it runs."""
    planned = _planned(10)
    assert planned["fidelity"] == "smoke-check"  # 10 * 10 <= 100
    e = not_run(planned, "not run: missing runs", "running them")
    assert (e["verdict"], e["fidelity"], e["rounds_run"], e["rounds_paper"]) == ("not-run", "smoke-check", None, 100)
    assert not_run(_planned(11), "why", "what")["fidelity"] == "paper-scale"  # 110 > 100: not a smoke check
    with pytest.raises(ValueError, match=r"^fedprox/mnist/gain: fidelity 'smoke-check' with None of the paper's 100 "):
        claim(**(planned | {"verdict": "reproduced", "rounds_run": None, "effect": {}, "direction": {}}))


def test_a_not_implemented_entry_ran_nothing_and_says_what_is_missing():
    """Issue 32, item 4: an entry no command would judge is not-implemented (counted in no coverage figure:
    tests/claims/test_tally.py), with no rounds run and no effect; a judged entry cannot be made one."""
    e = not_implemented(_planned(100), "a study of the mu = 1 arms")
    assert (e["verdict"], e["rounds_run"], e["effect"]) == ("not-implemented", None, None)
    assert e["observed"] == "not implemented: a study of the mu = 1 arms" and e["scale"] == {"rounds": 100}
    with pytest.raises(ValueError, match=r"^fedprox/mnist/gain: only an entry that judged nothing can be "
                                         r"not-implemented, got verdict 'reproduced'"):
        not_implemented(_planned(None) | {"verdict": "reproduced"}, "x")
    with pytest.raises(ValueError, match=r"^fedprox/mnist/gain: a not-implemented claim judged nothing: effect "):
        claim(**(e | {"effect": {"estimate": 1.0}}))

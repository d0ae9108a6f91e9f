"""The one tally (issue 29 item 2): what counts toward a headline, counted over the verdict vocabulary as it stands."""

import json
from pathlib import Path

import pytest

from fedbench.claims import entry as schema
from fedbench.claims.tally import DEFINITION, tally, toward_headline

ROOT = Path(__file__).resolve().parents[2]


def e(cid: str, verdict: str, fidelity: str) -> dict:
    return {"id": cid, "verdict": verdict, "fidelity": fidelity}


FIXTURE = [
    e("a/paper/1", "reproduced", "paper-scale"),
    e("a/paper/2", "reproduced", "paper-scale"),
    e("a/paper/3", "not-reproduced", "paper-scale"),
    e("a/paper/4", "not-run", "paper-scale"),
    e("a/paper/1/sensitivity-code", "reproduced", "paper-scale"),  # a reading: apart, never counted
    e("a/paper/1/sensitivity-sampling", "inconclusive", "paper-scale"),
    e("b/budget/1", "inconclusive", "reduced-budget"),
    e("b/subset/1", "reproduced", "reduced-data"),
    e("c/standin/1", "reproduced", "stand-in"),
    e("c/standin/2", "not-run", "stand-in"),
    e("d/closed-form/1", "reproduced", "analytic"),
]
COUNTED = tuple(v for v in schema.VERDICTS if v != schema.NOT_IMPLEMENTED)  # the verdicts a tally counts


def test_tally_of_a_fixture_has_exact_counts():
    t = tally(FIXTURE)
    assert t.verdicts == COUNTED and t.not_implemented == ()
    zero = dict.fromkeys(COUNTED, 0)
    assert t.by_fidelity == {"paper-scale": zero | {"reproduced": 2, "not-reproduced": 1, "not-run": 1},
                             "reduced-budget": zero | {"inconclusive": 1},
                             "reduced-data": zero | {"reproduced": 1},
                             "reconstructed": zero,
                             "stand-in": zero | {"reproduced": 1, "not-run": 1},
                             "smoke-check": zero,
                             "analytic": zero | {"reproduced": 1}}  # every class a column, zeros too
    assert t.readings == zero | {"reproduced": 1, "inconclusive": 1}
    assert t.headline == zero | {"reproduced": 3, "not-reproduced": 1, "inconclusive": 1, "not-run": 1}
    assert (t.entries, t.claims, t.apart) == (11, 9, ("reconstructed", "stand-in", "smoke-check", "analytic"))
    assert [x["id"] for x in FIXTURE if toward_headline(x)] == ["a/paper/1", "a/paper/2", "a/paper/3", "a/paper/4",
                                                                "b/budget/1", "b/subset/1"]


def test_summary_is_one_sentence_of_the_same_counts(monkeypatch):
    monkeypatch.setattr(schema, "VERDICTS", ("reproduced", "not-reproduced", "inconclusive", "not-run"))
    assert tally(FIXTURE).summary() == (
        "11 entries: 9 claims and 2 sensitivity readings. Toward the headline: 3 reproduced, 1 not-reproduced, "
        "1 inconclusive, 1 not-run (6 claims on the papers' own data). Counted apart: stand-in: 1 reproduced, "
        "1 not-run; analytic: 1 reproduced; sensitivity readings: 1 reproduced, 1 inconclusive.")
    assert DEFINITION.startswith("A headline counts the claims judged on the papers' own data (fidelity paper-scale, "
                                 "reduced-budget or reduced-data); reconstructed, stand-in, smoke-check and analytic claims are counted apart")


def test_a_new_verdict_is_tallied_apart_with_no_change_to_the_tally(monkeypatch):
    """A verdict added to VERDICTS (`direction-only`: a size claim whose direction holds and whose size does not;
    and a made-up one at the end) is tallied in its own column, in VERDICTS' order, never among the reproduced."""
    assert "direction-only" in schema.VERDICTS
    verdicts = (*schema.VERDICTS, "made-up")
    monkeypatch.setattr(schema, "VERDICTS", verdicts)
    counted = (*COUNTED, "made-up")
    t = tally([*FIXTURE, e("a/paper/5", "direction-only", "paper-scale"), e("c/standin/3", "direction-only",
                                                                          "stand-in"), e("c/standin/4", "made-up",
                                                                                         "stand-in")])
    assert t.verdicts == counted
    assert t.headline["direction-only"] == 1 and t.headline["reproduced"] == 3 and t.headline["made-up"] == 0
    assert t.by_fidelity["stand-in"]["direction-only"] == 1 and t.by_fidelity["stand-in"]["reproduced"] == 1
    assert t.headline_text() == ("3 reproduced, 1 direction-only, 1 not-reproduced, 1 inconclusive, 1 not-run, "
                                 "0 made-up (7 claims on the papers' own data)")
    assert t.apart_text().startswith("stand-in: 1 reproduced, 1 direction-only, 1 not-run, 1 made-up; ")
    assert t.metrics()["headline"]["direction-only"] == 1 and t.metrics()["by_fidelity"]["stand-in"]["made-up"] == 1


def test_an_unknown_verdict_or_fidelity_is_one_line_naming_the_entry():
    with pytest.raises(ValueError, match=r"^x/1: verdict 'passed' is not one of reproduced, direction-only, not-reproduced, "):
        tally([e("x/1", "passed", "paper-scale")])
    with pytest.raises(ValueError, match=r"^x/2: fidelity 'full' is not one of paper-scale, "):
        tally([e("x/2", "reproduced", "full")])


def test_the_readme_quotes_the_tally_of_the_committed_claims():
    """The README's counts are the tally's summary of the committed reports/claims.json, word for word. After the
    report is regenerated, paste the sentence this test prints into README.md ("Verdicts: ...")."""
    t = tally(json.loads((ROOT / "reports" / "claims.json").read_text())["claims"])
    readme = " ".join((ROOT / "README.md").read_text().split())  # its line breaks as spaces
    expected = f"On the committed `reports/claims.json`: {t.summary()}"
    assert expected in readme, f"README.md should read: {expected}"


def test_a_confirmatory_verdict_is_counted_in_place_of_the_exploratory_one():
    """Issue 32, item 1: an entry whose registration carries a (valid) confirmatory verdict is counted by it; the
    summary says how many were; with none, the summary is the sentence it always was."""
    confirmed = e("a/paper/3", "not-reproduced", "paper-scale") | {
        "registration": {"confirmatory": {"verdict": "inconclusive", "seeds": [1000, 1001]}}}
    reading = e("a/paper/1/sensitivity-code", "reproduced", "paper-scale") | {
        "registration": {"confirmatory": {"verdict": "not-reproduced", "seeds": [1000, 1001]}}}
    void = e("c/standin/1", "reproduced", "stand-in") | {"registration": {"confirmatory": None, "confirmation": "void"}}
    fixture = [x for x in FIXTURE if x["id"] not in ("a/paper/3", "a/paper/1/sensitivity-code", "c/standin/1")]
    t = tally([*fixture, confirmed, reading, void])
    before = tally(FIXTURE)
    assert t.headline == before.headline | {"not-reproduced": 0, "inconclusive": before.headline["inconclusive"] + 1}
    assert t.readings == before.readings | {"reproduced": 0, "not-reproduced": 1}
    assert t.by_fidelity["stand-in"] == before.by_fidelity["stand-in"]  # void: its exploratory verdict
    assert (t.confirmed, t.confirmed_headline) == (2, 1)
    assert t.summary() == (f"11 entries: 9 claims and 2 sensitivity readings. Toward the headline: {t.headline_text()}. "
                           f"Counted apart: {t.apart_text()}. Counted by a confirmatory verdict (judged again by its frozen rule on fresh seeds): 2 of the 11 entries, 1 "
        "of them toward the headline; every other entry by its exploratory verdict.")
    assert "confirmatory" not in before.summary() and "confirmatory verdict" in DEFINITION


NOT_BUILT = [e("a/paper/9", "not-implemented", "paper-scale"), e("c/standin/9", "not-implemented", "stand-in"),
             e("a/paper/1/sensitivity-x", "not-implemented", "paper-scale")]


def test_a_not_implemented_entry_is_counted_in_no_coverage_figure():
    """An entry no command would judge (issue 32, item 4) is listed by id and counted in no figure: the fixture's
    counts are exactly those without it, whatever its fidelity, a reading's id included."""
    without, t = tally(FIXTURE), tally([*FIXTURE, *NOT_BUILT])
    assert (t.by_fidelity, t.readings, t.headline, t.claims) == (without.by_fidelity, without.readings,
                                                                   without.headline, without.claims)
    assert t.not_implemented == ("a/paper/9", "c/standin/9", "a/paper/1/sensitivity-x")
    assert "not-implemented" not in t.verdicts and "not-implemented" not in t.headline_text()
    assert t.entries == 14 and t.metrics()["not_implemented"] == 3 and t.metrics()["claims"] == 9
    assert not any(toward_headline(x) for x in NOT_BUILT)
    assert t.summary() == (
        "14 entries: 9 claims, 2 sensitivity readings and 3 not implemented (no command would judge them; counted "
        "in no figure here). Toward the headline: 3 reproduced, 0 direction-only, 1 not-reproduced, 1 inconclusive, "
        "1 not-run (6 claims on the papers' own data). Counted apart: stand-in: 1 reproduced, 1 not-run; analytic: "
        "1 reproduced; sensitivity readings: 1 reproduced, 1 inconclusive.")
    assert DEFINITION.endswith("an entry that no command would judge yet is listed as not implemented and counted "
                               "in no coverage figure")


def test_metrics_carry_the_confirmed_counts_and_the_exploratory_headline_beside_the_counted_one():
    """Issue 51 item 6: metrics.json says how many entries a confirmatory verdict counts (and of them toward the
    headline) and the headline by exploratory verdicts beside the counted one; the counted effect is the
    confirmatory run's."""
    from fedbench.claims.tally import counted_effect

    confirmed = e("a/paper/3", "not-reproduced", "paper-scale") | {
        "effect": {"estimate": -2.0, "ci95": [-3.0, -1.0], "unit": "points"},
        "registration": {"confirmatory": {"verdict": "inconclusive", "seeds": [1000, 1001], "estimate": -0.5,
                                          "ci95": [-1.5, 0.5], "unit": "points"}}}
    fixture = [x for x in FIXTURE if x["id"] != "a/paper/3"] + [confirmed]
    m = tally(fixture).metrics()
    assert m["confirmed"] == {"entries": 1, "headline": 1}
    assert m["headline"] == dict.fromkeys(COUNTED, 0) | {"reproduced": 3, "inconclusive": 2, "not-run": 1}
    assert m["headline_exploratory"] == dict.fromkeys(COUNTED, 0) | {"reproduced": 3, "not-reproduced": 1,
                                                                       "inconclusive": 1, "not-run": 1}
    assert counted_effect(confirmed) == {"estimate": -0.5, "ci95": [-1.5, 0.5], "unit": "points", "confirmatory": True}
    assert counted_effect(FIXTURE[0]) is None and tally(FIXTURE).metrics()["confirmed"] == {"entries": 0, "headline": 0}

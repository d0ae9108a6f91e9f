"""Verdict rules: every branch of every rule kind, how parts combine, the budget rule, what would change a verdict,
the sensitivity cells of judge() and the fidelity labels."""

import pytest

from fedbench.claims.verdict import Part, Rule, combine, fidelity, inconclusive_parts, judge


def _ci(lo, hi, coverage=0.95):
    return {"estimate": (lo + hi) / 2, "ci95": [lo, hi], "test": "paired t-test, two-sided", "coverage": coverage}


@pytest.mark.parametrize("rule,ci,verdict", [
    (Rule("greater", 0.0), (0.1, 2.0), "reproduced"),
    (Rule("greater", 0.0), (-0.1, 2.0), "inconclusive"),
    (Rule("greater", 0.0), (-2.0, -0.1), "not-reproduced"),
    (Rule("greater", 5.0), (5.5, 8.0), "reproduced"),  # a threshold the paper states: the interval above it
    (Rule("greater", 5.0), (1.0, 8.0), "inconclusive"),  # above 0 but not above 5: the size alone is not enough
    (Rule("greater", 5.0), (1.0, 4.0), "not-reproduced"),  # real, but below the stated 5
    (Rule("greater", 5.0), (-1.0, 8.0), "inconclusive"),
    (Rule("at_least", 1.0), (-0.5, 3.0), "reproduced"),
    (Rule("at_least", 1.0), (-3.0, -1.5), "not-reproduced"),
    (Rule("at_least", 1.0), (-3.0, 0.0), "inconclusive"),
    (Rule("at_most", 10.0), (2.0, 9.0), "reproduced"),
    (Rule("at_most", 10.0), (11.0, 20.0), "not-reproduced"),
    (Rule("at_most", 10.0), (5.0, 12.0), "inconclusive"),
    (Rule("within", 25.0), (-10.0, 20.0), "reproduced"),
    (Rule("within", 25.0), (26.0, 40.0), "not-reproduced"),
    (Rule("within", 25.0), (-40.0, -30.0), "not-reproduced"),
    (Rule("within", 25.0), (-30.0, 10.0), "inconclusive"),
])
def test_rule_branches(rule, ci, verdict):
    assert rule.verdict(_ci(*ci)) == verdict


def test_no_interval_is_inconclusive_and_bad_rules_fail():
    assert Rule("greater").verdict({"estimate": 1.0, "ci95": None}) == "inconclusive"
    with pytest.raises(ValueError, match="rule kind"):
        Rule("bigger")
    with pytest.raises(ValueError, match="threshold >= 0"):
        Rule("within", -1.0)


def test_combine():
    assert combine(["reproduced", "reproduced"]) == "reproduced"
    assert combine(["reproduced", "inconclusive"]) == "inconclusive"
    assert combine(["inconclusive", "not-reproduced", "reproduced"]) == "not-reproduced"
    assert combine([]) == "not-run"


def test_inconclusive_parts_recombines_the_verdict_and_names_the_deciding_part():
    parts = [{"part": "a", "verdict": "reproduced", "rule": "r", "mean": 1.0},
             {"part": "b", "verdict": "reproduced", "rule": "r", "mean": 2.0}]
    result = {"parts": parts, "verdict": "reproduced", "effect": {"part": "a", "mean": 1.0}, "would_change": "old"}
    assert inconclusive_parts(result, [], "why", "new") is result
    out = inconclusive_parts(result, ["b"], "why", "new")
    assert [p["verdict"] for p in out["parts"]] == ["reproduced", "inconclusive"]
    assert out["verdict"] == "inconclusive" and out["effect"] == {"part": "b", "mean": 2.0}
    assert out["notes"] == ["why"] and out["would_change"] == "new"
    failed = result | {"parts": [parts[0] | {"verdict": "not-reproduced"}, parts[1]], "verdict": "not-reproduced"}
    kept = inconclusive_parts(failed, ["b"], "why", "new")  # a not-reproduced part still decides: nothing else moves
    assert kept["verdict"] == "not-reproduced" and kept["effect"] == failed["effect"] and kept["would_change"] == "old"


def test_would_change_names_the_bound_and_its_value():
    r = Rule("greater", 0.0, "points")
    assert r.would_change(_ci(1.0, 3.0), "reproduced") == (
        "inconclusive if the interval's low end fell to 0 or below (now +1.00 points)")
    assert "reproduced if the interval's low end rose above 0 (now -1.00 points)" in r.would_change(
        _ci(-1.0, 3.0), "inconclusive")
    assert Rule("at_most", 10.0, "%").would_change(_ci(11.0, 20.0), "not-reproduced") == (
        "inconclusive if the interval's low end fell to +10.0 % or below (now +11.0 %)")
    assert Rule("greater", 5.0, "points").would_change(_ci(6.0, 9.0), "reproduced") == (
        "inconclusive if the interval's low end fell to +5.00 points or below (now +6.00 points)")
    det = {"estimate": 0.5, "ci95": [0.5, 0.5], "test": "none (deterministic: no seed randomness, one run per arm)"}
    assert Rule("at_most", 1.0).would_change(det, "reproduced") == (
        "not-reproduced if the value crossed +1.00 (now +0.500; deterministic)")


def _judge(values_at, kind="greater", threshold=0.0, paper_budget=1.0, readings=("tail", "final")):
    """judge() of one part whose per-seed values come from values_at[(reading, budget)]."""
    return judge([Part("p", Rule(kind, threshold, "u"))], lambda r, b: [values_at[(r, b)]], "tail", readings,
                 paper_budget=paper_budget)


def test_judge_effect_and_sensitivity_cells():
    v = {("tail", 1.0): [1.0, 2.0, 3.0, 4.0, 5.0], ("final", 1.0): [-1.0, 2.0, 3.0, -4.0, 5.0],
         ("tail", 0.25): [-1.0, -2.0, -3.0, -4.0, -5.0], ("tail", 0.5): [0.5, 1.0, 1.5, 2.0, 2.5]}
    out = _judge(v)
    assert out["verdict"] == "reproduced" and out["effect"]["estimate"] == 3.0 and out["effect"]["part"] == "p"
    cells = {(c["reading"], c["budget"]): c for c in out["sensitivity"]}
    assert [c["verdict"] for c in out["sensitivity"]] == ["reproduced", "inconclusive", "not-reproduced", "reproduced"]
    assert cells[("tail", 1.0)]["primary"] and cells[("tail", 0.25)]["estimate"] == -3.0
    assert out["budget_note"] is None


def _moving(at_half, at_full):
    return {("tail", 1.0): [at_full + d for d in (0.0, -0.1, 0.1, -0.2, 0.2)],
            ("tail", 0.5): [at_half + d for d in (0.0, -0.1, 0.1, -0.2, 0.2)],
            ("tail", 0.25): [at_half] * 5, ("final", 1.0): [at_full] * 5}


def test_budget_rule_extrapolates_the_trend_to_the_papers_budget():
    # -3 at 50% of the rounds, -1 at 100%: +2 per doubling; 5x the rounds is 2.32 more doublings -> +3.64 > 0
    capped = _judge(_moving(-3.0, -1.0), paper_budget=5.0)
    assert capped["verdict"] == "inconclusive" and "budget-limited" in capped["budget_note"]
    assert "would reach +3.64 u at the paper's budget" in capped["budget_note"]
    assert capped["sensitivity"][0]["verdict"] == "inconclusive"
    assert _judge(_moving(-3.0, -1.0))["verdict"] == "not-reproduced"  # at the paper's budget: no rule to apply
    # the same pace, but the paper's budget is only 1.25x the rounds run: -1 + 0.32 x 2 = -0.36 < 0 stays refuted
    assert _judge(_moving(-3.0, -1.0), paper_budget=1.25)["verdict"] == "not-reproduced"
    # a small drift toward the paper cannot reach it: 56.5 -> 55.6 with an at_most 10 rule, 5x the rounds
    drift = _judge(_moving(56.5, 55.6), "at_most", 10.0, paper_budget=5.0, readings=())
    assert drift["verdict"] == "not-reproduced" and drift["budget_note"] is None
    assert _judge(_moving(-1.0, -3.0), paper_budget=5.0)["verdict"] == "not-reproduced"  # moving away
    # at_most: 21 -> 12.5 is -8.5 per doubling, 12.5 - 2.32 x 8.5 < 10
    assert _judge(_moving(21.0, 12.5), "at_most", 10.0, paper_budget=5.0, readings=())["verdict"] == "inconclusive"


def test_real_but_small_effect_is_noted():
    v = {("tail", 1.0): [1.0, 1.1, 0.9, 1.2, 1.0], ("tail", 0.5): [1.0] * 5, ("tail", 0.25): [1.0] * 5}
    out = _judge(v, threshold=5.0, readings=())
    assert out["verdict"] == "not-reproduced" and "below the +5.00 u the paper states" in out["notes"][0]


def test_deciding_part_is_the_failing_one_or_the_closest_call():
    parts = [Part("a", Rule("greater")), Part("b", Rule("greater")), Part("c", Rule("greater"))]
    vals = {"a": [5.0, 5.1, 4.9], "b": [0.9, 1.0, 1.1], "c": [-3.0, -2.9, -3.1]}
    out = judge(parts, lambda r, b: [vals["a"], vals["b"], vals["c"]], "x", budgets=(1.0,))
    assert out["verdict"] == "not-reproduced" and out["effect"]["part"] == "c"
    vals["c"] = [8.0, 8.1, 7.9]
    out = judge(parts, lambda r, b: [vals["a"], vals["b"], vals["c"]], "x", budgets=(1.0,))
    assert out["verdict"] == "reproduced" and out["effect"]["part"] == "b"  # fewest half-widths above 0
    assert out["would_change"].startswith("b: inconclusive if") and "every other part" in out["would_change"]


def test_fidelity_labels():
    assert fidelity("paper", 40, 200) == "reduced-budget"  # fewer rounds, more than a tenth
    assert fidelity("paper", 200, 200) == "paper-scale"
    assert fidelity("paper", 200, 200, 5) == "paper-scale"
    assert fidelity("paper", 200, 200, 3) == "reduced-budget"  # fewer seeds than FULL_SEEDS
    assert fidelity("paper", 200, 200, 0) == "paper-scale"  # deterministic: no seeds to count
    assert fidelity("reduced-data", 100, 100, 5) == "reduced-data"
    assert fidelity("paper", 300, None) == "paper-scale"  # the paper gives no budget
    assert fidelity("stand-in", 600, 70000) == "smoke-check"  # at most a tenth of the paper's rounds
    assert fidelity("analytic", 200, None) == "analytic"
    with pytest.raises(ValueError, match="setup"):
        fidelity("real", 1, 1)


def test_a_rules_words_are_generated_from_its_data():
    from fedbench.claims.verdict import rule_text

    loss, margin = Rule("greater", 0.0, "training loss"), Rule("within", 25.0, "%")
    assert rule_text("per seed, effect = A - B", [("", loss)]) == (
        "per seed, effect = A - B; reproduced if the 95% interval lies above 0, not-reproduced if it lies below 0")
    assert rule_text("per seed and level, effect = A - B", [("each level", loss), ("IID", margin)], "every",
                     "Registered before any run") == (
        "per seed and level, effect = A - B; each level: reproduced if the 95% interval lies above 0, not-reproduced "
        "if it lies below 0; IID: reproduced if the 95% interval lies within +-25.0 %, not-reproduced if it lies "
        "wholly outside; the claim: reproduced if every part is, not-reproduced if one is, inconclusive otherwise. "
        "Registered before any run")
    assert rule_text("e", [("each panel", loss)], "often").endswith(
        "; the claim: 'often': reproduced if some part is reproduced and none is not-reproduced, not-reproduced if "
        "every part is, inconclusive otherwise")
    for bad, message in (({"effect": ""}, "needs its effect"), ({"rules": []}, "needs its effect"),
                         ({"combination": "most"}, "combination 'most'; allowed: every, often, generally")):
        with pytest.raises(ValueError, match=message):
            rule_text(**({"effect": "e", "rules": [("", loss)], "combination": "every"} | bad))


@pytest.mark.parametrize("verdicts, every, often, generally", [
    (["reproduced", "reproduced"], "reproduced", "reproduced", "reproduced"),
    (["reproduced", "inconclusive"], "inconclusive", "reproduced", "inconclusive"),
    (["reproduced", "not-reproduced"], "not-reproduced", "inconclusive", "inconclusive"),
    (["not-reproduced", "not-reproduced"], "not-reproduced", "not-reproduced", "not-reproduced"),
    (["inconclusive", "not-reproduced"], "not-reproduced", "inconclusive", "inconclusive"),
    (["inconclusive", "inconclusive"], "inconclusive", "inconclusive", "inconclusive"),
    ([], "not-run", "not-run", "not-run"),
])
def test_each_combination_does_what_its_words_say(verdicts, every, often, generally):
    from fedbench.claims.verdict import COMBINES

    assert [COMBINES[name][0](verdicts) for name in ("every", "often", "generally")] == [every, often, generally]


def test_an_interval_below_the_rules_level_cannot_decide():
    """Issue 51, item 3: beta-tau-effect passed a "95% interval" rule on an order-statistic interval of 93.75%."""
    r = Rule("at_most", 0.0, "Spearman correlation")
    five = {"estimate": -1.0, "ci95": [-1.0, -1.0], "test": "sign test, two-sided", "coverage": 0.9375,
            "per_seed": [-1.0] * 5}
    assert r.verdict(five) == "inconclusive" and r.side(-1.0, -1.0) == "reproduced"
    assert r.would_change(five, "inconclusive").startswith("the interval covers less than the rule's level: more "
                                                           "seeds are needed: its 93.75% coverage is below the rule's 95%")
    assert r.verdict(five | {"coverage": 1 - 2 / 64}) == "reproduced"  # 6 seeds: 96.9%
    assert Rule("at_most", 0.0, level=0.9).verdict(five) == "reproduced"  # a rule stated at 90% is met
    assert r.verdict({"ci95": [-2.0, -1.0], "test": "paired t-test, two-sided"}) == "inconclusive"  # no coverage
    with pytest.raises(ValueError, match="level"):
        Rule("greater", level=0.3)


def test_five_seeds_of_five_of_six_cases_are_inconclusive():
    """fedprox/synthetic/mu-increases-accuracy with the seed as the unit: every seed 5 of 6 -> sign test p = 0.0625."""
    from fedbench.claims.stats import Share

    rule = Rule("greater", 0.0, "% of cases", share=Share(cases=6, minus=50.0))
    out = judge([Part("share", rule)], lambda r, b: [[100 * 5 / 6 - 50] * 5], "tail", budgets=(1.0,))
    assert out["verdict"] == "inconclusive" and out["effect"]["p_value"] == 0.0625
    assert out["notes"] == ["share: the interval covers less than the rule's level: more seeds are needed (its interval "
                            "covers 93.75%, the rule is stated at 95%; it would read reproduced)"]
    assert out["effect"]["p_rule"] == 0.0625 and out["effect"]["coverage"] == 0.9375
    six = judge([Part("share", rule)], lambda r, b: [[100 * 5 / 6 - 50] * 6], "tail", budgets=(1.0,))
    assert six["verdict"] == "reproduced" and six["effect"]["p_rule"] == 0.03125  # 6 of 6 above 0: 2 / 2^6


def test_p_rule_is_the_test_against_the_edge_the_verdict_crossed():
    from scipy import stats

    e = {"per_seed": [1.0, 2.0, 3.0, 4.0, 5.0], "test": "paired t-test, two-sided"}
    se = (2.5 ** 0.5) / 5 ** 0.5
    assert Rule("greater", 0.0).p_value(e) == pytest.approx(2 * stats.t.sf(3 / se, 4))
    assert Rule("greater", 1.0).p_value(e) == pytest.approx(2 * stats.t.sf(2 / se, 4))
    assert Rule("at_least", 1.0).p_value(e) == pytest.approx(2 * stats.t.sf(4 / se, 4))  # the edge is -1
    # within +-5: the estimate 3 is inside; the larger of the two one-sided tests (against +5), doubled
    assert Rule("within", 5.0).p_value(e) == pytest.approx(2 * stats.t.sf(2 / se, 4))
    assert Rule("within", 2.0).p_value(e) == pytest.approx(2 * stats.t.sf(1 / se, 4))  # outside: the nearer edge
    signs = {"per_seed": [1.0, 2.0, float("inf"), 4.0, 5.0], "test": "sign test, two-sided"}
    assert Rule("greater", 0.0).p_value(signs) == 0.0625 and Rule("greater", 3.0).p_value(signs) == 1.0
    assert Rule("greater").p_value({"per_seed": [0.5], "test": "none (deterministic: ...)"}) is None


def test_a_threshold_this_project_chose_is_judged_beside_and_counted_without():
    """Issue 51, item 4: robust-to-stragglers' 10% is no number of the paper's."""
    chosen = Rule("at_most", 10.0, "% loss increase", chosen=True)
    assert chosen.counted() == Rule("at_most", 0.0, "% loss increase")
    assert chosen.text() == ("reproduced if the 95% interval lies below 0 % loss increase, not-reproduced if it lies "
                             "above it (counted: without a threshold; this project's threshold, which the paper does "
                             "not state, is judged beside it and not counted: reproduced if the 95% interval lies "
                             "below +10.0 % loss increase, not-reproduced if it lies above it)")
    out = judge([Part("90%", chosen)], lambda r, b: [[2.0, 3.0, 4.0, 3.0, 2.5]], "tail", budgets=(1.0,))
    assert out["verdict"] == "not-reproduced"  # an increase above 0 is shown; below 10% too, but 10% is ours
    cell = next(c for c in out["sensitivity"] if c["reading"] == "with this project's thresholds")
    assert cell["verdict"] == "reproduced" and "not counted): reproduced, against not-reproduced" in out["notes"][0]
    similar = Rule("within", 25.0, "%", chosen=True).counted()  # without a margin equivalence cannot be shown
    assert similar.verdict(_ci(-3.0, 4.0)) == "inconclusive" and similar.verdict(_ci(1.0, 4.0)) == "not-reproduced"
    assert similar.verdict(_ci(-0.1, 0.1)) == "inconclusive"
    with pytest.raises(ValueError, match="chosen"):
        Rule("greater", 0.0, chosen=True)


def test_claim_p_and_the_holm_family():
    from fedbench.claims.verdict import claim_p, combination_of, holm_family

    parts = [{"verdict": "reproduced", "p_rule": 0.01}, {"verdict": "reproduced", "p_rule": 0.03}]
    assert claim_p(parts, "reproduced") == 0.03  # every part must hold: the largest
    assert claim_p(parts, "reproduced", "often") == pytest.approx(0.02)  # one of two suffices: 2 x the smallest
    refuted = [{"verdict": "not-reproduced", "p_rule": 0.02}, {"verdict": "reproduced", "p_rule": 0.01}]
    assert claim_p(refuted, "not-reproduced") == pytest.approx(0.04)  # one part refutes: 2 x 0.02
    assert claim_p(parts, "inconclusive") is None and claim_p([{"verdict": "reproduced"}], "reproduced") is None
    assert claim_p([{"verdict": "reproduced", "p_rule": None}], "reproduced") == 0.0  # deterministic: exact
    assert combination_of("x; the claim: 'often': reproduced if some part is reproduced and none is not-reproduced, "
                          "not-reproduced if every part is, inconclusive otherwise") == "often"
    assert combination_of("reproduced if the 95% interval lies above 0") == "every"
    rows = holm_family([{"id": "a", "verdict": "reproduced", "p": 0.01},
                        {"id": "b", "verdict": "reproduced", "p": 0.02},
                        {"id": "c", "verdict": "inconclusive", "p": None},
                        {"id": "d", "verdict": "not-reproduced", "p": 0.001},
                        {"id": "e", "verdict": "reproduced", "p": None}])
    # m = 5, read None as 1: sorted 0.001 (5x), 0.01 (4x), 0.02 (3x), 1, 1 -> 0.005, 0.04, 0.06, 1, 1
    assert [r["p_holm"] for r in rows] == [0.04, 0.06, None, 0.005, None] and rows[0]["family"] == 5
    assert [r["holm_verdict"] for r in rows] == ["reproduced", "inconclusive", "inconclusive", "not-reproduced",
                                                 "no p-value recorded"]


def test_holm_headline_reads_each_headline_entrys_counted_verdict():
    """The function the report renders (issue 51, item 3): the headline entries only (a stand-in and a sensitivity
    reading are left out), each by its counted verdict: the confirmatory record's p_claim where the registration
    carries a counted confirmation, else claim_p of the exploratory parts."""
    from fedbench.claims.verdict import holm_headline

    def entry(cid, verdict, fidelity="paper-scale", parts=(), registration=None):
        return {"id": cid, "verdict": verdict, "fidelity": fidelity, "rule": "r", "parts": list(parts),
                "registration": registration}

    rows = holm_headline([
        entry("a/1", "reproduced", parts=[{"verdict": "reproduced", "p_rule": 0.004}]),
        entry("a/2", "inconclusive", registration={"confirmatory": {"verdict": "reproduced", "p_claim": 0.02}}),
        entry("a/3", "not-reproduced", parts=[{"verdict": "not-reproduced", "p_rule": 0.03}]),
        entry("s/1", "reproduced", fidelity="stand-in", parts=[{"verdict": "reproduced", "p_rule": 0.0001}]),
        entry("a/1/sensitivity-x", "reproduced", parts=[{"verdict": "reproduced", "p_rule": 0.0001}]),
    ])
    # m = 3: 0.004 x 3 = 0.012, 0.02 x 2 = 0.04, 0.03 x 1 -> 0.04
    assert [(r["id"], r["source"], r["p_holm"], r["holm_verdict"]) for r in rows] == [
        ("a/1", "exploratory", 0.012, "reproduced"), ("a/2", "confirmatory", 0.04, "reproduced"),
        ("a/3", "exploratory", 0.04, "not-reproduced")]
    assert {r["family"] for r in rows} == {3}


def test_a_fixed_part_joins_the_seeded_verdict_and_decides_only_where_it_changes_it():
    """fedbench.claims.verdict.Fixed: one deterministic value judged beside a claim's seeded parts, at every reading
    and budget; the effect and what would change the verdict are its own only where it changes the verdict."""
    from fedbench.claims.verdict import Fixed

    seeded = judge([Part("gain", Rule("greater", 0.0, "points"))], lambda r, b: [[1.0, 2.0, 3.0, 2.5, 1.5]], "final",
                   budgets=(0.5, 1.0))
    assert seeded["verdict"] == "reproduced"
    holds = Fixed(Part("chosen step", Rule("at_most", 1.0, "")), 0.5).joined(seeded)
    assert holds["verdict"] == "reproduced" and holds["effect"] == seeded["effect"]
    assert [p["part"] for p in holds["parts"]] == ["gain", "chosen step"] and holds["parts"][1]["verdict"] == "reproduced"
    fails = Fixed(Part("chosen step", Rule("at_most", 1.0, "")), 2.0, missing="a selection").joined(seeded)
    assert fails["verdict"] == "not-reproduced" and fails["effect"]["part"] == "chosen step"
    assert fails["effect"]["estimate"] == 2.0 and fails["would_change"].startswith("chosen step: ")
    assert [c["verdict"] for c in fails["sensitivity"]] == ["not-reproduced"] * len(seeded["sensitivity"])
    none = Fixed(Part("chosen step", Rule("at_most", 1.0, "")), None, missing="a selection that chose a step").joined(
        seeded)
    assert none["verdict"] == "inconclusive" and none["would_change"] == "chosen step: a selection that chose a step"

"""Direction and magnitude judged apart (fedbench.claims.magnitude): the default (an equivalence test: the 95%
interval inside published +- half of it), a share, a named part, size-testing parts, no magnitude part, and the verdict convention."""

import pytest

from fedbench.claims.entry import VERDICTS, judged, new_entry
from fedbench.claims.magnitude import MAGNITUDES, Magnitude, size_verdict, split

PUB = {"value": 22.0, "unit": "accuracy points", "scope": "s", "statement": "t"}


def _part(label, est, lo, hi, verdict, rule="reproduced if the 95% interval lies above 0"):
    return {"part": label, "rule": rule, "verdict": verdict, "estimate": est, "ci95": [lo, hi], "unit": "x",
            "test": "paired t-test, two-sided", "coverage": 0.95}


def _ci(lo, hi, coverage=0.95):
    return {"ci95": [lo, hi], "test": "paired t-test, two-sided", "coverage": coverage}


def test_default_is_an_equivalence_test_within_half_the_published_value():
    m = Magnitude()
    assert m.margin == 0.5 and m.band(22.0) == (11.0, 33.0)
    assert m.verdict(22.0, _ci(12.0, 30.0)) == "reproduced"  # inside [11, 33]: the size is shown
    assert m.verdict(22.0, _ci(9.0, 30.0)) == "inconclusive"  # contains 22, but too wide to tell (was reproduced)
    assert m.verdict(22.0, _ci(-40.0, 80.0)) == "inconclusive"  # a wide interval contains anything: it shows nothing
    assert m.verdict(22.0, _ci(0.93, 17.8)) == "inconclusive"  # +22 excluded but the band's edge +11 is not
    assert m.verdict(22.0, _ci(0.93, 10.9)) == "not-reproduced"  # wholly below the band
    assert m.verdict(22.0, _ci(33.5, 40.0)) == "not-reproduced"  # wholly above: another size
    assert m.verdict(22.0, _ci(11.0, 20.0)) == "inconclusive"  # on the edge: not inside
    assert m.verdict(-4.0, _ci(-5.0, -3.0)) == "reproduced"  # a negative published value: the band [-6, -2]
    assert m.verdict(22.0, {"ci95": None}) == "inconclusive"
    assert m.verdict(22.0, _ci(20.0, 24.0, coverage=0.9375)) == "inconclusive"  # below the 95% it is stated at
    assert m.text(22.0, "points") == (
        "equivalence: reproduced if the 95% interval lies inside the published +22.0 points +- 0.5 x 22.0 "
        "([+11.0, +33.0] points), not-reproduced if it lies wholly outside it, inconclusive otherwise (the data "
        "cannot tell)")
    with pytest.raises(ValueError, match="margin"):
        Magnitude("share", share=0.5, margin=0.5)
    with pytest.raises(ValueError, match="margin"):
        Magnitude(margin=0.0)


def test_share_of_the_published_value():
    m = Magnitude("share", share=0.5)
    assert m.verdict(4.0, _ci(2.0, 9.0)) == "reproduced"  # low end reaches 2 = 0.5 x 4
    assert m.verdict(4.0, _ci(1.9, 9.0)) == "inconclusive"
    assert m.verdict(4.0, _ci(0.1, 1.99)) == "not-reproduced"
    assert m.verdict(-4.0, _ci(-9.0, -2.0)) == "reproduced"  # the paper's side is negative
    assert m.verdict(-4.0, _ci(-1.5, 0.5)) == "not-reproduced"
    with pytest.raises(ValueError, match="share"):
        Magnitude("share")
    with pytest.raises(ValueError, match="reason"):
        Magnitude("none")


def test_a_claim_that_states_a_number_is_judged_on_it():
    gain = _part("90% stragglers", 9.37, 0.93, 17.8, "reproduced")
    d, m, v = split("x/states-22", PUB, "reproduced", gain, [gain])  # the default magnitude part: a size claim
    assert (d["verdict"], m["verdict"], v) == ("reproduced", "inconclusive", "direction-only")  # reaches over +11
    assert m["about_size"] is True
    assert d["rule"] == "the claim's registered rule: reproduced if the 95% interval lies above 0"
    assert (m["published"], m["estimate"], m["ci95"]) == (22.0, 9.37, [0.93, 17.8])
    d, m, v = split("fedprox/five-datasets/mean-accuracy-gain", PUB, "reproduced", gain, [gain])
    assert (d["verdict"], m["verdict"], v) == ("reproduced", "inconclusive", "direction-only")
    low = _part("90% stragglers", 5.0, 1.0, 9.0, "reproduced")
    _, m, v = split("x/states-22", PUB, "reproduced", low, [low])
    assert (m["verdict"], v) == ("not-reproduced", "direction-only")  # wholly below the band's +11
    hit = _part("90% stragglers", 20.0, 12.0, 28.0, "reproduced")
    assert split("x/states-22", PUB, "reproduced", hit, [hit])[2] == "reproduced"  # both hold
    d, m, v = split("x/qualitative", PUB | {"value": None}, "inconclusive", gain, [gain])
    assert m is None and v == "inconclusive"  # no number: a direction claim


@pytest.mark.parametrize("direction,magnitude,verdict", [
    ("reproduced", "reproduced", "reproduced"),
    ("reproduced", "inconclusive", "direction-only"),
    ("reproduced", "not-reproduced", "direction-only"),
    ("inconclusive", "reproduced", "inconclusive"),
    ("inconclusive", "inconclusive", "inconclusive"),
    ("inconclusive", "not-reproduced", "not-reproduced"),  # the published size is excluded
    ("not-reproduced", "reproduced", "not-reproduced"),
    ("not-reproduced", "inconclusive", "not-reproduced"),
    ("not-reproduced", "not-reproduced", "not-reproduced"),
])
def test_size_verdict_table(direction, magnitude, verdict):
    assert size_verdict(direction, magnitude) == verdict


def test_direction_only_is_a_verdict_of_the_entry_model():
    assert "direction-only" in VERDICTS


def test_no_magnitude_part_named_part_and_size_parts():
    gain = _part("90% stragglers", 9.37, 0.93, 17.8, "reproduced")
    d, m, v = split("fedprox/synthetic-1-1/stragglers-90/accuracy-gain", PUB, "reproduced", gain, [gain])
    assert m["verdict"] is None and m["rule"].startswith("no magnitude part: the published +22 is the five-dataset")
    assert v == "reproduced" and m["about_size"] is False  # its number measures another quantity: the direction
    svrg, sarah = _part("SVRG", -18.9, -23.9, -14.0, "inconclusive"), _part("SARAH", 0.2, 0.05, 0.3, "reproduced")
    _, m, _ = split("fedproxvr/synthetic/matches-or-beats-fedavg", PUB | {"value": 0.1}, "inconclusive", sarah,
                    [svrg, sarah])
    assert (m["part"], m["verdict"]) == ("SVRG", "not-reproduced")  # the published +0.1 is SVRG's: band [0.05, 0.15]
    parts = [_part("step 0.1: speedup(K=10) - speedup(K=2)", 4.05, 4.05, 4.05, "reproduced"),
             _part("step 0.1: speedup(K=2) - 2", 0.02, 0.02, 0.02, "reproduced"),
             _part("step 0.1: speedup(K=10) - 4.25", 1.83, 1.83, 1.83, "not-reproduced")]
    d, m, v = split("scaffold/quadratics/local-steps-help", PUB | {"value": 4.0}, "not-reproduced", parts[2], parts)
    assert (d["verdict"], m["verdict"], v) == ("reproduced", "not-reproduced", "direction-only")
    assert m["parts"] == ["step 0.1: speedup(K=2) - 2", "step 0.1: speedup(K=10) - 4.25"]
    with pytest.raises(ValueError, match="not one of the claim's parts"):
        split("fedproxvr/synthetic/matches-or-beats-fedavg", PUB, "inconclusive", sarah, [sarah])


def test_every_registered_choice_is_valid_and_judged_entries_carry_both():
    assert all(isinstance(m, Magnitude) for m in MAGNITUDES.values())
    e = new_entry(id="x/y", paper="p", where="w", claim_text="c", published=PUB, rule="r", scale={}, deviations=[],
                  figure=None, fidelity="paper-scale", rounds_run=1, rounds_paper=1, training_seeds=[0, 1],
                  data_seeds=[0])
    gain = _part("", 22.0, 15.0, 30.0, "reproduced")  # inside the band [11, 33]
    out = judged(e, {"verdict": "reproduced", "effect": gain, "parts": [gain], "sensitivity": [], "would_change": ""})
    assert out["direction"]["verdict"] == "reproduced" and out["magnitude"]["verdict"] == "reproduced"
    assert out["verdict"] == "reproduced" and tuple(out)[-2:] == ("direction", "magnitude")

"""Direction and magnitude judged apart (fedbench.claims.magnitude): the default (the published value in the 95%
interval), a share, a named part, size-testing parts, no magnitude part, and the verdict convention."""

import pytest

from fedbench.claims.entry import VERDICTS, judged, new_entry
from fedbench.claims.magnitude import MAGNITUDES, Magnitude, size_verdict, split

PUB = {"value": 22.0, "unit": "accuracy points", "scope": "s", "statement": "t"}


def _part(label, est, lo, hi, verdict, rule="reproduced if the 95% interval lies above 0"):
    return {"part": label, "rule": rule, "verdict": verdict, "estimate": est, "ci95": [lo, hi], "unit": "x"}


def test_default_needs_the_published_value_inside_the_interval():
    m = Magnitude()
    assert m.verdict(22.0, {"ci95": [9.0, 30.0]}) == "reproduced"
    assert m.verdict(22.0, {"ci95": [22.0, 22.0]}) == "reproduced"  # the edges count
    assert m.verdict(22.0, {"ci95": [0.93, 17.8]}) == "not-reproduced"  # above 0, but +22 is excluded
    assert m.verdict(22.0, {"ci95": [23.0, 40.0]}) == "not-reproduced"  # larger than published is another size
    assert m.verdict(22.0, {"ci95": None}) == "inconclusive"
    assert m.text(22.0, "points") == ("reproduced if the published +22.0 points lies in the 95% interval, "
                                      "not-reproduced if the interval lies wholly on one side of it")


def test_share_of_the_published_value():
    m = Magnitude("share", share=0.5)
    assert m.verdict(4.0, {"ci95": [2.0, 9.0]}) == "reproduced"  # low end reaches 2 = 0.5 x 4
    assert m.verdict(4.0, {"ci95": [1.9, 9.0]}) == "inconclusive"
    assert m.verdict(4.0, {"ci95": [0.1, 1.99]}) == "not-reproduced"
    assert m.verdict(-4.0, {"ci95": [-9.0, -2.0]}) == "reproduced"  # the paper's side is negative
    assert m.verdict(-4.0, {"ci95": [-1.5, 0.5]}) == "not-reproduced"
    with pytest.raises(ValueError, match="share"):
        Magnitude("share")
    with pytest.raises(ValueError, match="reason"):
        Magnitude("none")


def test_a_claim_that_states_a_number_is_judged_on_it():
    gain = _part("90% stragglers", 9.37, 0.93, 17.8, "reproduced")
    d, m, v = split("x/states-22", PUB, "reproduced", gain, [gain])  # the default magnitude part: a size claim
    assert (d["verdict"], m["verdict"], v) == ("reproduced", "not-reproduced", "direction-only")
    assert m["about_size"] is True
    assert d["rule"] == "the claim's registered rule: reproduced if the 95% interval lies above 0"
    assert (m["published"], m["estimate"], m["ci95"]) == (22.0, 9.37, [0.93, 17.8])
    d, m, v = split("fedprox/five-datasets/mean-accuracy-gain", PUB, "reproduced", gain, [gain])
    assert (d["verdict"], m["verdict"], v) == ("reproduced", "not-reproduced", "direction-only")
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
    assert (m["part"], m["verdict"]) == ("SVRG", "not-reproduced")  # the published +0.1 is SVRG's
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
    gain = _part("", 30.0, 20.0, 40.0, "reproduced")
    out = judged(e, {"verdict": "reproduced", "effect": gain, "parts": [gain], "sensitivity": [], "would_change": ""})
    assert out["direction"]["verdict"] == "reproduced" and out["magnitude"]["verdict"] == "reproduced"
    assert out["verdict"] == "reproduced" and tuple(out)[-2:] == ("direction", "magnitude")

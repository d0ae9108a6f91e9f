"""FedLaAvg Example 1: the closed form against the recurrence it solves, and a shortened run of the study."""

import pytest

from fedbench.studies import fedlaavg_example1 as study


@pytest.mark.parametrize("eta", [0.3, 0.05, 0.01])
@pytest.mark.parametrize("a,b", [(8, 2), (3, 5), (4, 4)])
def test_closed_form_is_the_fixed_point_of_the_period_map(eta, a, b):
    mu1, mu2 = -1.0, 1.0
    w = 3.0
    for _ in range(5000):  # iterate w - mu_i <- (1 - eta)(w - mu_i): a steps on client 1, then b on client 2
        for _ in range(a):
            w = mu1 + (1 - eta) * (w - mu1)
        for _ in range(b):
            w = mu2 + (1 - eta) * (w - mu2)
    assert w == pytest.approx(study.closed_form(eta, a=a, b=b, mu=(mu1, mu2)), abs=1e-12)


def test_small_step_limit():
    assert study.closed_form(1e-6) == pytest.approx(study.small_step_limit(), abs=1e-5)
    assert study.small_step_limit() == pytest.approx(-0.6)
    assert study.closed_form(1e-4, a=4, b=4) == pytest.approx(0.0, abs=1e-3)  # a = b: unbiased in the limit


def test_dataset_means_are_exact():
    ds = study.dataset()
    for k, mu in enumerate(study.MU):
        x, _ = ds.train.client(k)
        assert float(x.mean()) == mu


def test_short_run_judges_both_claims_per_step_size(study_run):
    """The run at test size (tests/studies/end_to_end.SMALL: step sizes 0.2 and 0.1)."""
    claims = study_run(study.DECLARATION.name).claims
    for c in claims:
        assert c["verdict"] in ("reproduced", "not-reproduced") and c["fidelity"] == "analytic"
    assert claims[0]["reproduced"]["measured_c"] == [1.0]
    # parts: |w_end - w_inf| and convergence per eta, then the small-step bias
    assert len(claims[0]["parts"]) == 2 * 2 + 1 and len(claims[1]["parts"]) == 2 + 1

"""FedLaAvg diurnal study: the one-class partition and its groups, and a shortened run of the study."""

import numpy as np
import pytest

from fedbench.availability import majority_label_groups
from fedbench.studies import fedlaavg_diurnal as study


def test_one_class_clients_and_groups():
    ds = study.dataset()
    assert ds.num_clients == 100 and ds.train.sizes.sum() == 6000 and ds.test.sizes.sum() == 1000
    for k in range(ds.num_clients):
        _, y = ds.train.client(k)
        assert np.all(y == k // study.CLIENTS_PER_CLASS)
    sizes = ds.train.sizes.reshape(10, 10)
    assert sizes.min() >= 600 * 3 / 70 - 1 and sizes.max() <= 600 * 7 / 30 + 1  # weights clipped to [3, 7]
    np.testing.assert_array_equal(majority_label_groups(ds), np.repeat([0, 1], 50))  # classes 0-4 vs 5-9


def test_short_run_judges_the_gain_per_seed(study_run):
    """The run at test size (tests/studies/end_to_end.SMALL: 15 rounds, seeds 0 and 1)."""
    (gain,) = study_run(study.DECLARATION.name).claims
    assert gain["fidelity"] == "smoke-check" and (gain["rounds_run"], gain["rounds_paper"]) == (15, 70000)
    assert gain["effect"]["n"] == 2 and gain["seeds"]["training"] == [0, 1]
    best = gain["reproduced"]
    assert gain["effect"]["per_seed"] == [pytest.approx(a - b, abs=1e-4) for a, b in
                                          zip(best["fedlaavg_best"], best["fedavg_best"])]


def test_a_run_names_its_data_draw_as_the_declaration_does():
    """One fixed draw: no data seed in the record; a fresh-data block: each run its own, as the declaration pairs
    them (fedbench.study.declaration.StudyDeclaration.data_label), for the context runs too."""
    from fedbench.studies import fedlaavg_diurnal as study

    assert study.simulation("fedlaavg", 3).knobs == {"method": "fedlaavg"}
    block = study.DECLARATION.on_seeds((11, 12), (21, 22))
    sims = [study.simulation(name, s, block) for name, s in (("fedavg", 11), ("fedlaavg", 12), ("sequential", 11))]
    assert [s.knobs for s in sims] == [{"method": "fedavg", "data_seed": 21}, {"method": "fedlaavg", "data_seed": 22},
                                       {"method": "sequential", "data_seed": 21}]
    assert [s.dataset.args for s in sims] == [(21,), (22,), (21,)]  # and trains on that draw

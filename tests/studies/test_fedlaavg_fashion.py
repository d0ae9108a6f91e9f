"""FedLaAvg vs FedAvg on Fashion-MNIST (the stand-in study fedlaavg_fashion, a variant of fedlaavg_cifar10 run by its
hooks): its variant (the authors' one-class partition on fixture-sized idx files), its declaration (claim, arms,
budgets, protocol), and the whole study at the fixture budget, repeatable."""

from __future__ import annotations

import pytest

from fedbench.claims.readings import evaluation_rounds
from fedbench.data.partition.fedlaavg_cifar import client_classes
from fedbench.engine.evaluation import EvalSpec
from fedbench.studies import fedlaavg_cifar10
from fedbench.studies import fedlaavg_fashion as study
from fedbench.studies.real_data import not_run_entry, repartitioned, study_cost
from fedbench.study.record import compact, read_simulations
from fedbench.study.runner import run_simulations

BUILT_N = study.BUDGETS["fixture"].n


@pytest.fixture(scope="module")
def real_root(real_root_of):
    """Fixture-sized Fashion-MNIST (12 training and 3 test images a class, upstream idx format, its pixels the same
    whatever ran before) built as fashion_mnist_fedlaavg with the fixture budget's N = 20."""
    assert BUILT_N == 20
    return real_root_of(study.NAME)


def test_variant_is_one_class_per_client_with_the_test_images_on_their_class(real_root):
    ds = repartitioned(study.VARIANT, str(real_root), BUILT_N, BUILT_N)  # what the hooks train on
    assert ds.num_clients == 20 and int(ds.train.sizes.sum()) == 120 and len(ds.global_test.y) == 30
    assert int(ds.test.sizes.sum()) == 0  # the test images are the global test set, evaluated by the engine
    classes = client_classes(20)
    assert [int(c) for c in ds.hierarchy["class"]] == classes.tolist()
    for k in range(20):
        assert set(ds.train.client(k)[1].tolist()) == {classes[k]}
    # each class's 12 images split over its 2 clients by the authors' weights
    assert ds.train.sizes.tolist()[:2] == [7, 5]
    assert ds.input.transform == "normalize" and ds.input.transform_params == {"mean": [0.5], "std": [0.5]}
    assert ds.feature_shape == (784,)
    with pytest.raises(ValueError, match="N = 1000"):
        repartitioned(study.VARIANT, str(real_root), 1000, 1000)


def test_registered_claim_and_budgets():
    d = study.DECLARATION
    (claim,) = d.claims
    assert claim.id == "fedlaavg/fashion/ica-gain" and claim.fidelity == "stand-in" and claim.rounds_paper == 70000
    assert claim.reads == ("fedlaavg", "fedavg") == tuple(a.name for a in d.arms)
    assert (d.variants, d.seeds, d.data_seeds, d.seeds_at("fixture")) == (("fashion_mnist_fedlaavg",), (0, 1, 2, 3, 4),
                                                                        (), (0, 1))
    assert "lies above 0" in claim.rule and "Registered before any run" in claim.rule
    assert "What could differ" in claim.note and "instead of CIFAR-10" in claim.note
    b = study.BUDGETS["paper"]
    assert (b.n, b.k(b.n), b.local_steps, b.batch_size, b.period, b.beta, b.cycle()) == (1000, 100, 10, 5, 10, 0.5, 15)
    assert (b.lr, b.lr_decay, b.rounds, b.seeds, b.eval_every) == (0.01, 0.9999, 20, (0, 1, 2, 3, 4), 5)
    assert (b.clients, b.target, b.periods, b.gammas) == ((1000,), None, (10,), (0.1,))  # no sweep, no target
    # the global test set every 5 rounds and on the final model, nothing else
    assert d.evaluation == (EvalSpec("global_test", every=5),)
    assert evaluation_rounds(b.rounds, b.eval_every).tolist() == [0, 5, 10, 15, 20]
    assert evaluation_rounds(b.rounds, b.eval_every, 0.5).tolist() == [0, 5, 10]
    assert study_cost(d.scales)["runs"] == 10
    (entry,) = not_run_entry(study.NAME)
    assert entry["verdict"] == "not-run" and entry["fidelity"] == "stand-in"
    assert entry["command"] == "fedbench paper run fedlaavg_fashion" and entry["cost"]["hours"] > 0


def test_fixture_budget_gain_on_pinned_numbers_and_repeatable(study_run):
    """The run at the fixture budget (tests/studies/end_to_end.py)."""
    ran = study_run(study.NAME)
    (c,), real_root = ran.claims, ran.real_root
    b = study.BUDGETS["fixture"]
    assert c["id"] == "fedlaavg/fashion/ica-gain" and c["fidelity"] == "smoke-check"  # 8 of 70,000 rounds
    assert c["verdict"] in ("reproduced", "not-reproduced", "inconclusive")
    assert (c["rounds_run"], c["rounds_paper"]) == (8, 70000)
    best = c["reproduced"]
    # pinned on this machine (8 rounds, 30 test images: multiples of 10/3 points)
    assert (best["fedlaavg_best"], best["fedavg_best"]) == ([10.0, 13.33], [13.33, 23.33])
    assert c["effect"]["per_seed"] == [pytest.approx(x - y, abs=0.02) for x, y in
                                       zip(best["fedlaavg_best"], best["fedavg_best"])]
    # 30 test images: every accuracy is a multiple of 10/3 points
    for v in best["fedlaavg_best"] + best["fedavg_best"]:
        assert abs(v * 3 / 10 - round(v * 3 / 10)) < 0.005  # rounded to 2 decimals
    records = read_simulations(ran.out)
    assert [r["name"] for r in records] == [f"{m}/ica/seed={s}" for m in ("fedlaavg", "fedavg") for s in b.seeds]
    assert {r["params"]["clients_per_round"] for r in records} == {2}
    assert all(set(r["metrics"]) == {"study/best_accuracy"} for r in records)  # the one reading its claim reads
    # the whole global test set every round (the fixture's eval_every) and on the final model, no sample of it
    assert [r["params"]["evaluations"] for r in records] == [[{"split": "global_test", "every": 1, "final": True}]] * 4
    # FedLaAvg and FedAvg train differently from the same seed, and a run alone repeats its recorded numbers
    by_name = {r["name"]: r for r in records}
    assert by_name["fedlaavg/ica/seed=0"]["param_digest"] != by_name["fedavg/ica/seed=0"]["param_digest"]
    roles = fedlaavg_cifar10.plan(b, study.DECLARATION)
    again = [fedlaavg_cifar10.simulation(b, roles[m][0], str(real_root), study.VARIANT, study.MODEL)
             for m in ("fedlaavg", "fedavg")]
    for sim, outcome in zip(again, run_simulations(again, workers=1)):
        assert outcome.param_digest == by_name[sim.name]["param_digest"]
        accuracy = by_name[sim.name]["history"][fedlaavg_cifar10.ACCURACY]
        assert [compact(v) for v in outcome.series(fedlaavg_cifar10.ACCURACY)] == accuracy

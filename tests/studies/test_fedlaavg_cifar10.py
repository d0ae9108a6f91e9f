"""FedLaAvg on CIFAR-10 (the paper-scale study fedlaavg_cifar10): its declaration and plan of runs, its Spearman
reading (the curve readings are the registry's: tests/claims/test_readings.py), its data (the global test set
evaluated by the engine, the N sweep's partitions rebuilt from the prepared source), its evaluation protocol, its
not-run entries, and the whole study at the fixture budget on fixture-sized CIFAR-10."""

from __future__ import annotations

import pytest

from fedbench.studies import fedlaavg_cifar10 as study
from fedbench.studies.real_data import global_test_every, not_run_entry, pooled, repartitioned, study_cost
from fedbench.study.record import compact, read_simulations
from fedbench.study.runner import run_simulations

BUILT_N = study.BUDGETS["fixture"].n


@pytest.fixture(scope="module")
def real_root(real_root_of):
    """Fixture-sized CIFAR-10 (20 training and 4 test images a class) prepared and built as cifar10_fedlaavg with
    the fixture budget's N (tests/studies/real_fixtures.py)."""
    return real_root_of(study.NAME)


def test_the_global_test_set_stays_global_and_the_protocol_is_the_authors(real_root):
    built = repartitioned(study.VARIANT, str(real_root), BUILT_N, BUILT_N)
    assert len(built.global_test.y) == 40 and int(built.test.sizes.sum()) == 0  # no copies on the clients
    assert not hasattr(study, "with_global_test")
    b = study.BUDGETS["paper"]
    (spec,) = global_test_every(built, study.VARIANT, b.eval_every, study.MAX_TEST)
    assert (spec.split, spec.every, spec.final, spec.samples_sample) == ("global_test", 20, True, None)  # 40 <= 10,000
    assert study.DECLARATION.evaluation == (spec,)  # the declared protocol is the paper budget's
    sim = study.simulation(study.BUDGETS["fixture"], study.plan(study.BUDGETS["fixture"])["fedlaavg_ica"][0],
                           str(real_root))
    assert sim.config.evaluations == (spec.__class__("global_test", every=2),)
    assert sim.config.dissimilarity_every == 0


def test_the_n_sweep_rebuilds_the_authors_partition_from_the_prepared_source(real_root):
    small = repartitioned(study.VARIANT, str(real_root), BUILT_N, 10)
    assert small.num_clients == 10 and int(small.train.sizes.sum()) == 200  # every training image, 20 a client
    assert [len(set(small.train.client(k)[1])) for k in range(10)] == [1] * 10
    assert small.partition["params"]["num_clients"] == 10 and small.partition["params"]["seed"] == 1
    pooled_data = pooled(study.VARIANT, str(real_root), BUILT_N)
    assert pooled_data.num_clients == 1 and pooled_data.input.kind == "image"
    assert pooled_data.input.transform == "normalize"
    with pytest.raises(ValueError, match="N = 1000"):
        repartitioned(study.VARIANT, str(real_root), 1000, 1000)


def test_declaration():
    d = study.DECLARATION
    assert [(a.name, a.algorithm, a.settings["availability"]) for a in d.arms] == [
        ("fedlaavg_ica", "fedlaavg", "diurnal"), ("fedavg_ica", "fedavg", "diurnal"),
        ("fedlaavg_fca", "fedlaavg", "always"), ("fedavg_fca", "fedavg", "always"),
        ("sequential", "sequential_sgd", "always")]
    assert (d.seeds, d.seeds_at("fixture"), d.data_seeds) == ((0, 1, 2, 3, 4), (0, 1), ())
    assert d.variants == ("cifar10_fedlaavg",)
    assert (d.rounds("paper"), d.rounds("fixture")) == (70000, 8)  # each its own: a record finds its budget by them
    assert d.knobs == {"N": (200, 400, 600, 800, 1000), "P": (5, 10, 15), "gamma": (0.02, 0.04, 0.06, 0.08, 0.1)}
    assert [c.reads for c in d.claims] == [("fedlaavg_ica", "fedavg_ica"),
                                           ("fedlaavg_fca", "fedavg_fca", "fedlaavg_ica", "sequential"),
                                           ("fedlaavg_ica",), ("fedavg_ica", "fedlaavg_ica"), ("fedlaavg_ica",),
                                           ("fedlaavg_ica",), ("fedlaavg_ica", "fedavg_ica", "fedlaavg_fca", "fedavg_fca")]
    # the first four declare the runs they were registered with; the later three the study's
    assert [c.scales for c in d.claims] == [study.REGISTERED] * 4 + [()] * 3
    assert {c.fidelity for c in d.claims} == {"reconstructed"} and {c.rounds_paper for c in d.claims} == {70000}


def test_plan_shares_runs_between_roles():
    b = study.BUDGETS["paper"]
    roles = study.plan(b)
    assert roles["n=1000"] == roles["p=10"] == roles["gamma=0.1"] == roles["fedlaavg_ica"]
    runs = {r for rs in roles.values() for r in rs}
    # Table 2: 4 x 5 seeds + sequential 5; the N sweep below 1000: 4 x 5; P 5, 15: 2 x 5; gamma 0.02-0.08: 4 x 5
    assert len(runs) == 20 + 5 + 20 + 10 + 20
    assert [r.seed for r in roles["p=15"]] == [r.seed for r in roles["gamma=0.02"]] == [0, 1, 2, 3, 4]
    assert [b.k(n) for n in b.clients] == [20, 40, 60, 80, 100] and b.cycle() == 15
    assert roles["sequential"][0].name == "sequential/N=1000/seed=0" and roles["fedavg_fca"][1].name == \
        "fedavg/fca/N=1000/P=10/gamma=0.1/seed=1"  # the records' names
    assert roles["gamma=0.02"][0].name == "fedlaavg/ica/N=1000/P=10/gamma=0.02/seed=0"


def test_not_run_entries_carry_the_command_and_a_positive_cost():
    entries = not_run_entry(study.NAME)
    assert [e["id"] for e in entries] == [c.id for c in study.DECLARATION.claims]
    for e in entries:
        assert e["verdict"] == "not-run" and e["command"] == "fedbench paper run fedlaavg_cifar10"
        assert e["cost"]["hours"] > 0 and e["scale"]["variants"] == ["cifar10_fedlaavg"]
    cost = study_cost(study.DECLARATION.scales)
    assert cost["runs"] == 75 and cost["left_out"] == 0  # P and gamma on every seed: read by the later claims
    registered = study_cost(study.REGISTERED)
    assert registered["runs"] == 45 and registered["left_out"] == 6  # as the first four were registered
    assert {e["cost"]["hours"] for e in entries} == {study_cost(study.DECLARATION.scales, study.NAME)["hours"]}


def test_fixture_budget_reads_every_role_and_repeats(study_run):
    """The run at the fixture budget (tests/studies/end_to_end.py)."""
    ran = study_run(study.NAME)
    claims, real_root = ran.claims, ran.real_root
    b = study.BUDGETS["fixture"]
    for c in claims:
        assert c["verdict"] != "not-run" and c["fidelity"] == "smoke-check"  # 8 of 70,000 rounds: at most a tenth
        # n counts the defined values: a seed whose rho orders nothing (all tied: undefined, issue 51) is left out
        assert len(c["effect"]["per_seed"]) == len(b.seeds)
        assert c["effect"]["n"] == sum(x is not None for x in c["effect"]["per_seed"])
        assert (c["rounds_run"], c["rounds_paper"]) == (b.rounds, 70000)
    ica = claims[0]
    best = ica["reproduced"]
    assert ica["effect"]["per_seed"] == [pytest.approx(x - y, abs=0.02) for x, y in
                                         zip(best["fedlaavg_best"], best["fedavg_best"])]
    assert [p["part"] for p in claims[1]["parts"]] == ["full availability (FCA)", "FedLaAvg (ICA) vs sequential SGD"]
    speedup = claims[2]
    assert set(speedup["reproduced"]["by_N"]) == {"10", "20", "40"}
    trends, grows, early = claims[4:]
    assert [p["part"] for p in trends["parts"]] == ["gamma = 0.05..0.1", "P = 2, 3"]
    assert set(trends["reproduced"]["by_setting"]) == {"gamma=0.05", "gamma=0.1", "P=2", "P=3"}
    assert set(grows["reproduced"]["by_P"]) == {"2", "3"} and len(early["parts"]) == 2
    assert all(v is None or -1.0 <= v <= 1.0 for v in speedup["effect"]["per_seed"])  # None: all tied, undefined
    records = read_simulations(ran.out)
    assert len(records) == len({r for rs in study.plan(b).values() for r in rs})
    assert all(r["params"]["lr_decay"] == b.lr_decay for r in records)
    assert {r["params"]["clients_per_round"] for r in records if r["params"]["method"] == "fedlaavg"} == {1, 2, 4}
    for name in ("table2", "table3"):
        assert (ran.out / f"{study.NAME}_{name}.png").stat().st_size > 10_000
    # the same seed gives the same numbers: FedLaAvg's and FedAvg's first ICA runs again, alone
    roles = study.plan(b)
    again = [study.simulation(b, roles[role][0], str(real_root)) for role in ("fedlaavg_ica", "fedavg_ica")]
    by_name = {r["name"]: r for r in records}
    for sim, outcome in zip(again, run_simulations(again, workers=1)):
        assert outcome.param_digest == by_name[sim.name]["param_digest"]
        history = by_name[sim.name]["history"]
        assert history["round"] == [0, 2, 4, 6, 8]  # every 2 rounds at the fixture budget, and the final model
        assert [compact(v) for v in outcome.at_rounds("global_test/accuracy").values()] == history["global_test/accuracy"]
        assert all("test/accuracy" not in row for row in outcome.history)  # no per-device copies evaluated

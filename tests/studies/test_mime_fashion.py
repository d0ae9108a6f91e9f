"""Mime and MimeLite vs FedAvgM on Fashion-MNIST (fedbench.studies.mime_fashion, stand-in): end to end on
fixture-sized fashion_mnist_fedproxvr, the step-size selection on the tuning seeds, the rule on made-up runs (one
part holding, one failing), the paper budget's declared runs, repeatability and the not-run entry."""

from __future__ import annotations


import pytest

from fedbench.algorithms.fedavg_momentum import FedAvgMomentum
from fedbench.algorithms.mime import Mime
from fedbench.data import stages
from fedbench.engine.evaluation import EvalSpec
from fedbench.study.contract import drive
from fedbench.study.runner import Outcome, run_simulations
from fedbench.studies import mime_fashion as study
from fedbench.studies.mime_fashion import DECLARATION
from fedbench.studies.real_data import not_run_entry
from tests.data import fixtures

FIXTURE_PARAMS = {"num_clients": 10, "phase1_per_label": 2, "tf_validation_size": 20}


@pytest.fixture(scope="module")
def real_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("mime_fashion")
    raw = root / "raw"
    raw.mkdir()
    for name, data in fixtures.mnist_like().items():
        (raw / name).write_bytes(data)
    stages.prepare_dataset(DECLARATION.variants[0], root, raw=raw, verify=False, variant_params=FIXTURE_PARAMS)
    return root / "real"


def test_paper_budget_declares_the_stated_setup(real_root):
    b = DECLARATION.budget("paper")
    assert b.seeds == DECLARATION.seeds == (0, 1, 2, 3, 4) and b.tuning_seeds == (100, 101) and b.device == "auto"
    assert b.lr_grid == DECLARATION.knobs["lr"] == (0.003, 0.01, 0.03, 0.1, 0.3)
    sims = {a.name: study.simulation(a.name, 0.01, 0, b, real_root) for a in DECLARATION.arms}
    assert sims["Mime"].algorithm == Mime(lr=0.01, variant="mime", base="sgdm", momentum=0.9)
    assert sims["MimeLite"].algorithm == Mime(lr=0.01, variant="mimelite", base="sgdm", momentum=0.9)
    assert sims["FedAvgM"].algorithm == FedAvgMomentum(lr=0.01, beta=0.9, server_lr=1.0)
    cfg = sims["Mime"].config
    assert (cfg.rounds, cfg.clients_per_round, cfg.local_steps, cfg.batch_size, cfg.sampling) == (
        200, 10, 10, 10, "proportional")
    assert sims["Mime"].model.num_params == 7850  # mclr 784 -> 10
    protocol = (EvalSpec("test", metrics=("test/loss", "test/accuracy"), every=5),)
    assert cfg.evaluations == DECLARATION.evaluation == protocol
    assert sum(s.runs for s in DECLARATION.scales) == 3 * (5 * 2 + 5)  # before any widening of a grid
    assert not {1000, *range(1000, 1100)} & {*b.tuning_seeds, *b.seeds}  # apart from the confirm seeds (1000 up)
    with pytest.raises(ValueError, match="two or more"):
        study.Budget(1, 2, seeds=(0,), tuning_seeds=(100,), lr_grid=(0.1, 0.3), device="cpu")
    assert [c.reads for c in DECLARATION.claims] == [("Mime", "MimeLite", "FedAvgM")]


def _outcome(acc) -> Outcome:
    return Outcome(name="x", history=[{"round": r, "train/loss": 1.0, "test/accuracy": a} for r, a in enumerate(acc)], final={},
                   diverged=False, param_digest="", device="cpu", models=None, seconds=0.0)


def test_tuning_selects_by_margin_ties_to_the_smaller_step_and_widens_the_grid():
    b = study.Budget(rounds=1, clients_per_round=2, seeds=(0,), tuning_seeds=(100, 101), lr_grid=(0.01, 0.1, 0.3),
                     device="cpu")
    tail = {"Mime": {0.01: (0.50, 0.52), 0.1: (0.70, 0.71), 0.3: (0.60, 0.61)},  # 0.1 ahead by 10 > spread 1
            "MimeLite": {0.01: (0.40, 0.40), 0.1: (0.55, 0.65), 0.3: (0.58, 0.62)},  # 0.1, 0.3 tied: the smaller
            "FedAvgM": {0.01: (0.10, 0.11), 0.1: (0.20, 0.21), 0.3: (0.30, 0.31),  # rising: the grid widens
                        0.9: (0.40, 0.41), 2.7: (0.35, 0.36)}}  # peak at 0.9, interior once 2.7 is read
    asked = []

    def run(jobs):
        asked.append(jobs)
        return {(m, lr, s): _outcome([v, v]) for m, lr, s in jobs
                for v in [tail[m][lr][b.tuning_seeds.index(s)]]}

    selections, outcomes = study.tune(run, b)
    assert {m: sel.step for m, sel in selections.items()} == {"Mime": 0.1, "MimeLite": 0.1, "FedAvgM": 0.9}
    assert [sel.interior for sel in selections.values()] == [True, True, True]
    assert selections["FedAvgM"].added == (0.9, 2.7) and selections["Mime"].added == ()
    assert asked[1:] == [[("FedAvgM", 0.9, 100), ("FedAvgM", 0.9, 101)], [("FedAvgM", 2.7, 100), ("FedAvgM", 2.7, 101)]]
    assert len(asked[0]) == 3 * 3 * 2 and len(outcomes) == 3 * 3 * 2 + 4
    assert selections["MimeLite"].choice.tied == (0.1, 0.3)
    assert selections["Mime"].record()["tuning"]["0.1"] == [70.0, 71.0]


def test_readings_read_the_protocol_rounds_only():
    # evaluations every 5 rounds and the final model (round 27); a row at round 3 (not a protocol round) is not read
    rows = {0: 0.0, 3: 0.99, 5: 0.2, 10: 0.6, 15: 0.5, 20: 0.55, 25: 0.58, 27: 0.4}
    o = Outcome(name="x", history=[{"round": r, "test/accuracy": a} for r, a in rows.items()], final={},
                diverged=False, param_digest="", device="cpu", models=None, seconds=0.0)
    assert study.accuracy(o, "tail", 27) == pytest.approx(100 * (0.6 + 0.5 + 0.55 + 0.58 + 0.4) / 5)
    assert (study.accuracy(o, "best", 27), study.accuracy(o, "final", 27)) == (pytest.approx(60.0), pytest.approx(40.0))
    # cut at half the rounds (round 14): evaluations 0, 5, 10
    assert study.accuracy(o, "tail", 27, 0.5) == pytest.approx(100 * (0.0 + 0.2 + 0.6) / 3)


def test_readings_and_rule_on_made_up_runs(monkeypatch, real_root, tmp_path):
    # every step gives the same curve on the tuning seeds; Mime above FedAvgM on every seed,
    # MimeLite below on every seed: Mime's part holds, MimeLite's does not, so the claim is not reproduced
    final = {"Mime": (0.50, 0.61, 0.55), "MimeLite": (0.35, 0.30, 0.33), "FedAvgM": (0.40, 0.40, 0.40)}

    def fake_run(sims, workers):
        return [_outcome([0.1, final[s.knobs["method"]][s.config.seed]] if s.config.seed < 3 else [0.1, 0.2])
                for s in sims]

    monkeypatch.setattr("fedbench.study.runner.run_simulations", fake_run)  # StudyRuns.run calls it
    monkeypatch.setattr("fedbench.study.record.write_simulations", lambda out, records: None)
    monkeypatch.setattr("fedbench.study.record.sim_record", lambda sim, o, metrics=None: {})
    monkeypatch.setitem(study.BUDGETS, "fixture", study.Budget(rounds=1, clients_per_round=2, seeds=(0, 1, 2),
                                                               tuning_seeds=(100, 101), lr_grid=(0.01, 0.1),
                                                               device="cpu"))
    (c,) = drive(study, tmp_path / "out", budget="fixture", workers=1, real_root=real_root)
    # the tail reading of a 1-round run averages both evaluations: (0.1 + v) / 2
    assert c["parts"][0]["per_seed"] == pytest.approx([5.0, 10.5, 7.5])
    assert c["parts"][1]["per_seed"] == pytest.approx([-2.5, -5.0, -3.5])
    assert [p["verdict"] for p in c["parts"]] == ["reproduced", "not-reproduced"]
    # every step ties on the tuning seeds: the smallest step, at the grid's edge, so the grid widens twice towards
    # smaller steps (0.001, 0.0001), ties again and says it stays at the edge
    assert c["verdict"] == "not-reproduced" and c["reproduced"]["steps"] == {a.name: 0.0001 for a in DECLARATION.arms}
    assert c["reproduced"]["selected_at_grid_edge"] == [a.name for a in DECLARATION.arms]
    assert "could not be made interior" in c["reproduced"]["tuning"]["Mime"]["why"]


def test_same_seed_same_numbers(real_root):
    sims = [study.simulation("Mime", 0.1, 1, DECLARATION.budget("fixture"), real_root)]
    first, second = run_simulations(sims, workers=1)[0], run_simulations(sims, workers=1)[0]
    assert first.param_digest == second.param_digest
    assert first.series("test/accuracy") == second.series("test/accuracy")


def test_not_run_entry_is_stand_in_with_the_command_and_a_cost():
    (e,) = not_run_entry(DECLARATION.name)
    assert e["id"] == DECLARATION.claims[0].id and e["verdict"] == "not-run"
    assert e["command"] == "fedbench paper run mime_fashion" and e["fidelity"] == "stand-in"
    assert e["cost"]["seconds"] > 0 and e["cost"]["runs"] == 3 * 15
    assert e["scale"]["variants"] == ["fashion_mnist_fedproxvr"]
    assert "could differ" in e["deviations"][0]


def test_on_other_seeds_the_rule_names_them_and_keeps_its_frozen_hash(tmp_path):
    """A confirmatory run (fedbench.studies.confirm) judges the ordering on a frozen block of fresh seeds: the rule
    and the deviations name those seeds, the tuning seeds and grid stay, and the rule's frozen hash is the
    exploratory one's (a rule that named 0-4 on other seeds would be refused as changed)."""
    from fedbench.claims import registry

    from fedbench.study.contract import seeded

    paper = study.BUDGETS["paper"]
    run = seeded(study.DECLARATION, "paper", (1055, 1056, 1057, 1058, 1059))
    b, d = run.budget, run.declaration
    deviations = study.assumptions(b.seeds)
    assert b.seeds == (1055, 1056, 1057, 1058, 1059) and (b.tuning_seeds, b.lr_grid) == (paper.tuning_seeds,
                                                                                       paper.lr_grid)
    rule = d.claims[0].rule
    assert "per judged seed (1055-1059)" in rule
    assert rule.replace("(1055-1059)", "(0-4)") == study.DECLARATION.claims[0].rule
    assert "judged on seeds 1055, 1056, 1057, 1058, 1059" in " ".join(deviations)

    def entry(declaration, seeds):
        return declaration.entry(declaration.claims[0].id, scale={"study": "mime_fashion"}, deviations=[],
                                 figure=None, fidelity="stand-in", rounds_run=200, rounds_paper=None,
                                 training_seeds=list(seeds), data_seeds=[0])

    assert registry.frozen_hash(entry(d, b.seeds)) == registry.frozen_hash(entry(study.DECLARATION, paper.seeds))
    assert registry.rule_spec(entry(d, b.seeds))["rule"] != registry.rule_spec(entry(study.DECLARATION, paper.seeds))["rule"]

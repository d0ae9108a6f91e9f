"""SCAFFOLD's quick demo on UCI concrete: the rule is the one registered before any run, the reading and the step
selection on made-up curves, every verdict of the three parts, the split and the optimum on a generated table, and
the test-size run."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from fedbench.claims import registry
from fedbench.studies.entries import not_run_entries
from fedbench.studies import scaffold_concrete as study
from fedbench.studies import scaffold_concrete_claims as claims
from fedbench.study import contract
from fedbench.study.contract import StudyRun

CLAIM = "scaffold/uci-concrete/faster-than-sgd"
F_STAR = 50.0
# a shrunk study: 20 rounds, three step factors, two selection seeds (the claim's declared rules: the study's)
SMALL = SimpleNamespace(MAX_ROUNDS=20, TARGET=0.01, LR_FACTORS=(1.0, 0.5, 0.25), METHODS=study.METHODS,
                        SELECTION_SEEDS=(100, 101), NUM_CLIENTS=10, SIMILARITY=10.0, K=10, GRID_HALVINGS=3)
SEEDS = (0, 1, 2, 3, 4)


def _curve(hit: int | None, rounds: int = 20) -> np.ndarray:
    """Training loss 2 f* until round ``hit``, f* from then on (None: never within the target)."""
    c = np.full(rounds + 1, 2 * F_STAR)
    if hit is not None:
        c[hit:] = F_STAR
    return c


def _curves(largest: dict[str, float | None], judged: dict[str, callable], sgd_largest_per_seed=None) -> dict:
    """Selection runs converging at every factor up to ``largest[method]`` (None: at none; SGD's per selection seed
    where ``sgd_largest_per_seed`` says), and judged runs reaching the target at ``judged[method](seed)``."""
    out = {}
    for m in SMALL.METHODS:
        for s in SMALL.SELECTION_SEEDS:
            top = (sgd_largest_per_seed or {}).get(s, largest[m]) if m == "sgd" else largest[m]
            for f in SMALL.LR_FACTORS:
                out[(m, f, s)] = _curve(5 if top is not None and f <= top else None)
        for f in SMALL.LR_FACTORS if largest[m] is not None else ():
            for s in SEEDS:  # at whichever step the selection chooses
                out[(m, f, s)] = _curve(judged[m](s))
    return out


def _judge(largest, judged, **kw):
    """The chosen steps and the claim's entry, measured and judged as the driver does (fedbench.study.contract.entry)."""
    curves = _curves(largest, judged, **kw)
    steps = claims.chosen_steps(SMALL, curves, F_STAR)
    claim = study.DECLARATION.claim(CLAIM)
    run = StudyRun(study.DECLARATION, "pipeline", SMALL.MAX_ROUNDS)
    return steps, contract.entry(run, claim, claims.measurement(SMALL, claim, curves, steps, SEEDS, F_STAR))


def test_the_rule_is_the_registered_one_word_for_word():
    book = registry.load()
    claim = study.DECLARATION.claim(CLAIM)
    assert book[CLAIM]["before_result"] is True and book[CLAIM]["spec"]["rule"] == claim.rule
    (entry,) = not_run_entries("scaffold_concrete", "not run", "running it")  # as the report shows it before a run
    assert registry.status(entry, book)["status"] == "registered"


def test_the_declared_setting():
    assert (study.NUM_CLIENTS, study.K, study.MAX_ROUNDS, study.SIMILARITY) == (10, 10, 1000, 10.0)
    assert study.LR_FACTORS == tuple(1 / 2 ** j for j in range(11))  # 1/L down to 1/(1024 L)
    assert (study.SELECTION_SEEDS, study.SEEDS) == ((100, 101, 102), (0, 1, 2, 3, 4))
    assert [(a.name, a.algorithm, a.settings["local_steps"]) for a in study.DECLARATION.arms] == [
        ("sgd", "fedavg", 1), ("fedavg", "fedavg", 10), ("scaffold", "scaffold", 10)]
    assert len(study.selection_runs()) == 3 * 11 * 3


def test_rounds_to_target():
    c = np.array([100.0, 60.0, F_STAR * 1.01, F_STAR * 1.001, np.inf])
    assert claims.rounds_to_target(SMALL, c, F_STAR) == 2  # 1.01 f* is within 1%
    assert claims.rounds_to_target(SMALL, c, F_STAR, rounds=1) == 1  # never within round 1: the rounds read
    assert claims.rounds_to_target(SMALL, _curve(None), F_STAR) == 20 and not claims.converges(SMALL, _curve(None), F_STAR)


def test_every_verdict():
    paper = {"sgd": lambda s: 10, "fedavg": lambda s: 15 + s, "scaffold": lambda s: 3 + s % 2}
    steps, good = _judge({"sgd": 1.0, "fedavg": 0.5, "scaffold": 1.0}, paper)
    assert steps == {"sgd": 1.0, "fedavg": 0.5, "scaffold": 1.0}
    assert [p["verdict"] for p in good["parts"]] == ["reproduced"] * 3 and good["verdict"] == "reproduced"
    assert good["parts"][0]["per_seed"] == [7, 6, 7, 6, 7] and good["parts"][1]["per_seed"] == [5, 6, 7, 8, 9]
    assert good["parts"][2]["estimate"] == 1.0  # one halving: ratio 2
    # read at 25% and 50% of the 20 rounds (5, 10), FedAvg (15-19) and SGD (10) both read "never": (b) is 0
    assert [(c["budget"], c["verdict"]) for c in good["sensitivity"]] == [
        (1.0, "reproduced"), (0.25, "inconclusive"), (0.5, "inconclusive")]
    # FedAvg selects SGD's step: (c) fails and decides, whatever (a) and (b) say
    _, same_step = _judge({"sgd": 1.0, "fedavg": 1.0, "scaffold": 1.0}, paper)
    assert same_step["parts"][2]["verdict"] == "not-reproduced" and same_step["verdict"] == "not-reproduced"
    assert same_step["effect"]["part"] == claims.PART_C and "crossed +0.500 halvings (now 0 halvings" in same_step["would_change"]
    # SCAFFOLD as often slower as faster than SGD: (a) inconclusive
    _, mixed = _judge({"sgd": 1.0, "fedavg": 0.5, "scaffold": 1.0}, paper | {"scaffold": lambda s: 10 + 3 * (s - 2)})
    assert [p["verdict"] for p in mixed["parts"]] == ["inconclusive", "reproduced", "reproduced"]
    assert mixed["verdict"] == "inconclusive"
    # FedAvg faster than SGD: (b) not-reproduced
    _, faster = _judge({"sgd": 1.0, "fedavg": 0.5, "scaffold": 1.0}, paper | {"fedavg": lambda s: 4 + s % 2})
    assert faster["parts"][1]["verdict"] == "not-reproduced" and faster["verdict"] == "not-reproduced"


def test_each_selection_seed_counts_and_the_edge_cases():
    paper = {"sgd": lambda s: 10, "fedavg": lambda s: 15 + s, "scaffold": lambda s: 3 + s % 2}
    # SGD's selection 0.5 on seed 101 (ratio 1 there): (c) is the fewest halvings over the seeds
    steps, one_seed = _judge({"sgd": 1.0, "fedavg": 0.5, "scaffold": 1.0}, paper, sgd_largest_per_seed={101: 0.5})
    assert steps["sgd"] == 0.5 and one_seed["parts"][2]["estimate"] == 0.0
    assert one_seed["parts"][2]["verdict"] == "not-reproduced"
    # FedAvg converges at no grid step: infinitely many halvings, and its judged rounds are "never" (20)
    steps, never = _judge({"sgd": 1.0, "fedavg": None, "scaffold": 1.0}, paper)
    assert steps["fedavg"] is None and never["parts"][2]["estimate"] == math.inf
    # 10 rounds on each of 5 seeds: equal values, whose order-statistic interval covers 93.75% (issue 51: below the
    # rule's 95%, inconclusive, more seeds needed)
    assert never["parts"][1]["per_seed"] == [10] * 5 and never["parts"][1]["verdict"] == "inconclusive"
    assert never["parts"][1]["coverage"] == 0.9375 and never["verdict"] == "inconclusive"
    # SGD converges at none: (c) has no value
    _, no_sgd = _judge({"sgd": None, "fedavg": 0.5, "scaffold": 1.0}, paper)
    assert no_sgd["parts"][2]["verdict"] == "inconclusive" and no_sgd["parts"][2]["n"] == 0


def _table(n: int = 60):
    rng = np.random.default_rng(0)
    z = rng.standard_normal((n, 8))
    return (z - z.mean(0)) / z.std(0), 30.0 + z @ np.arange(1.0, 9.0) + rng.standard_normal(n)


def test_split_optimum_and_one_gradient_step(monkeypatch):
    monkeypatch.setattr(study, "table", _table)
    monkeypatch.setattr(study, "federated", study.functools.cache(study.federated.__wrapped__))
    monkeypatch.setattr(study, "optimum", study.functools.cache(study.optimum.__wrapped__))
    ds = study.federated(3)
    # 6 i.i.d. rows cut 0,0,0,0,1,1,1,1,1,1 and 54 sorted rows cut 5 x 6, 6 x 4 (fedbench.data.partition.even_cut)
    assert np.diff(ds.train.offsets).tolist() == [5, 5, 5, 5, 6, 6, 7, 7, 7, 7]
    z, y = _table()
    rows = np.concatenate([z, y[:, None]], 1).astype(np.float32)
    assert sorted(map(tuple, ds.train.x.tolist())) == sorted(map(tuple, rows.tolist()))  # every row, once
    f_star, top = study.optimum()
    a = np.concatenate([rows[:, :8].astype(np.float64), np.ones((60, 1))], 1)
    w = np.linalg.lstsq(a, rows[:, 8].astype(np.float64), rcond=None)[0]
    assert f_star == pytest.approx(0.5 * np.mean((a @ w - rows[:, 8]) ** 2), rel=1e-12)
    assert top == pytest.approx(np.linalg.eigvalsh(a.T @ a / 60)[-1], rel=1e-12)
    # SGD's first round is one gradient step at 1/L on the mean gradient: the engine's loss after it, exactly
    # (float32 iterates: 1e-5 relative is about 100 float32 ulps of a 9-term sum)
    from fedbench.study.runner import run_simulations

    monkeypatch.setattr(study, "MAX_ROUNDS", 1)
    (o,) = run_simulations([study.simulation("sgd", 1.0, 3)], 1)
    t = rows[:, 8].astype(np.float64)
    theta = -(1 / top) * a.T @ (a @ np.zeros(9) - t) / 60
    assert study.losses(o)[0] == pytest.approx(0.5 * np.mean(t ** 2), rel=1e-6)
    assert study.losses(o)[1] == pytest.approx(0.5 * np.mean((a @ theta - t) ** 2), rel=1e-5)


def test_the_test_size_run(study_run):
    ran = study_run("scaffold_concrete")
    (entry,) = ran.claims
    names = [json.loads(line)["name"] for line in (ran.out / "simulations.jsonl").read_text().splitlines()]
    steps = entry["reproduced"]["chosen_step_x_1_over_L"]
    assert len(names) == len(set(names)) == 3 * 2 * 1 + 2 * sum(v is not None for v in steps.values())
    assert steps["sgd"] == 1.0  # gradient descent at 1/L reaches 1% of f* in 30 rounds on the generated table
    # run on split seeds 0 and 1, the rule names them where the registered one names 0-4 (StudyDeclaration.on_seeds)
    rule = study.DECLARATION.claim(CLAIM).rule
    assert entry["rule"] == rule.replace("split seeds 0-4", "split seeds 0-1") != rule
    assert entry["id"] == CLAIM and (entry["rounds_run"], entry["rounds_paper"]) == (30, None)
    assert entry["fidelity"] == "reconstructed" and [p["part"] for p in entry["parts"]] == [
        claims.PART_A, claims.PART_B, claims.PART_C]
    assert entry["seeds"]["training"] == [0, 1]
    assert (ran.out / "scaffold_concrete.png").exists()
    # judged, it is still the registered rule (its parts and readings fill fields empty at registration), on other
    # seeds: the frozen hash reads a mention of the run's own seeds as a placeholder
    on_declared = {**entry, "rule": rule, "seeds": {**entry["seeds"], "training": [0, 1, 2, 3, 4]}}
    assert registry.status(on_declared, registry.load())["status"] == "registered"
    assert registry.frozen_hash(entry) == registry.frozen_hash(on_declared)

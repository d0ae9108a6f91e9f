"""Mime synthetic study: the arms (server-only = Mime with one local step, MimeLite with SGD = FedAvg), tuning on
seeds apart from the judged ones, the three rules on made-up accuracies (measured and judged as the driver does), and
a shortened run."""

from __future__ import annotations

import pytest
import torch

from fedbench.algorithms.fedavg import FedAvg
from fedbench.seeding import torch_generator
from fedbench.studies import mime_synthetic as study
from fedbench.study import contract
from fedbench.study.contract import StudyRun
from fedbench.study.runner import sim_config


def test_server_only_is_one_base_optimizer_step_on_the_cohorts_gradient():
    sim = study.simulation("server-only SGD", 0.1, 0)
    assert sim.config.local_steps == 1 and study.simulation("Mime (SGD)", 0.1, 0).config.local_steps == study.LOCAL_STEPS
    ds, model = study._dataset(), sim.model
    from fedbench.engine.simulation import simulate

    cfg = sim_config(rounds=1, clients_per_round=study.CLIENTS_PER_ROUND, local_steps=1, batch_size=10,
                     sampling="proportional", seed=3)
    one = simulate(cfg, ds, model, sim.algorithm)
    # the same round by hand: x - lr * mean of the selected clients' full-batch gradients at x
    from fedbench.engine.sampling import select_clients

    clients, _ = select_clients(3, 0, ds.train.sizes, study.CLIENTS_PER_ROUND, "proportional")
    theta0 = model.init(torch_generator(3, -1, "init"))
    grads = []
    for c in clients:
        x, y = ds.train.client(int(c))
        th = theta0.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(model.loss_fn(th, torch.from_numpy(x), torch.from_numpy(y)), th)
        grads.append(g)
    expected = theta0 - 0.1 * torch.stack(grads).mean(0)
    torch.testing.assert_close(one.theta, expected, rtol=1e-4, atol=1e-6)


def test_tuning_selects_by_margin_and_widens_the_grid():
    class Run:
        def __init__(self, acc):
            self.acc = acc

        def series(self, key):
            return [1.0] * (study.ROUNDS + 1) if key == "train/loss" else [self.acc] * (study.ROUNDS + 1)

    def tail(m, lr, s):  # FedAvg peaks at 0.1 by far; every other arm: 0.01 ahead of 0.1 by 0.5 points, within the
        # 1-point spread between the tuning seeds, so the smaller step, 0.01 - then 0.001 (the widening) is worse
        if m == "FedAvg":
            return {0.01: 0.5, 0.1: 0.6, 1.0: 0.3}[lr]
        return {0.001: 0.40, 0.01: 0.505, 0.1: 0.50}[lr] + (0.01 if s == study.TUNING_SEEDS[1] else 0.0)

    asked = []

    def run(jobs):
        asked.append(jobs)
        return {(m, lr, s): Run(tail(m, lr, s)) for m, lr, s in jobs}

    selections = study.tune(run, (0.01, 0.1))
    assert {m: s.step for m, s in selections.items()} == {m: 0.01 for m in study.METHODS if m != "FedAvg"} | {
        "FedAvg": 0.1}
    assert selections["Mime (SGDm)"].added == (0.001,) and selections["FedAvg"].added == (1.0,)
    assert all(s.interior for s in selections.values())
    assert len(asked) == 2 and len(asked[1]) == len(study.METHODS) * 2  # one widening: one new step an arm, 2 seeds
    assert not set(study.TUNING_SEEDS) & set(study.DECLARATION.seeds)


class Constant:
    """An outcome whose test accuracy is ``acc`` % every round."""

    def __init__(self, acc):
        self.acc = acc

    def series(self, key):
        return [1.0] * (study.ROUNDS + 1) if key == "train/loss" else [self.acc / 100] * (study.ROUNDS + 1)


def _entries(monkeypatch, acc):
    """The three claims' entries (study.measure judged by the driver's fedbench.study.contract.entry) with every arm's
    test accuracy ``acc(method, seed)``, each arm's step 0.1 (the middle of a three-step grid, ahead by 10 points)."""
    monkeypatch.setattr(study, "LR_GRID", (0.01, 0.1, 1.0))
    tuning = {(m, lr, s): Constant(50.0 if lr == 0.1 else 40.0)
              for m in study.METHODS for lr in study.LR_GRID for s in study.TUNING_SEEDS}
    judged = {(m, 0.1, s): Constant(acc(m, s)) for s in study.SEEDS for m in study.METHODS}
    run = StudyRun(study.DECLARATION, "pipeline", study.ROUNDS, outcomes=tuning | judged)
    return [contract.entry(run, claim, study.measure(claim, run)) for claim in study.DECLARATION.claims]


def test_rules(monkeypatch):
    def acc_of(table):  # x (1 + 0.001 s): the differences vary with the seed, so a t interval decides (equal per-seed
        return lambda m, s: table[m] * (1 + 0.001 * s)  # differences cover 93.75% with 5 seeds: issue 51)

    base = {"Mime (SGDm)": 80.0, "MimeLite (SGDm)": 79.0, "FedAvg + server momentum": 75.0, "server-only SGDm": 70.0,
            "Mime (SGD)": 72.0, "FedAvg": 74.0, "server-only SGD": 65.0}
    fedavgm, server, usage = _entries(monkeypatch, acc_of(base))
    assert (fedavgm["verdict"], server["verdict"], usage["verdict"]) == ("reproduced",) * 3
    assert usage["effect"]["estimate"] == pytest.approx(((80 - 72) - (75 - 74)) * 1.002)  # 7 points x mean(1 + 0.001 s)
    assert usage["observed"].startswith("Mime's gain from momentum +8.02, FedAvg's +1.00 points (seed means)")
    same = _entries(monkeypatch, lambda m, s: base[m] + 0.1 * s)  # every seed the same differences
    assert {e["verdict"] for e in same} == {"inconclusive"}  # 5 equal values: sign test p = 0.0625, 93.75%
    worse = base | {"MimeLite (SGDm)": 74.0, "server-only SGDm": 85.0, "Mime (SGD)": 80.0}
    fedavgm, server, usage = _entries(monkeypatch, acc_of(worse))
    assert (fedavgm["verdict"], server["verdict"], usage["verdict"]) == ("not-reproduced",) * 3

    def noisy(m, s):
        return base[m] + (10.0 * (s - 2) if m == "FedAvg + server momentum" else 0.0)

    assert _entries(monkeypatch, noisy)[0]["verdict"] == "inconclusive"


def test_mimelite_with_plain_sgd_is_fedavg():
    ds = study._dataset()
    cfg = sim_config(rounds=3, clients_per_round=10, local_steps=4, batch_size=10, sampling="proportional", seed=1)
    from fedbench.algorithms.mime import Mime
    from fedbench.engine.simulation import simulate

    model = study.simulation("FedAvg", 0.05, 0).model
    a = simulate(cfg, ds, model, Mime(lr=0.05, variant="mimelite", base="sgdm", momentum=0.0))
    b = simulate(cfg, ds, model, FedAvg(lr=0.05))
    torch.testing.assert_close(a.theta, b.theta)

"""The stack planner: runs grouped by what they may share, groups cut to balance worker processes, and the cost
model's arithmetic on a hand-made case."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedbench.algorithms import FedAvg, FedProx
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.simulation import RunSpec, SimulationConfig
from fedbench.engine.stacking import ROW_COST, STEP_COST, _pack, piece_cost, plan_stacks, run_cost


def _dataset(sizes: list[int]) -> FederatedDataset:
    split = Split.from_clients([np.zeros((n, 2), np.float32) for n in sizes], [np.zeros(n, np.int64) for n in sizes], (2,))
    return FederatedDataset(name="d", client_ids=tuple(map(str, range(len(sizes)))), train=split, test=split,
                            num_classes=2)


CFG = SimulationConfig(rounds=10, clients_per_round=2, local_epochs=3, batch_size=10, device="cpu")


def test_run_cost_counts_steps_and_rows():
    ds = _dataset([10, 25, 45, 0])  # 1, 3 and 5 batches an epoch; the empty client never trains
    c = run_cost(RunSpec(CFG, ds, FedAvg(lr=0.1)))
    assert c.steps == 15  # the longest chain: 5 batches x 3 epochs
    assert c.rows == pytest.approx(2 * 3 * (1 + 3 + 5) / 3)  # K x mean steps
    half = run_cost(RunSpec(dataclasses.replace(CFG, straggler_fraction=0.5), ds, FedProx(lr=0.1, mu=0.0)))
    assert half.rows == pytest.approx(c.rows * (0.5 + 0.5 * 0.5))  # stragglers keep about half their work
    dropped = run_cost(RunSpec(dataclasses.replace(CFG, straggler_fraction=0.5), ds, FedAvg(lr=0.1)))
    assert dropped.rows == pytest.approx(c.rows * 0.5)  # FedAvg drops them
    assert piece_cost([c, half]) == STEP_COST * 15 + ROW_COST * (c.rows + half.rows)


def test_runs_are_grouped_by_what_they_may_share_and_cut_to_balance_workers():
    ds = _dataset([40 + i for i in range(20)])  # row-steps dominate: cutting a stack pays for its steps
    cfg = dataclasses.replace(CFG, clients_per_round=10)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, alg) for alg in (FedAvg(lr=0.2), FedProx(lr=0.1, mu=0.0),
                                                                            FedProx(lr=0.1, mu=1.0)) for s in range(6)]
    one = plan_stacks(specs, workers=1)
    assert sorted(map(sorted, one)) == [list(range(0, 6)), list(range(6, 18))]  # FedProx mu=0 and mu=1 share a stack
    # FedAvg trains as FedProx with mu = 0 (stacks_as): at FedProx's lr it joins their stack, at another it cannot
    same_lr = [dataclasses.replace(spec, algorithm=FedAvg(lr=0.1)) for spec in specs[:6]] + specs[6:]
    assert sorted(map(sorted, plan_stacks(same_lr, workers=1))) == [list(range(18))]
    two = plan_stacks(specs, workers=2)
    assert sorted(i for p in two for i in p) == list(range(18))  # every run exactly once
    for p in two:
        assert all(i < 6 for i in p) or all(i >= 6 for i in p)  # pieces never mix what cannot share a stack
    costs = [run_cost(s) for s in specs]
    assert max(_pack(two, costs, 2)) < max(_pack(one, costs, 2))  # cutting balanced the two processes
    assert [piece_cost([costs[i] for i in p]) for p in two] == sorted(
        (piece_cost([costs[i] for i in p]) for p in two), reverse=True)  # costliest first


def test_many_groups_are_cut_greedily_in_time():
    """60 groups of 3 runs (3^60 ways to cut them, as the SCAFFOLD quadratics' 66 groups): the greedy search
    plans them, every run once, pieces within a group, and no worse than leaving every group whole."""
    ds = _dataset([40 + i for i in range(20)])
    specs = [RunSpec(dataclasses.replace(CFG, seed=s, local_epochs=1 + g % 7), ds, FedAvg(lr=0.01 * (g + 1)))
             for g in range(60) for s in range(3)]
    pieces = plan_stacks(specs, workers=2)
    assert sorted(i for p in pieces for i in p) == list(range(180))
    assert all(len({i // 3 for i in p}) == 1 for p in pieces)  # a piece never mixes two lr values
    costs = [run_cost(s) for s in specs]
    whole = [list(range(3 * g, 3 * g + 3)) for g in range(60)]
    assert max(_pack(pieces, costs, 2)) <= max(_pack(whole, costs, 2))
    assert len(pieces) < 180  # cut only where it pays, not into single runs

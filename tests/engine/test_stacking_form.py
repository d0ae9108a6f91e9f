"""An algorithm that declares ``stacks_as`` (fedbench.engine.simulation.stacking_form; issue 49, D1) trains as that
form, so its runs share a stack with the form's algorithm: here FedAvg written as FedProx with mu = 0 whose
stragglers are dropped, with ``mu`` and ``keeps_partial_work`` per-row. The merged stack equals the separate
stacks bit for bit on the CPU, and each run alone, and its drawn lockstep chain is the one stack's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import torch

from fedbench.algorithms import FedAvg, FedProx
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate, simulate_stack, stack_key
from fedbench.models import build_model


@dataclass(frozen=True)
class ProxAnyWork(FedProx):  # FedProx whose partial-work rule may differ between the runs of a stack
    stack_varying: ClassVar[tuple[str, ...]] = ("mu", "keeps_partial_work")


@dataclass(frozen=True)
class AvgAsProx(FedAvg):  # FedAvg declaring its stacking form
    def stacks_as(self) -> ProxAnyWork:
        return ProxAnyWork(lr=self.lr, mu=0.0, keeps_partial_work=False)


def _specs():
    data = generate_synthetic(1, 1, num_devices=12, seed=0, lognormal_mean=3.0, lognormal_sigma=0.7, min_samples=20)
    cfg = SimulationConfig(rounds=3, clients_per_round=4, local_epochs=2, batch_size=10, device="cpu",
                           dissimilarity_every=1, checkpoint_every=10**9)
    avg = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=f), data, AvgAsProx(lr=0.05))
           for s, f in ((1, 0.5), (2, 0.0))]
    prox = [RunSpec(dataclasses.replace(cfg, seed=s, straggler_fraction=f), data, ProxAnyWork(lr=0.05, mu=1.0))
            for s, f in ((1, 0.5), (3, 0.5))]
    return data, avg, prox


def test_a_declared_form_shares_a_stack_and_changes_no_number():
    data, avg, prox = _specs()
    model = build_model("mclr", data.feature_shape, data.num_classes)
    assert len({stack_key(s) for s in avg + prox}) == 1  # one stack, where the classes kept them apart
    merged = simulate_stack(model, avg + prox)
    apart = simulate_stack(model, avg) + simulate_stack(model, prox)
    plain = [simulate(s.cfg, s.dataset, model, FedAvg(lr=0.05)) for s in avg]  # the algorithm itself, no form
    for a, b in zip(merged, apart):
        assert torch.equal(a.theta, b.theta) and _numbers(a.history) == _numbers(b.history)
    for a, b in zip(merged[:2], plain):
        assert torch.equal(a.theta, b.theta) and a.param_digest == b.param_digest
    assert merged[0].stack_size == 4


def _numbers(history: list[dict]) -> list[dict]:
    """A history's rows without their timings."""
    return [{k: v for k, v in row.items() if not k.endswith("time_s")} for row in history]


def test_the_synthetic_chain_of_a_merged_stack_is_the_one_stacks():
    from fedbench.bench.lockstep import chain, run_steps
    from fedbench.engine.simulation import build_stack

    data, avg, prox = _specs()
    model = build_model("mclr", data.feature_shape, data.num_classes)
    steps = [run_steps(build_stack(model, [s])[1][0], 3) for s in avg + prox]
    groups: dict = {}
    for i, s in enumerate(avg + prox):
        groups.setdefault(stack_key(s), []).append(i)
    assert chain(steps, list(groups.values())) == chain(steps, [[0, 1, 2, 3]])

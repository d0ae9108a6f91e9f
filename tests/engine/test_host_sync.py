"""Where a round would make the host wait for a CUDA device (fedbench.engine.host_sync), counted on the CPU: the
counter itself on a hand-made sequence, and every algorithm's round, whose waits are the stack's, not its runs'."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import build_algorithm
from fedbench.data.synthetic import generate_synthetic
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.host_sync import HostSyncs
from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack
from fedbench.models import build_model
from fedbench.ops import to_device
from tests.algorithms.cases import CASES


def test_the_counter_counts_reads_and_blocking_copies_by_line():
    t = torch.arange(4.0)
    with HostSyncs() as syncs:
        t.sum().item()  # a read
        bool(t[0] > 1)  # a branch on a tensor: a read
        t.to(torch.float64)  # a dtype change moves nothing
        t.to("cpu")  # a copy to a device, blocking
        t.to("cpu", non_blocking=True)
        torch.as_tensor(np.zeros(2), device="cpu")  # made on a device from host data, blocking
        to_device(np.zeros(2), "cpu")  # the engine's way: no copy on the CPU, non-blocking on CUDA
    assert syncs.total("read") == 2 and syncs.total("copy") == 2 and syncs.total() == 4
    assert {line.split(":")[0] for _, line in syncs.count} == {"?"}  # none of these lines is fedbench's


def test_to_device_gives_the_array_itself_on_the_cpu_and_converts_on_the_host():
    a = np.array([0.1, 0.7])
    t = to_device(a, "cpu")
    assert t.dtype == torch.float64 and np.shares_memory(t.numpy(), a)
    assert torch.equal(to_device(a, torch.device("cpu"), torch.float32), torch.as_tensor(a, dtype=torch.float32))


DATA = generate_synthetic(1.0, 1.0, False, num_devices=30, seed=0, train_fraction=0.9)
MODEL = build_model("mclr", DATA.feature_shape, DATA.num_classes)
# evaluated at round 0 and on the final model only: the rounds between run on the divergence signal
PROTOCOL = (EvalSpec("train", every=10_000), EvalSpec("test", every=10_000))
# The waits a run adds to a round between evaluations, by algorithm, and why (fedbench.engine.simulation's docstring
# lists what stays on the host): a state hook that reads the model's losses (Delta-FL's filter_cohort: .cpu() and
# .numpy() of one read), and an algorithm that reads the training loss every round (FedProx with adaptive mu: its
# evaluation reads the stack's per-device means once, .cpu() and .numpy(), and each run's loss and accuracy)
PER_RUN = {"delta_fl": 2, "fedprox_adaptive": 2}
PER_STACK = {"fedprox_adaptive": 2}
EVERY_ROUND = {"fedprox_adaptive"}  # evaluates the training loss every round: no divergence signal to read


def _syncs_per_round(name: str, runs: int) -> HostSyncs:
    """The waits of rounds 1-2 of a stack of ``runs`` runs: a 5-round simulation's minus a 3-round one's (the first
    evaluation, the start and the final evaluation cancel), halved."""
    hyper, changes = CASES[name]
    counts = []
    for rounds in (3, 5):
        cfg = SimulationConfig(rounds=rounds, clients_per_round=5, local_epochs=1, batch_size=10, device="cpu",
                               evaluations=PROTOCOL, dissimilarity_every=0, **changes)
        specs = [RunSpec(dataclasses.replace(cfg, seed=s), DATA, build_algorithm(name, **{"lr": 0.05, **hyper}))
                 for s in range(runs)]
        with HostSyncs() as syncs:
            simulate_stack(MODEL, specs)
        counts.append(syncs)
    out = HostSyncs()
    for key in counts[1].count | counts[0].count:
        diff = counts[1].count[key] - counts[0].count[key]
        assert diff % 2 == 0, (key, diff)
        if diff:
            out.count[key] = diff // 2
    return out


@pytest.mark.parametrize("name", sorted(set(CASES) - {"sequential_sgd"}))  # sequential SGD runs on pooled data
def test_a_stacked_round_waits_for_the_device_once_per_stack_not_once_per_run(name):
    """The same waits per round for a stack of 3 runs as for one run (plus what PER_RUN says): the schedule goes to the
    device without a blocking copy, the aggregation weights are checked on the host, and the divergence signal of
    every run is read back in one read. Before, a FedProx round waited 3 times a run (2 for the weights' check, 1 for
    the signal), and FedProxVR's and FedDane's client_init read the cohort back."""
    one, three = _syncs_per_round(name, 1), _syncs_per_round(name, 3)
    assert three.total() - one.total() == 2 * PER_RUN.get(name, 0), (one.count, three.count)
    assert one.total("copy") == 0, one.count  # nothing copied to the device blocks
    signal = 0 if name in EVERY_ROUND else 2  # the signal's one read: .cpu() and .numpy()
    assert one.count[("read", "engine/simulation.py:" + _signal_line())] == signal
    assert three.count[("read", "engine/simulation.py:" + _signal_line())] == signal
    assert one.total("read") == signal + PER_STACK.get(name, 0) + PER_RUN.get(name, 0), one.count


def _signal_line() -> str:
    """The line of fedbench.engine.simulation._check_signal that reads the cohort losses back."""
    import inspect

    from fedbench.engine import simulation

    lines, first = inspect.getsourcelines(simulation._check_signal)
    return str(first + next(i for i, line in enumerate(lines) if ".cpu().numpy()" in line))

"""Where a round would make the host wait for a CUDA device (fedbench.engine.host_sync), counted on the CPU: the
counter itself on a hand-made sequence, and every algorithm's round, whose waits are the stack's, not its runs'."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.bench.host_syncs import PER_RUN, measure, round_syncs, table
from fedbench.engine.host_sync import HostSyncs
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


# What each run adds to a round (fedbench.bench.host_syncs.PER_RUN says why), and what a stack reads once: FedProx with
# adaptive mu evaluates the training loss every round, and every run's metrics come back in one read (.cpu() and
# .numpy())
PER_STACK = {"fedprox_adaptive": 2}


@pytest.mark.parametrize("name", sorted(set(CASES) - {"sequential_sgd"}))  # sequential SGD runs on pooled data
def test_a_stacked_round_waits_for_the_device_once_per_stack_not_once_per_run(name):
    """The same waits per round for a stack of 3 runs as for one run (plus what PER_RUN says): the schedule goes to the
    device without a blocking copy, the aggregation weights are checked on the host, the divergence signal stays on
    the device until its window is read back (not in a round between evaluations: once a block, counted by
    fedbench.bench.proxies), and every run's evaluation comes back in one read. Before, a FedProx round waited 3 times
    a run (2 for the weights' check, 1 for the signal), then 2 a stack (the signal read every round), an evaluation
    4-6 times a run, and FedProxVR's and FedDane's client_init read the cohort back."""
    hyper, changes = CASES[name]
    one, three = (round_syncs(name, hyper, changes, runs) for runs in (1, 3))
    assert three["reads"] - one["reads"] == 2 * PER_RUN.get(name, 0), (one, three)
    assert one["copies"] == three["copies"] == 0, (one, three)  # nothing copied to the device blocks
    assert not [line for line in one["lines"] | three["lines"] if line.startswith("read@engine/simulation.py")]
    assert one["reads"] == PER_STACK.get(name, 0) + PER_RUN.get(name, 0), one
    assert one["torch"] is None  # torch's own count is CUDA's


def test_the_bench_table_gives_what_each_further_run_adds():
    rows = measure({n: CASES[n] for n in ("fedprox", "delta_fl", "sequential_sgd")})
    assert [r["algorithm"] for r in rows] == ["delta_fl", "fedprox"]  # sequential SGD has no stack
    assert [r["per_run"] for r in rows] == [2, 0] and all(r["as_declared"] for r in rows)
    assert table(rows)[2:] == ["| delta_fl | 2 | 6 | 2 | - |", "| fedprox | 0 | 0 | 0 | - |"]


def test_an_evaluation_of_a_stack_reads_back_once_whatever_its_models():
    """evaluate_many's metrics of M models (train, test, per-device means, dissimilarity) come back in one read,
    each model's as evaluated alone."""
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.metrics import DeviceData, evaluate, evaluate_many
    from fedbench.models import build_model
    from fedbench.seeding import torch_generator

    data = generate_synthetic(1.0, 1.0, False, num_devices=8, seed=0, train_fraction=0.9)
    model = build_model("mclr", data.feature_shape, data.num_classes)
    kernel, device_data = choose_kernel(model, "cpu"), DeviceData.build(data, torch.device("cpu"))
    thetas = torch.stack([model.init(torch_generator(s, -1, "init")) for s in range(4)])
    reads = []
    for m in (1, 4):
        with HostSyncs() as syncs:
            evs = evaluate_many(kernel, thetas[:m], device_data, True, splits=("train", "test"))
        reads.append(syncs.total("read"))
    assert reads == [2, 2]  # .cpu() and .numpy() of the one read
    alone = evaluate(kernel, thetas[3], device_data, True, splits=("train", "test"))
    assert evs[3].scalars() == alone.scalars()
    np.testing.assert_array_equal(evs[3].device_test_accuracy, alone.device_test_accuracy)

"""Memory planning of stacks (issue 20): the bytes of one stack step by part, exact for a small model; the
algorithms' state counted on the meta device; plan_stacks cutting a group to what fits a (fake) free memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from fedbench.algorithms import FedAvg, FedProx
from fedbench.algorithms.scaffold import Scaffold
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.simulation import RunSpec, SimulationConfig
from fedbench.engine.stacking import (
    AlgorithmVectors,
    algorithm_vectors,
    layer_output_floats,
    plan_stacks,
    step_memory,
)
from fedbench.models import cifar_cnn, leaf_femnist_cnn, mclr


def _dataset(sizes: list[int], features: int = 5) -> FederatedDataset:
    split = Split.from_clients([np.zeros((n, features), np.float32) for n in sizes],
                               [np.zeros(n, np.int64) for n in sizes], (features,))
    return FederatedDataset(name="d", client_ids=tuple(map(str, range(len(sizes)))), train=split, test=split,
                            num_classes=3)


def test_algorithm_state_in_parameter_vectors():
    assert algorithm_vectors(FedAvg(lr=0.1), 18, 4) == AlgorithmVectors(server=1, table=0, local=1, broadcast=1)
    assert algorithm_vectors(FedProx(lr=0.1, mu=1.0), 18, 4) == AlgorithmVectors(server=1, table=0, local=1, broadcast=1)
    # SCAFFOLD: theta and c on the server, c_i per client, (y_i, c - c_i) per client row
    assert algorithm_vectors(Scaffold(lr=0.1), 18, 4) == AlgorithmVectors(server=2, table=1, local=2, broadcast=2)


def test_layer_outputs_per_sample_of_the_papers_cnns():
    assert layer_output_floats(mclr(5, 3), torch.zeros(1, 5)) == 3  # the logits
    # conv 6x28x28, relu, pool 6x14x14, conv 16x10x10, relu, pool 16x5x5, flatten 400, 120, 120, 84, 84, 10
    assert layer_output_floats(cifar_cnn(), torch.zeros(1, 3, 32, 32)) == (
        2 * 6 * 28 * 28 + 6 * 14 * 14 + 2 * 16 * 10 * 10 + 16 * 5 * 5 + 400 + 2 * 120 + 2 * 84 + 10)
    assert layer_output_floats(leaf_femnist_cnn(), torch.zeros(1, 784)) == (
        2 * 32 * 28 * 28 + 32 * 14 * 14 + 2 * 64 * 14 * 14 + 64 * 7 * 7 + 3136 + 2 * 2048 + 62)


def test_step_memory_by_part_and_runs_that_fit_exactly():
    model = mclr(5, 3)  # P = 18 float32: 72 bytes a vector; 3 logits (12 bytes) per sample
    memory = step_memory(model, algorithm_vectors(FedAvg(lr=0.1), 18, 4), torch.zeros(1, 5), batch_size=10,
                         eval_batch=100, num_clients=4)
    assert (memory.per_run, memory.per_row, memory.activations_per_sample, memory.evaluation) == (72, 360, 12, 1200)
    # per row: local model before and after the step (2), gradient and lr * g (2), its run's broadcast (1)
    assert memory.bytes(runs=2, rows_per_run=3) == 2 * 72 + 6 * 360 + 12 * 10 * 2 + 1200 == 3744
    # 80% of 10,000 bytes: (8000 - 1440 fixed) // (72 + 3 x 360 per run) = 5 runs
    assert memory.runs_that_fit(3, 10_000) == 5
    assert memory.runs_that_fit(3, 1_000) == 0
    batched = dataclasses.replace(memory, batched_activations=True)  # a batched kernel holds every row's activations
    assert batched.bytes(2, 3) == 3744 + 12 * 10 * 2 * 5
    scaffold = step_memory(model, algorithm_vectors(Scaffold(lr=0.1), 18, 4), torch.zeros(1, 5), 10, 100, 4)
    assert (scaffold.per_run, scaffold.per_row) == (72 * (2 + 4), 72 * (2 * 2 + 2 + 2))  # the table: 4 clients x c_i


def test_plan_stacks_cuts_a_group_to_the_free_memory():
    ds = _dataset([20] * 8)
    cfg = SimulationConfig(rounds=2, clients_per_round=3, local_epochs=1, batch_size=10, device="cpu")
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), ds, FedAvg(lr=0.1)) for s in range(12)]
    model = mclr(5, 3)
    whole = plan_stacks(specs, workers=1, model_of=lambda s: model)  # the CPU: no memory limit
    assert [sorted(p) for p in whole] == [list(range(12))]
    # mclr's kernel is batched: evaluation chunks of 4096 samples fixed (12 x 4096 bytes); a run of 3 rows
    # 72 + 3 x (360 + 12 x 10 x 2 activations) = 1872 bytes: at 80% of this free memory 3 runs fit, not 4
    free = int((12 * 4096 + 3.5 * 1872) / 0.8)
    cut = plan_stacks(specs, workers=1, model_of=lambda s: model, free_bytes=free)
    assert sorted(i for p in cut for i in p) == list(range(12))
    assert [len(p) for p in cut] == [3, 3, 3, 3]  # ceil(12 / 3) pieces, not more
    assert [sorted(p) for p in plan_stacks(specs, 1, model_of=lambda s: model, free_bytes=None)] == [list(range(12))]

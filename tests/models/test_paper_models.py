"""Every paper's model: its parameter count against the authors' (the table of reference/real-data.md section 6,
at full size, frozen tables built on 'meta' so nothing is allocated); every registered model trains through
``simulate`` (FedAvg, two rounds, CPU, tiny synthetic data) with its frozen tensors untouched and outside theta;
CUDA equals CPU where a GPU is present."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from fedbench.algorithms import FedAvg, build_algorithm
from fedbench.algorithms.sequential_sgd import pool_clients, sequential_config
from fedbench.data.format import FederatedDataset, Split
from fedbench.engine.simulation import SimulationConfig, simulate
from fedbench.models import BUILDERS, EMBEDDING_MODELS, build_model
from fedbench.seeding import torch_generator
from tests.algorithms.cases import CASES

# name -> (feature shape, classes, frozen table [V, d] or None, trainable parameters, frozen floats), at the authors'
# sizes. The FedProx LSTMs count TF's one bias per gate; their frozen tensors are the GloVe table and the
# constant forget-bias vectors (b_hh) of the two layers.
GLOVE = 400_000 + 1  # GloVe 6B's words and the unknown-word row
AUTHORS = {
    "mclr": ((784,), 10, None, 7_850, 0),  # FedProx MNIST
    "fedprox_shakespeare_lstm": ((80,), 80, None, 817_872, 2 * 4 * 256),
    "fedprox_sent140_lstm": ((25,), 2, (GLOVE, 300), 243_861, 120_000_300 + 2 * 4 * 100),
    "deltafl_emnist_linear": ((784,), 62, None, 48_608, 0),
    "deltafl_emnist_cnn": ((1, 28, 28), 62, None, 115_646, 0),
    "deltafl_sent140_linear": ((50,), 2, None, 50, 0),
    "deltafl_sent140_lstm": ((20,), 2, (GLOVE, 50), 20_451, 20_000_050),
    "deltafl_shakespeare_gru": ((20,), 53, None, 69_928, 0),
    "fedlaavg_cifar_cnn": ((3, 32, 32), 10, None, 62_006, 0),
    "scaffold_logreg": ((784,), 47, None, 36_895, 0),
    "scaffold_mlp": ((784,), 47, None, 213_039, 0),  # width 256 is our choice (the paper gives none)
    "leaf_femnist_cnn": ((784,), 62, None, 6_603_710, 0),
    "fedproxvr_cnn": ((784,), 10, None, 1_663_370, 0),
    "fashion_cnn": ((1, 28, 28), 10, None, 44_426, 0),  # cifar_cnn's layers on 28x28x1: ours, not an author's
}


@pytest.mark.parametrize("name", sorted(AUTHORS))
def test_parameter_count_equals_the_authors(name):
    shape, classes, table, trainable, frozen = AUTHORS[name]
    embedding = torch.empty(*table, device="meta") if table else None
    model = build_model(name, shape, classes, embedding)
    assert model.num_params == trainable
    assert model.num_frozen == frozen
    layout_names = {s.name for s in model.layout}
    assert not layout_names & set(model.frozen)  # frozen tensors are never in theta


def test_fedprox_lstms_with_pytorchs_two_biases_would_count_more():
    """A stock nn.LSTM has b_ih and b_hh per gate: the counts the reference gives for PyTorch's layers."""
    shakespeare = build_model("fedprox_shakespeare_lstm", (80,), 80)
    sent140 = build_model("fedprox_sent140_lstm", (25,), 2, torch.empty(GLOVE, 300, device="meta"))
    for model, stock in ((shakespeare, 819_920), (sent140, 244_661)):
        b_hh = sum(t.numel() for k, t in model.frozen.items() if "bias_hh" in k)
        assert model.num_params + b_hh == stock


# name -> (feature shape, classes) of the tiny synthetic data each registered model trains on below
TINY = {
    "mclr": ((6,), 3), "scaffold_logreg": ((6,), 3), "scaffold_mlp": ((6,), 3), "deltafl_emnist_linear": ((6,), 3),
    "deltafl_sent140_linear": ((5,), 2),
    "cnn": ((3, 32, 32), 3), "cifar_cnn": ((3, 32, 32), 3), "fedlaavg_cifar_cnn": ((3, 32, 32), 3),
    "deltafl_emnist_cnn": ((1, 28, 28), 3), "leaf_femnist_cnn": ((784,), 3), "fedproxvr_cnn": ((784,), 3),
    "fashion_cnn": ((784,), 3),
    "fedprox_shakespeare_lstm": ((4,), 7), "deltafl_shakespeare_gru": ((4,), 7),
    "fedprox_sent140_lstm": ((4,), 2), "deltafl_sent140_lstm": ((4,), 2),
}
TOKENS = {"fedprox_shakespeare_lstm", "deltafl_shakespeare_gru", "fedprox_sent140_lstm", "deltafl_sent140_lstm"}
VOCAB = 7  # token ids 0..6: the characters of the tiny Shakespeare models, the rows of the tiny word tables


def tiny_dataset(name: str, seed: int = 0) -> FederatedDataset:
    """Three clients with 5, 3 and 6 training samples (and 2 test samples each) shaped for model ``name``."""
    shape, classes = TINY[name]
    rng = np.random.default_rng(seed)

    def split(sizes: list[int]) -> Split:
        n = sum(sizes)
        if name in TOKENS:
            x = rng.integers(0, VOCAB, (n, *shape)).astype(np.int64)
        else:
            x = rng.standard_normal((n, *shape)).astype(np.float32)
        y = rng.integers(0, classes, n).astype(np.int64)
        return Split(x=x, y=y, offsets=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))

    return FederatedDataset(name=f"tiny-{name}", client_ids=("a", "b", "c"), train=split([5, 3, 6]),
                            test=split([2, 2, 2]), num_classes=classes)


def tiny_embedding(name: str) -> torch.Tensor | None:
    """A small frozen word table (the last row the zero unknown-word row, as the data layer stores GloVe)."""
    if name not in EMBEDDING_MODELS:
        return None
    table = torch.randn(VOCAB, 6, generator=torch.Generator().manual_seed(3))
    table[-1] = 0
    return table


def test_every_registered_model_has_tiny_data():
    assert set(TINY) == set(BUILDERS)
    assert set(AUTHORS) <= set(BUILDERS)


def _train(name: str, device: str = "cpu", kernel: str = "auto"):
    ds = tiny_dataset(name)
    model = build_model(name, ds.feature_shape, ds.num_classes, tiny_embedding(name))
    cfg = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=1, batch_size=2, seed=3, device=device,
                           checkpoint_every=10_000, kernel=kernel)
    return model, simulate(cfg, ds, model, FedAvg(lr=0.1))


@pytest.mark.parametrize("name", sorted(TINY))
def test_every_model_trains_through_simulate_with_frozen_tensors_untouched(name):
    ds = tiny_dataset(name)
    model = build_model(name, ds.feature_shape, ds.num_classes, tiny_embedding(name))
    frozen_before = {k: v.clone() for k, v in model.frozen.items()}
    cfg = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=1, batch_size=2, seed=3, device="cpu",
                           checkpoint_every=10_000)
    result = simulate(cfg, ds, model, FedAvg(lr=0.1))
    assert len(result.history) == 3 and not result.diverged
    assert all(np.isfinite(row["train/loss"]) and np.isfinite(row["test/accuracy"]) for row in result.history)
    assert result.theta.shape == (model.num_params,)  # theta holds the trainable parameters only
    theta0 = model.init(torch_generator(3, -1, "init"))
    assert float((result.theta - theta0).abs().max()) > 0  # it trained
    for key, before in frozen_before.items():  # frozen tensors: untouched, shared, never averaged
        assert torch.equal(model.frozen[key], before), key
    if name in TOKENS:
        assert result.kernel == "loop"
        _, batched = _train(name, kernel="rnn")  # the batched recurrent kernel trains the same model
        assert batched.kernel == "rnn"
        torch.testing.assert_close(batched.theta, result.theta, rtol=0, atol=1e-5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
@pytest.mark.parametrize("name", sorted(AUTHORS))
def test_cuda_equals_cpu(name):
    _, cpu = _train(name, "cpu")
    _, gpu = _train(name, "cuda")
    assert gpu.device.startswith("cuda")
    torch.testing.assert_close(gpu.theta, cpu.theta, rtol=1e-4, atol=1e-4)
    if name in TOKENS:
        _, batched = _train(name, "cuda", kernel="rnn")
        torch.testing.assert_close(batched.theta, cpu.theta, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name,shape,classes,embedding,message", [
    ("fedprox_sent140_lstm", (25,), 2, None, "embeds words with a frozen table: pass the dataset's embedding"),
    ("deltafl_sent140_lstm", (20,), 2, torch.zeros(4, 5, dtype=torch.int64), "floating \\[V, d\\] tensor"),
    ("deltafl_sent140_lstm", (20, 1), 2, torch.zeros(4, 5), "sequences of token ids"),
    ("fedprox_sent140_lstm", (25,), 3, torch.zeros(4, 5), "binary classifier"),
    ("deltafl_sent140_linear", (50,), 62, None, "binary classifier"),
    ("deltafl_shakespeare_gru", (20,), 200, None, "128 outputs; it cannot classify 200 classes"),
    ("leaf_femnist_cnn", (3, 28, 28), 62, None, "28x28 grey images"),
    ("fedproxvr_cnn", (60,), 10, None, "28x28 images"),
])
def test_bad_inputs_are_refused_in_one_line(name, shape, classes, embedding, message):
    with pytest.raises(ValueError, match=message):
        build_model(name, shape, classes, embedding)


@pytest.mark.parametrize("algorithm", sorted(CASES))
def test_every_algorithm_trains_a_recurrent_model_with_the_batched_kernel(algorithm):
    """Every algorithm's paths (full-data gradients, per-client tables, cohort losses) through the rnn kernel, on
    the FedProx Sent140 LSTM over a tiny frozen table."""
    hyper, changes = CASES[algorithm]
    ds = tiny_dataset("fedprox_sent140_lstm")
    model = build_model("fedprox_sent140_lstm", ds.feature_shape, ds.num_classes, tiny_embedding("fedprox_sent140_lstm"))
    frozen_before = {k: v.clone() for k, v in model.frozen.items()}
    cfg = SimulationConfig(rounds=2, clients_per_round=2, local_epochs=1, batch_size=2, seed=3, device="cpu",
                           checkpoint_every=10_000, kernel="rnn")
    cfg = dataclasses.replace(cfg, **changes)
    if algorithm == "sequential_sgd":
        cfg, ds = sequential_config(cfg, local_steps=2), pool_clients(ds)
    result = simulate(cfg, ds, model, build_algorithm(algorithm, **({"lr": 0.1} | hyper)))
    assert result.kernel == "rnn" and not result.diverged
    assert all(np.isfinite(row["train/loss"]) for row in result.history)
    assert all(torch.equal(model.frozen[k], v) for k, v in frozen_before.items())

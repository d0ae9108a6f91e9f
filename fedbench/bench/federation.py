"""The models the benchmark measures, and small synthetic federations of their input shape.

Adding a model to the benchmark is one line in :data:`BENCH_MODELS`: the name it is registered under in
``fedbench.models.BUILDERS`` and the inputs it takes. A line whose model is not registered on this branch is
reported as skipped, not an error, so the table grows as models land.

The data is random (speed does not depend on the values): float features N(0, 1), or token ids for models
with integer inputs. Client k holds 20 + int(LogNormal(3, 0.5)) training samples (22 to about 100: unequal
sizes and partial last batches, as real federations have) and 2 test samples (evaluation is not timed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fedbench.bench.machine import synthetic_inputs
from fedbench.data.format import FederatedDataset, Split
from fedbench.models import BUILDERS, build_model
from fedbench.models.spec import Model
from fedbench.seeding import rng, torch_generator

CLIENT_SIZES = (20, 3.0, 0.5)  # n_k = 20 + int(LogNormal(mean 3.0, sigma 0.5))
TEST_PER_CLIENT = 2


@dataclass(frozen=True)
class BenchModel:
    name: str  # its key in fedbench.models.BUILDERS
    feature_shape: tuple[int, ...]  # one sample's input shape
    num_classes: int
    quick_steps: int = 0  # --quick: every client runs this many local steps (0: one full epoch, as without it)
    vocabulary: int | None = None  # integer inputs: token ids drawn below this (None: the model's embedding rows)
    embedding: tuple[int, int] | None = None  # a frozen word table [rows, dim] of random values, for the models
    # that take one (the real GloVe 6B table has 400,001 rows; speed depends on its dimension, not its rows)
    about: str = ""

    def build(self) -> Model:
        table = None
        if self.embedding is not None:
            table = torch.randn(*self.embedding, generator=torch_generator(0, -1, "data", 2))
        return build_model(self.name, self.feature_shape, self.num_classes, embedding=table)

    @property
    def available(self) -> bool:
        return self.name in BUILDERS


BENCH_MODELS: tuple[BenchModel, ...] = (
    BenchModel("mclr", (60,), 10, about="softmax regression on Synthetic(1,1)'s 60 features"),
    BenchModel("leaf_femnist_cnn", (1, 28, 28), 62, quick_steps=1, about="LEAF's FEMNIST CNN"),
    BenchModel("cifar_cnn", (3, 32, 32), 10, quick_steps=2, about="FedLaAvg's CIFAR-10 CNN (PyTorch tutorial)"),
    BenchModel("fedprox_shakespeare_lstm", (80,), 80, quick_steps=1, vocabulary=80,
               about="FedProx's stacked character LSTM"),
    BenchModel("fedprox_sent140_lstm", (25,), 2, quick_steps=1, vocabulary=20_000, embedding=(20_000, 300),
               about="FedProx's Sent140 LSTM over a frozen 300d word table"),
)
BY_NAME = {m.name: m for m in BENCH_MODELS}


def bench_model(name: str) -> BenchModel:
    if name not in BY_NAME:
        raise ValueError(f"unknown benchmark model {name!r}; allowed: {', '.join(BY_NAME)}")
    return BY_NAME[name]


def client_sizes(num_clients: int, seed: int = 0) -> np.ndarray:
    lo, mean, sigma = CLIENT_SIZES
    return lo + rng(seed, -1, "data", 0).lognormal(mean, sigma, num_clients).astype(np.int64)


def make_federation(spec: BenchModel, model: Model, num_clients: int, seed: int = 0,
                    sizes: np.ndarray | None = None) -> FederatedDataset:
    """``num_clients`` clients of random data shaped for ``model`` (``sizes``: training samples per client)."""
    sizes = client_sizes(num_clients, seed) if sizes is None else np.asarray(sizes, dtype=np.int64)
    n_train = int(sizes.sum())
    x, y = synthetic_inputs(model, spec.feature_shape, spec.num_classes, n_train + TEST_PER_CLIENT * num_clients,
                            torch_generator(seed, -1, "data", 1), spec.vocabulary)
    x, y = x.numpy(), y.numpy()

    def split(lo: int, counts: np.ndarray) -> Split:
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return Split(x=x[lo: lo + offsets[-1]], y=y[lo: lo + offsets[-1]], offsets=offsets)

    return FederatedDataset(
        name=f"bench_{spec.name}_{num_clients}", client_ids=tuple(f"c{k}" for k in range(num_clients)),
        train=split(0, sizes), test=split(n_train, np.full(num_clients, TEST_PER_CLIENT)),
        num_classes=spec.num_classes, source={"generator": "fedbench.bench.federation", "seed": seed},
    )

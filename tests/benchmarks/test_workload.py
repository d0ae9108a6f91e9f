"""The papers' workload (issue 10) as pytest-benchmark cases: one round of FedProx's Synthetic(1,1) study at the
paper's settings for R = 1 and R = 15 runs, stacked (simulate_stack) and one by one (simulate), and one round
of one run through the numpy per-client loop.

Run them in their own session: ``pytest tests/benchmarks --benchmark-only``. The engine's cases time whole
one-round simulations (setup and evaluation included); ``fedbench bench`` separates the parts and projects
to 200 rounds.
"""

from __future__ import annotations

import pytest
import torch

from fedbench.bench import numpy_loop, studies
from fedbench.engine.simulation import RunSpec, simulate, simulate_stack
from fedbench.models import build_model

STUDY = studies.fedprox_study()
SUBSETS = ("R = 1", "R = 15")


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _specs(label: str) -> list[RunSpec]:
    runs = [STUDY.runs[i] for i in STUDY.subsets[label]]
    return [RunSpec(STUDY.config(r, 1, "cpu"), STUDY.dataset(r.dataset), STUDY.algorithm(r)) for r in runs]


def _model(spec: RunSpec):
    return build_model(STUDY.model, spec.dataset.feature_shape, spec.dataset.num_classes)


@pytest.mark.parametrize("label", SUBSETS)
def test_stacked_round(benchmark, label):
    specs = _specs(label)
    model = _model(specs[0])
    benchmark.group = f"fedprox-synthetic-{label}"
    benchmark.pedantic(lambda: simulate_stack(model, specs), rounds=3, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("label", SUBSETS)
def test_one_by_one_round(benchmark, label):
    specs = _specs(label)
    model = _model(specs[0])
    benchmark.group = f"fedprox-synthetic-{label}"
    benchmark.pedantic(lambda: [simulate(s.cfg, s.dataset, model, s.algorithm) for s in specs], rounds=3,
                       iterations=1, warmup_rounds=1)


def test_numpy_loop_round(benchmark):
    run = STUDY.runs[STUDY.subsets["R = 1"][0]]
    settings = numpy_loop.Settings(clients_per_round=STUDY.clients_per_round, local_epochs=STUDY.local_epochs,
                                   batch_size=STUDY.batch_size, lr=STUDY.lr, mu=run.mu,
                                   straggler_fraction=run.stragglers, keeps_stragglers=True)
    loop = numpy_loop.NumpyRun(STUDY.dataset(run.dataset), settings, run.seed)
    benchmark.group = "fedprox-synthetic-R = 1"
    benchmark.pedantic(lambda: loop.round(0), rounds=3, iterations=1, warmup_rounds=1)


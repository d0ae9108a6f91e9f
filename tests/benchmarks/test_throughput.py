"""Kernel throughput (issue 9) as pytest-benchmark cases: one engine round (schedule_round + run_round) per
(model, cohort, kernel), and one centralized round at batch = cohort x 10 per implementation.

Run them in their own session: ``pytest tests/benchmarks --benchmark-only`` (the normal test run passes
``--benchmark-skip`` from pyproject.toml, which skips them before any case is built). samples/s of a case is
``extra_info['samples_per_round']`` over the round time; ``fedbench bench`` prints the ratios and the floor.
"""

from __future__ import annotations

import pytest
import torch

from fedbench.bench import throughput
from fedbench.bench.federation import BENCH_MODELS, make_federation
from fedbench.engine.kernels import choose_kernel, kernel_names

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
COHORTS = (10, 100)
MODELS = [m for m in BENCH_MODELS if m.available]
KERNEL_CASES = [(m, k, kern) for m in MODELS for k in COHORTS for kern in kernel_names(m.build())]
CENTRAL_CASES = [(m, k, impl) for m in MODELS for k in COHORTS for impl in ("module", "functional", "kernel")]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `fedbench bench` does by default on CPU
    yield
    torch.set_num_threads(threads)


def _federation(spec, cohort):
    model = spec.build()
    return model, make_federation(spec, model, cohort)


@pytest.mark.parametrize("spec,cohort,kernel", KERNEL_CASES, ids=[f"{m.name}-{k}-{kern}" for m, k, kern in KERNEL_CASES])
def test_federated_round(benchmark, spec, cohort, kernel):
    model, ds = _federation(spec, cohort)
    one_round = throughput.federated_round(model, ds, DEVICE, kernel, local_steps=0, seed=0)
    benchmark.group = f"{spec.name}-cohort{cohort}"
    benchmark.extra_info.update(samples_per_round=int(ds.train.sizes.sum()), model=spec.name, cohort=cohort,
                                kernel=kernel, device=str(DEVICE))
    benchmark.pedantic(one_round, rounds=5, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("spec,cohort,impl", CENTRAL_CASES, ids=[f"{m.name}-{k}-{i}" for m, k, i in CENTRAL_CASES])
def test_centralized_round(benchmark, spec, cohort, impl):
    model, ds = _federation(spec, cohort)
    chosen = choose_kernel(model, DEVICE).name
    paths, steps = throughput.centralized_rounds(model, ds, DEVICE, chosen, cohort * throughput.CLIENT_BATCH,
                                                 int(ds.train.sizes.sum()), seed=0)
    if impl not in paths:
        pytest.skip(f"{spec.name}'s module does not materialize")
    benchmark.group = f"{spec.name}-cohort{cohort}"
    benchmark.extra_info.update(samples_per_round=steps * cohort * throughput.CLIENT_BATCH, model=spec.name,
                                cohort=cohort, implementation=impl, device=str(DEVICE))
    benchmark.pedantic(paths[impl], rounds=5, iterations=1, warmup_rounds=1)

"""A client step of the papers' CNNs taken apart (fedbench.bench.step_parts; issue 20) as pytest-benchmark
cases: one group per (model, cohort), one case per part (gradients alone, the loop kernel's placed gradients,
FedAvg's step as the engine runs it, the engine round with one step per client, the in-place headroom path).
Each call is one step of every client of the cohort. Run with ``pytest tests/benchmarks --benchmark-only``;
``fedbench bench --parts steps`` prints the same parts against the FLOP floor."""

from __future__ import annotations

import pytest
import torch

from fedbench.bench import step_parts
from fedbench.bench.federation import BY_NAME

DEVICE = torch.device("cpu")
COHORT = 10
CASES = [(m, p) for m in step_parts.MODELS for p in step_parts.PARTS]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `fedbench bench` does by default on CPU
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("model_name,part", CASES, ids=[f"{m}-{p}" for m, p in CASES])
def test_client_step_part(benchmark, model_name, part):
    spec = BY_NAME[model_name]
    paths, _ = step_parts.step_paths(spec.build(), spec, COHORT, DEVICE)
    benchmark.group = f"client-step-{model_name}-cohort{COHORT}"
    benchmark.extra_info.update(model=model_name, cohort=COHORT, part=part, client_steps_per_call=COHORT)
    benchmark.pedantic(paths[part], rounds=5, iterations=1, warmup_rounds=1)

"""The `fedbench bench` cases as pytest-benchmark tests: one round of each path, per (model, cohort).

Run them in their own session: ``pytest tests/benchmarks --benchmark-only`` (the normal test run passes
``--benchmark-skip`` from pyproject.toml, which skips them before any case is built). samples/s of a path
is ``extra_info['samples_per_round']`` divided by the round time; ``fedbench bench`` prints the ratios.
"""

from __future__ import annotations

import pytest
import torch

from fedbench import bench

PATHS = ("vectorized", "loop_module", "loop_reference", "centralized_module", "centralized_fused")
CASES = [(m, k, p) for m in bench.MODELS for k in bench.DEFAULT_COHORTS for p in PATHS
         if not (m == "cnn" and p == "centralized_fused")]  # bench.py times that one for mclr only
_built: dict[tuple[str, int], bench.Case] = {}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `fedbench bench` does by default on CPU
    yield
    torch.set_num_threads(threads)


def _case(model: str, cohort: int) -> bench.Case:
    if (model, cohort) not in _built:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        _built[(model, cohort)] = bench.build_case(model, cohort, device, bench.QUICK)
    return _built[(model, cohort)]


@pytest.mark.parametrize("model,cohort,path", CASES, ids=[f"{m}-{k}-{p}" for m, k, p in CASES])
def test_round(benchmark, model, cohort, path):
    case = _case(model, cohort)  # built only once the benchmark fixture has not skipped the test
    benchmark.group = f"{model}-cohort{cohort}"
    benchmark.extra_info.update(samples_per_round=case.samples[path], cohort=cohort, model=model,
                                device=str(case.device), loop_clients=case.loop_clients)
    benchmark.pedantic(case.rounds[path], rounds=3 if model == "cnn" and cohort >= 1000 else 10,
                       iterations=1, warmup_rounds=1)

"""The full local gradient at FedProxVR Table 1's scale (fedbench.studies.fedproxvr_fashion: mclr 784 -> 10, all
100 users of fashion_mnist_fedproxvr, 35,528 training rows) as pytest-benchmark cases, one group: the mclr
kernel reading each client's rows in place (what the engine runs) beside the gathered path (the clients' rows
gathered, then segment_grads: the engine before, and every other kernel), and one forward and backward product
over all rows with a single model, the arithmetic's floor. Read the group's ratios, not the times.

Run them in their own session: ``pytest tests/benchmarks/test_full_grad.py --benchmark-only`` (random inputs of
Fashion-MNIST's shape in power-law client blocks; the 30 MB files are not needed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedbench.engine.kernels import MclrKernel, generic
from fedbench.models import mclr
from tests.engine.test_full_grad import _fashion_shaped

CLIENTS, ROWS = 100, 35_528  # fashion_mnist_fedproxvr with params.yaml's parameters


@pytest.fixture(scope="module")
def table_1():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as `fedbench bench` and the studies' worker processes
    kernel = MclrKernel(mclr(784, 10))
    x, y, offsets = _fashion_shaped(CLIENTS, ROWS, seed=0)
    cohort = np.random.default_rng(1).permutation(CLIENTS)  # the engine's order is not the stored order
    theta = 0.01 * torch.randn(CLIENTS, kernel.model.num_params, generator=torch.Generator().manual_seed(2))
    yield kernel, x, y, offsets, cohort, theta
    torch.set_num_threads(threads)


def _case(benchmark, name: str, fn) -> None:
    benchmark.group = "full-gradient-fedproxvr-table-1"
    benchmark.extra_info.update(path=name, rows=ROWS, clients=CLIENTS)
    benchmark.pedantic(fn, rounds=7, iterations=1, warmup_rounds=1)


def test_in_place(benchmark, table_1):
    kernel, x, y, offsets, cohort, theta = table_1
    _case(benchmark, "in place", lambda: kernel.client_grads(theta, x, y, offsets, cohort))


def test_gathered(benchmark, table_1):
    kernel, x, y, offsets, cohort, theta = table_1
    _case(benchmark, "gathered", lambda: generic.client_grads(kernel, theta, x, y, offsets, cohort))


def test_one_product_floor(benchmark, table_1):
    _, x, _, _, _, theta = table_1
    w = theta[0].view(785, 10)

    def floor():
        return x.T @ torch.softmax(torch.addmm(w[-1], x, w[:-1]), dim=1)

    _case(benchmark, "one product floor", floor)

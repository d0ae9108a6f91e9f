"""``fedbench bench``: how fast the simulator trains a cohort, side by side with a per-client loop and with
centralized training of the same model (issue 4).

Three ways of processing the same samples are timed in one process, on one device, interleaved round by
round (so that other jobs on the machine slow all of them alike):

- **vectorized**: one federated round of FedAvg as the engine runs it: ``client_init``, every client's
  local SGD at once (:func:`fedbench.engine.local.run_vectorized`), ``client_result`` and the weighted
  average (``server_update``). Evaluation and the drawing of the round's schedule are not timed.
- **per-client loop**: the same clients and minibatches, one model at a time. Two loops are timed and the
  faster one is reported: a framework-style loop (an ``nn.Module`` loaded with the global model, autograd,
  ``torch.optim.SGD``) and the engine's reference loop (:func:`fedbench.engine.local.run_reference`). Its
  throughput does not depend on the cohort size, so on large cohorts it runs on an evenly spaced subset of
  the clients (``loop_clients`` in the output).
- **centralized**: plain minibatch SGD on the same model with batch = cohort x client batch, on as many
  samples as the round. For logistic regression the faster of two implementations: ``nn.Module`` +
  autograd + SGD, and the model's own batched gradient for a single model ("fused"); for the CNN the
  ``nn.Module`` (its "fused" form is the same network through vmap, only slower).

Clients hold 20 + int(LogNormal(3, 0.5)) samples (22 to about 100: unequal sizes, partial last batches),
train one local epoch with batch 10, and the data is random (speed does not depend on the values). The
two ratios are the medians of the per-round ratios.

``--report`` also measures how cost grows with the number of clients in the federation (at cohort 100,
with one stored [P] vector per client, the state FedLaAvg keeps) and memory, projects each paper's
headline study to full scale from measured per-round cost, and writes ``reports/bench/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fedbench.algorithms.fedavg import FedAvg
from fedbench.algorithms.fedlaavg import FedLaAvg
from fedbench.engine import tree
from fedbench.engine.local import CohortData, run_reference, run_vectorized
from fedbench.engine.simulation import resolve_device
from fedbench.models import build_model
from fedbench.models.cnn import tutorial_cnn
from fedbench.ops import weighted_mean
from fedbench.seeding import rng, torch_generator

SCHEMA = "fedbench.bench/1"
MODELS = ("mclr", "cnn")
FEATURES = {"mclr": (60,), "cnn": (3, 32, 32)}  # Synthetic(1,1)-sized inputs; CIFAR-10-sized images
NUM_CLASSES = 10
DEFAULT_COHORTS = (10, 100, 1000)
CLIENT_BATCH = 10  # the papers' client minibatch
LOCAL_EPOCHS = 1
LR = 0.01
SIZE_MIN, SIZE_LOGNORMAL = 20, (3.0, 0.5)  # n_k = 20 + int(LogNormal(3, 0.5)), as tests/engine's fixture
POOL_SAMPLES = {"mclr": 200_000, "cnn": 20_000}  # distinct samples held; clients' slices wrap around it
TARGETS = {  # issue 4, at cohort 100: (model, device type) -> minimum ratio
    ("mclr", "cpu", "speedup_over_per_client_loop"): 10.0,
    ("mclr", "cpu", "throughput_ratio_to_centralized"): 0.7,
    ("mclr", "cuda", "speedup_over_per_client_loop"): 10.0,
    ("mclr", "cuda", "throughput_ratio_to_centralized"): 0.7,
    ("cnn", "cuda", "throughput_ratio_to_centralized"): 0.5,
}


@dataclass(frozen=True)
class Settings:
    """How long to measure. ``quick`` keeps the whole command within about 2 minutes on 2 CPU cores."""

    quick: bool
    min_time: float  # seconds of timed rounds per path (at least one round)
    max_reps: int
    loop_clients: dict[str, int]  # per-client loops run on at most this many clients of the cohort
    max_steps: dict[str, int | None]  # cap on each client's local steps (None: the full epoch)


QUICK = Settings(quick=True, min_time=1.0, max_reps=15, loop_clients={"mclr": 30, "cnn": 10},
                 max_steps={"mclr": None, "cnn": 1})
FULL = Settings(quick=False, min_time=3.0, max_reps=15, loop_clients={"mclr": 200, "cnn": 100},
                max_steps={"mclr": None, "cnn": None})


# ---- data and schedules ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Federation:
    """Benchmark clients: client k's samples are pool rows start_k .. start_k + n_k - 1 (mod pool size)."""

    x: torch.Tensor  # [pool, ...] on the device
    y: torch.Tensor  # [pool]
    sizes: np.ndarray  # [N]
    starts: np.ndarray  # [N]


def make_federation(model_name: str, num_clients: int, device: torch.device, seed: int = 0) -> Federation:
    g = rng(seed, -1, "data", 0)
    sizes = SIZE_MIN + g.lognormal(*SIZE_LOGNORMAL, num_clients).astype(np.int64)
    pool = min(POOL_SAMPLES[model_name], int(sizes.sum()))
    starts = (np.cumsum(sizes) - sizes) % pool
    gt = torch_generator(seed, -1, "data", 1)
    x = torch.randn(pool, *FEATURES[model_name], generator=gt)
    y = torch.randint(0, NUM_CLASSES, (pool,), generator=gt)
    return Federation(x=x.to(device), y=y.to(device), sizes=sizes, starts=starts)


@dataclass(frozen=True)
class Schedule:
    """One round's minibatches, in the engine's order (most local steps first)."""

    clients: np.ndarray  # [K] federation indices, work-sorted
    steps: np.ndarray  # [K] local steps, non-increasing
    index: torch.Tensor  # [K, S, B] pool indices, -1 = padding
    samples: int  # real (unpadded) samples in the round

    @property
    def padding_fraction(self) -> float:
        slots = int(self.steps.sum()) * self.index.shape[-1]
        return 1.0 - self.samples / slots if slots else 0.0


def make_schedule(fed: Federation, clients: np.ndarray, seed: int, round_: int, epochs: int = LOCAL_EPOCHS,
                  batch: int = CLIENT_BATCH, max_steps: int | None = None) -> Schedule:
    """Each client's ``epochs`` fresh permutations cut into ceil(n/B) batches (the last one partial), as
    the engine's schedule, but drawn for the whole cohort at once. ``max_steps`` truncates the work."""
    g = rng(seed, round_, "minibatch")
    sizes = fed.sizes[clients]
    per_epoch = -(-sizes // batch)
    steps = epochs * per_epoch
    order = np.argsort(-steps, kind="stable")
    clients, sizes, per_epoch, steps = clients[order], sizes[order], per_epoch[order], steps[order]
    k, n_max, s_max = len(clients), int(sizes.max()), int(steps.max())
    keys = g.random((k, epochs, n_max))
    j = np.arange(n_max)
    keys[np.broadcast_to(j >= sizes[:, None, None], keys.shape)] = np.inf  # padding sorts last
    perm = np.argsort(keys, axis=-1)
    kk, ee, jj = np.nonzero(np.broadcast_to(j < sizes[:, None, None], keys.shape))
    slot = ee * per_epoch[kk] * batch + jj  # batch (e * per_epoch + j // B), position j % B
    flat = np.full((k, s_max * batch), -1, dtype=np.int64)
    pool = len(fed.y)
    flat[kk, slot] = (fed.starts[clients][kk] + perm[kk, ee, jj]) % pool
    index = flat.reshape(k, s_max, batch)
    if max_steps is not None:
        steps = np.minimum(steps, max_steps)
        index = index[:, :max_steps]
    samples = int((index >= 0).sum())
    return Schedule(clients=clients, steps=steps, index=torch.from_numpy(np.ascontiguousarray(index)).to(fed.x.device),
                    samples=samples)


@dataclass(frozen=True)
class BenchCohort:
    """What the algorithms read of the engine's Cohort (fedbench.engine.simulation.Cohort)."""

    clients: torch.Tensor
    num_samples: torch.Tensor
    steps: torch.Tensor
    client_rows: Any = None
    num_clients: int | None = None
    total_samples: int | None = None


# ---- the three paths -------------------------------------------------------------------------------------

def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def module_for(model_name: str) -> nn.Module:
    """The model as an ordinary nn.Module (what frameworks train), with the same parameter layout."""
    if model_name == "mclr":
        return nn.Linear(FEATURES["mclr"][0], NUM_CLASSES)
    return tutorial_cnn(FEATURES["cnn"][0], NUM_CLASSES)


def _load_flat(net: nn.Module, model_name: str, theta: torch.Tensor) -> None:
    """Copy a flat theta into the module (for mclr theta is [W (d x C), b]; nn.Linear holds W^T)."""
    with torch.no_grad():
        if model_name == "mclr":
            d, c = FEATURES["mclr"][0], NUM_CLASSES
            net.weight.copy_(theta[: d * c].view(d, c).t())
            net.bias.copy_(theta[d * c:])
        else:
            torch.nn.utils.vector_to_parameters(theta, net.parameters())


def _read_flat(net: nn.Module, model_name: str) -> torch.Tensor:
    if model_name == "mclr":
        return torch.cat([net.weight.detach().t().reshape(-1), net.bias.detach()])
    return torch.nn.utils.parameters_to_vector(net.parameters()).detach()


@dataclass
class Case:
    """One (model, cohort) case: a callable per path that runs one round, and the samples each processes."""

    model_name: str
    cohort: int
    device: torch.device
    schedule: Schedule
    rounds: dict[str, Callable[[], None]] = field(default_factory=dict)
    samples: dict[str, int] = field(default_factory=dict)
    loop_clients: int = 0
    centralized_steps: int = 0
    num_params: int = 0
    cuda_peak_bytes: int | None = None  # peak GPU memory of one vectorized round (on a GPU)


def build_case(model_name: str, cohort: int, device: torch.device, settings: Settings, seed: int = 0) -> Case:
    fed = make_federation(model_name, cohort, device, seed)
    model = build_model(model_name, FEATURES[model_name], NUM_CLASSES)
    theta0 = model.init(torch_generator(seed, -1, "init")).to(device)
    sched = make_schedule(fed, np.arange(cohort), seed, 0, max_steps=settings.max_steps[model_name])
    case = Case(model_name, cohort, device, sched, num_params=model.num_params)
    x_prep = model.prepare_inputs(fed.x)  # prepared once, outside the timed rounds (as simulate does per run)
    _add_vectorized(case, fed, model, theta0, x_prep)
    _add_loops(case, fed, model, theta0, settings.loop_clients[model_name])
    _add_centralized(case, fed, model, theta0, x_prep)
    return case


def _add_vectorized(case: Case, fed: Federation, model: Any, theta0: torch.Tensor,
                    x_prep: torch.Tensor) -> None:
    sched, device = case.schedule, case.device
    alg = FedAvg(lr=LR)
    data = CohortData(x=fed.x, y=fed.y, num_classes=NUM_CLASSES, index=sched.index, steps=sched.steps,
                      x_prepared=x_prep)
    sizes = torch.from_numpy(fed.sizes[sched.clients]).to(device)
    cohort = BenchCohort(clients=torch.from_numpy(sched.clients).to(device), num_samples=sizes,
                         steps=torch.from_numpy(sched.steps).to(device))
    weights = sizes.float() / sizes.sum()
    state = alg.init(theta0, len(sched.clients))

    def vectorized() -> None:
        bcast = alg.broadcast(state)
        local = run_vectorized(alg, model, bcast, alg.client_init(bcast, cohort), data)
        alg.server_update(state, local, weights, cohort)  # FedAvg's result is its local models
        _sync(device)

    case.rounds["vectorized"], case.samples["vectorized"] = vectorized, sched.samples


def _add_loops(case: Case, fed: Federation, model: Any, theta0: torch.Tensor, max_clients: int) -> None:
    sched, device = case.schedule, case.device
    k = len(sched.clients)
    subset = np.unique(np.linspace(0, k - 1, min(k, max_clients)).round().astype(np.int64))
    index = sched.index[torch.from_numpy(subset).to(device)]
    steps = sched.steps[subset]
    samples = int((index >= 0).sum())
    sizes = fed.sizes[sched.clients[subset]]
    weights = torch.as_tensor(sizes / sizes.sum(), dtype=torch.float32, device=device)
    # minibatch index lists prepared outside the timed region, as a data loader would hold them
    batches = [[row[row >= 0] for row in index[i, : steps[i]]] for i in range(len(subset))]
    net = module_for(case.model_name).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=LR)

    def module_loop() -> None:
        total = torch.zeros_like(theta0)
        for i, client_batches in enumerate(batches):
            _load_flat(net, case.model_name, theta0)
            for idx in client_batches:
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(net(fed.x.index_select(0, idx)), fed.y.index_select(0, idx)).backward()
                opt.step()
            total += weights[i] * _read_flat(net, case.model_name)
        _sync(device)

    alg = FedAvg(lr=LR)
    data = CohortData(x=fed.x, y=fed.y, num_classes=NUM_CLASSES, index=index, steps=steps)
    stub = BenchCohort(clients=torch.arange(len(subset), device=device), num_samples=torch.from_numpy(sizes),
                       steps=torch.from_numpy(steps))

    def reference_loop() -> None:
        local = run_reference(alg, model, theta0, alg.client_init(theta0, stub), data)
        weighted_mean(local, weights)
        _sync(device)

    case.rounds["loop_module"], case.samples["loop_module"] = module_loop, samples
    case.rounds["loop_reference"], case.samples["loop_reference"] = reference_loop, samples
    case.loop_clients = len(subset)


def _add_centralized(case: Case, fed: Federation, model: Any, theta0: torch.Tensor,
                     x_prep: torch.Tensor) -> None:
    device, batch = case.device, case.cohort * CLIENT_BATCH
    n_steps = max(1, math.ceil(case.schedule.samples / batch))
    g = torch_generator(0, 0, "minibatch")
    order = torch.randint(0, len(fed.y), (n_steps, batch), generator=g).to(device)
    net = module_for(case.model_name).to(device)
    _load_flat(net, case.model_name, theta0)
    opt = torch.optim.SGD(net.parameters(), lr=LR)

    def module_sgd() -> None:
        for idx in order:
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(net(fed.x.index_select(0, idx)), fed.y.index_select(0, idx)).backward()
            opt.step()
        _sync(device)

    # the model's own batched gradient with one model and the whole batch (x_prep prepared once, outside)
    weight = torch.full((1, batch, 1), 1.0 / batch, device=device)

    def fused_sgd() -> None:
        theta = theta0.unsqueeze(0)
        for idx in order:
            target = torch.zeros(1, batch, NUM_CLASSES, device=device).scatter_(
                -1, fed.y.index_select(0, idx).view(1, batch, 1), weight)
            xb = x_prep.index_select(0, idx).unsqueeze(0)
            theta = theta - LR * model.batched_grad(theta, xb, target, weight)
        _sync(device)

    case.rounds["centralized_module"], case.samples["centralized_module"] = module_sgd, n_steps * batch
    if case.model_name == "mclr":  # for the CNN this is the same vmap'd network as the module, only slower
        case.rounds["centralized_fused"], case.samples["centralized_fused"] = fused_sgd, n_steps * batch
    case.centralized_steps = n_steps


# ---- timing ----------------------------------------------------------------------------------------------

def time_interleaved(rounds: dict[str, Callable[[], None]], min_time: float, max_reps: int,
                     lead: str = "vectorized") -> dict[str, list[float]]:
    """Seconds per round of each path: one warm-up round each, then rounds taken in turn (A B C A B C ...)
    until the ``lead`` path has ``min_time`` seconds of timed rounds (at least one round) or ``max_reps``."""
    for fn in rounds.values():
        fn()
    times: dict[str, list[float]] = {name: [] for name in rounds}
    while len(times[lead]) < max_reps and (not times[lead] or sum(times[lead]) < min_time):
        for name, fn in rounds.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def _best(times: dict[str, list[float]], samples: dict[str, int], names: tuple[str, ...]) -> tuple[str, np.ndarray]:
    """The faster implementation of one path (by median) and its per-round samples/s."""
    rates = {n: samples[n] / np.asarray(times[n]) for n in names}
    name = max(names, key=lambda n: float(np.median(rates[n])))
    return name, rates[name]


def measure_case(case: Case, settings: Settings) -> dict[str, Any]:
    if case.device.type == "cuda":
        case.rounds["vectorized"]()
        torch.cuda.reset_peak_memory_stats(case.device)
        base = torch.cuda.memory_allocated(case.device)
        case.rounds["vectorized"]()
        case.cuda_peak_bytes = int(torch.cuda.max_memory_allocated(case.device) - base)
    times = time_interleaved(case.rounds, settings.min_time, settings.max_reps)
    vec = case.samples["vectorized"] / np.asarray(times["vectorized"])
    loop_name, loop = _best(times, case.samples, ("loop_module", "loop_reference"))
    cen_name, cen = _best(times, case.samples, tuple(n for n in times if n.startswith("centralized_")))
    return {
        "model": case.model_name,
        "cohort": case.cohort,
        "device": str(case.device),
        "client_batch": CLIENT_BATCH,
        "local_steps_max": int(case.schedule.steps.max()),
        "samples_per_round": case.schedule.samples,
        "padding_fraction": round(case.schedule.padding_fraction, 4),
        "vectorized_samples_per_s": float(np.median(vec)),
        "per_client_loop_samples_per_s": float(np.median(loop)),
        "centralized_samples_per_s": float(np.median(cen)),
        "throughput_ratio_to_centralized": float(np.median(vec / cen)),
        "speedup_over_per_client_loop": float(np.median(vec / loop)),
        "per_client_loop_impl": loop_name.removeprefix("loop_"),
        "centralized_impl": cen_name.removeprefix("centralized_"),
        "loop_clients": case.loop_clients,
        "centralized_batch": case.cohort * CLIENT_BATCH,
        "vectorized_round_s": float(np.median(times["vectorized"])),
        "cohort_models_bytes": case.cohort * case.num_params * 4,  # one float32 model per client
        **({"vectorized_cuda_peak_bytes": case.cuda_peak_bytes} if case.cuda_peak_bytes is not None else {}),
        "repeats": len(times["vectorized"]),
        "all_samples_per_s": {n: float(np.median(case.samples[n] / np.asarray(ts))) for n, ts in times.items()},
    }


def run_cases(models: tuple[str, ...], cohorts: tuple[int, ...], device: torch.device, settings: Settings,
              log: Callable[[str], None], seed: int = 0) -> list[dict[str, Any]]:
    rows = []
    for model_name in models:
        for k in cohorts:
            t0 = time.perf_counter()
            row = measure_case(build_case(model_name, k, device, settings, seed), settings)
            rows.append(row)
            log(f"  {model_name:5s} cohort {k:5d}: {_fmt_rate(row['vectorized_samples_per_s'])} samples/s, "
                f"x{row['speedup_over_per_client_loop']:.1f} over the loop, "
                f"{row['throughput_ratio_to_centralized']:.2f} of centralized ({time.perf_counter() - t0:.0f} s)")
    return rows


# ---- cost as the federation grows: one stored vector per client (FedLaAvg's state) ----------------------

def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def measure_federation(model_name: str, num_clients: int, cohort: int, device: torch.device,
                       max_steps: int | None, rounds: int = 3, batch: int = CLIENT_BATCH,
                       epochs: int = LOCAL_EPOCHS, seed: int = 0) -> dict[str, Any]:
    """FedLaAvg rounds of ``cohort`` clients out of ``num_clients``: the clients absent the longest are
    chosen, each keeps its latest accumulated gradient in the engine's per-client table [N, P], gathered for
    the cohort and scattered back every round. Timed: selection, gathering, local work, aggregation,
    scattering (not the drawing of minibatches)."""
    fed = make_federation(model_name, num_clients, device, seed)
    model = build_model(model_name, FEATURES[model_name], NUM_CLASSES)
    theta0 = model.init(torch_generator(seed, -1, "init")).to(device)
    alg = FedLaAvg(lr=LR)
    available = np.ones(num_clients, dtype=bool)
    total_samples = int(fed.sizes.sum())
    weights = torch.full((cohort,), 1.0 / cohort, device=device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base_cuda = torch.cuda.memory_allocated(device)
    rss0 = _rss_bytes()
    state, table = alg.init(theta0, num_clients), alg.init_clients(num_clients, theta0)
    table.zero_()  # touch the pages, so resident memory counts them
    x_prep = model.prepare_inputs(fed.x)  # once, untimed (as simulate does per run)

    def one_round(r: int) -> tuple[float, int]:
        nonlocal state, table
        t0 = time.perf_counter()
        state, chosen = alg.choose_clients(state, r, available, cohort)
        elapsed = time.perf_counter() - t0
        sched = make_schedule(fed, np.asarray(chosen), seed, r, epochs=epochs, batch=batch, max_steps=max_steps)
        t0 = time.perf_counter()
        idx = torch.from_numpy(sched.clients).to(device)
        cohort_ = BenchCohort(clients=idx, num_samples=torch.from_numpy(fed.sizes[sched.clients]).to(device),
                              steps=torch.from_numpy(sched.steps).to(device), client_rows=tree.take_rows(table, idx),
                              num_clients=num_clients, total_samples=total_samples)
        data = CohortData(x=fed.x, y=fed.y, num_classes=NUM_CLASSES, index=sched.index, steps=sched.steps,
                          x_prepared=x_prep)
        bcast = alg.broadcast(state)
        local = run_vectorized(alg, model, bcast, alg.client_init(bcast, cohort_), data)
        result, new_rows = alg.client_result(local, bcast, cohort_)
        state = alg.server_update(state, result, weights, cohort_)
        table = tree.scatter_rows(table, idx, new_rows)
        _sync(device)
        return elapsed + time.perf_counter() - t0, sched.samples

    one_round(0)  # warm-up
    measured = [one_round(r) for r in range(1, rounds + 1)]
    times = np.array([t for t, _ in measured])
    samples = np.array([n for _, n in measured])
    out = {
        "model": model_name, "num_clients": num_clients, "cohort": cohort, "device": str(device),
        "algorithm": "fedlaavg", "samples_per_s": float(np.median(samples / times)),
        "round_s": float(np.median(times)),
        "table_bytes": int(table.numel() * table.element_size()),
        "resident_increase_bytes": max(0, _rss_bytes() - rss0),
    }
    if device.type == "cuda":
        out["cuda_peak_bytes"] = int(torch.cuda.max_memory_allocated(device) - base_cuda)
    del table, state
    return out


# ---- full-scale projections ------------------------------------------------------------------------------

def estimate_studies(device: torch.device, settings: Settings, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Projected wall time of each paper's headline study, from per-round cost measured here."""
    from fedbench.algorithms.fedprox import FedProx
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.simulation import SimulationConfig, simulate

    out = []
    # FedProx, Figure 1 (Synthetic(1,1)): 200 rounds, 10 of 30 devices, E = 20, batch 10, evaluation every round.
    ds = generate_synthetic(1, 1, num_devices=30, seed=0)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    n_rounds = 5 if settings.quick else 20
    cfg = SimulationConfig(rounds=n_rounds, clients_per_round=10, local_epochs=20, batch_size=10,
                           straggler_fraction=0.9, seed=0, device=str(device), checkpoint_every=10**9)
    res = simulate(cfg, ds, model, FedProx(lr=0.01, mu=1.0))
    rows = [r for r in res.history if r.get("wall_time_s", 0.0) > 0]
    per_round = float(np.mean([r["wall_time_s"] for r in rows]))
    eval_round = float(np.mean([r["eval_time_s"] for r in rows]))
    out.append({
        "study": "FedProx Synthetic(1,1), one run of Figure 1",
        "rounds": 200, "round_s": per_round, "eval_s_per_round": eval_round,
        "projected_s": 200 * per_round,
        "assumptions": "FedProx mu=1, 90% stragglers, 10 of 30 devices per round, E=20, batch 10, the real "
                       "Synthetic(1,1) generator (n_k = LogNormal(4, 2) + 50), evaluation with dissimilarity "
                       f"every round; simulate() wall time of {n_rounds} rounds. A panel of Figure 1 is 3 "
                       "straggler levels x 3 methods = 9 such runs.",
    })
    log(f"  FedProx Synthetic(1,1): {per_round * 1e3:.0f} ms/round -> {_fmt_s(200 * per_round)} for 200 rounds")

    # FedLaAvg CIFAR-10: 70,000 rounds, 100 of 1000 clients, C = 10 local steps of batch 5, the tutorial CNN.
    # 2 epochs of >= 22 samples at batch 5 are >= 10 steps: every client runs exactly C = 10 steps
    fl = measure_federation("cnn", 1000, 100, device, max_steps=10, rounds=2, batch=5, epochs=2)
    cnn = build_model("cnn", FEATURES["cnn"], NUM_CLASSES)
    eval_s = _eval_time(cnn, device, 10_000)
    evals = 70_000 // 100
    out.append({
        "study": "FedLaAvg CIFAR-10 (Table 2)", "rounds": 70_000, "round_s": fl["round_s"],
        "eval_s_per_round": eval_s * evals / 70_000,
        "projected_s": 70_000 * fl["round_s"] + evals * eval_s,
        "assumptions": "tutorial CNN (62,006 params), N = 1000 clients with one stored gradient each, K = 100 per "
                       "round, C = 10 local steps of batch 5 (the authors' code defaults), test evaluation on "
                       "10,000 images every 100 rounds (not stated in the paper)",
    })
    log(f"  FedLaAvg CIFAR-10: {fl['round_s'] * 1e3:.0f} ms/round -> {_fmt_s(out[-1]['projected_s'])}")

    # Delta-FL EMNIST linear: 3000 rounds, 100 devices per round, 1 epoch, batch 32, 784 -> 62.
    emnist = _measure_emnist_linear(device, settings)
    out.append({
        "study": "Delta-FL EMNIST linear (Tables 2-3, one run)", "rounds": 3000, "round_s": emnist,
        "eval_s_per_round": 0.0, "projected_s": 3000 * emnist,
        "assumptions": "softmax regression 784 -> 62 (with bias), 100 of 865 devices per round, one local epoch "
                       "of batch 32 (as the scripts run), device sizes from LogNormal(log 179, 0.4) clipped to "
                       "[101, 447] (the paper's median, min, max), the per-round loss of each selected device on "
                       "its data included; evaluation (every 50 rounds) not included. The 1000-round ConvNet "
                       "runs are not estimated: that ConvNet is not in fedbench.",
    })
    log(f"  Delta-FL EMNIST linear: {emnist * 1e3:.0f} ms/round -> {_fmt_s(3000 * emnist)} for 3000 rounds")
    for row in out:
        row["device"] = str(device)
    return out


def _eval_time(model, device, n: int) -> float:
    theta = model.init(torch_generator(0, -1, "init")).to(device)
    x = torch.randn(n, *FEATURES["cnn"], device=device)
    y = torch.randint(0, NUM_CLASSES, (n,), device=device)
    with torch.no_grad():
        model.per_sample(theta, x[:100], y[:100])
        _sync(device)
        t0 = time.perf_counter()
        model.per_sample(theta, x, y)
        _sync(device)
    return time.perf_counter() - t0


def _measure_emnist_linear(device: torch.device, settings: Settings) -> float:
    from fedbench.models.linear import MultinomialLogisticRegression

    g = rng(0, -1, "data", 2)
    sizes = np.clip(np.exp(g.normal(np.log(179), 0.4, 865)), 101, 447).astype(np.int64)
    fed = Federation(x=torch.randn(int(sizes.sum()), 784, device=device),
                     y=torch.randint(0, 62, (int(sizes.sum()),), device=device),
                     sizes=sizes, starts=np.cumsum(sizes) - sizes)
    model = MultinomialLogisticRegression(784, 62)
    theta = model.init(torch_generator(0, -1, "init")).to(device)
    alg = FedAvg(lr=1.0)
    x_prep = model.prepare_inputs(fed.x)  # once, untimed (as simulate does per run)
    times = []
    for r in range(4 if settings.quick else 10):
        clients = np.sort(rng(0, r, "select").choice(865, size=100, replace=False))
        sched = make_schedule(fed, clients, 0, r, batch=32)
        t0 = time.perf_counter()
        # Delta-FL's filter: each selected device's loss on all its data at the global model
        offs = fed.starts[sched.clients]
        idx = torch.from_numpy(np.concatenate([np.arange(o, o + n) for o, n in zip(offs, fed.sizes[sched.clients])])).to(device)
        with torch.no_grad():
            model.per_sample(theta, fed.x[idx], fed.y[idx])
        data = CohortData(x=fed.x, y=fed.y, num_classes=62, index=sched.index, steps=sched.steps,
                          x_prepared=x_prep)
        local = run_vectorized(alg, model, theta, theta.expand(100, -1).clone(), data)
        sizes_t = torch.from_numpy(fed.sizes[sched.clients]).to(device).float()
        weighted_mean(local, sizes_t / sizes_t.sum())
        _sync(device)
        times.append(time.perf_counter() - t0)
    return float(np.median(times[1:]))


# ---- output ----------------------------------------------------------------------------------------------

def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.1f}k" if x >= 1e3 else f"{x:.0f}"


def _fmt_s(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    if s < 3 * 86400:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} days"


def format_table(rows: list[dict[str, Any]]) -> str:
    head = ("| model | cohort | device | vectorized samples/s | per-client loop samples/s | centralized samples/s "
            "| vectorized / centralized | speedup over loop | padding |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['cohort']} | {r['device']} | {_fmt_rate(r['vectorized_samples_per_s'])} "
            f"| {_fmt_rate(r['per_client_loop_samples_per_s'])} ({r['per_client_loop_impl']}) "
            f"| {_fmt_rate(r['centralized_samples_per_s'])} ({r['centralized_impl']}, batch {r['centralized_batch']}) "
            f"| {r['throughput_ratio_to_centralized']:.2f} | {r['speedup_over_per_client_loop']:.1f}x "
            f"| {100 * r['padding_fraction']:.0f}% |")
    return "\n".join(lines)


def check_targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        if r["cohort"] != 100:
            continue
        dev = r["device"].split(":")[0]
        for (model, device, metric), minimum in TARGETS.items():
            if model == r["model"] and device == dev:
                out.append({"model": model, "device": r["device"], "metric": metric, "target": minimum,
                            "measured": r[metric], "met": bool(r[metric] >= minimum)})
    return out


def environment(device: torch.device) -> dict[str, Any]:
    env = {"torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
           "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
           "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


# ---- the report (reports/bench/) -----------------------------------------------------------------------

def write_report(result: dict[str, Any], out_dir: Path, argv: list[str]) -> None:
    """README.md (tables, targets, profile, projections), bench.json and the scaling plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench.json").write_text(json.dumps(result, indent=2) + "\n")
    plots = _plot(result, out_dir)
    env, cases = result["environment"], result["cases"]
    lines = [
        "# Simulator throughput: vectorized cohorts vs a per-client loop vs centralized training",
        "",
        f"Generated by `fedbench bench {' '.join(argv)}` (do not edit by hand; rerun the command). "
        f"Device: {result['device']}{' (' + env['gpu'] + ')' if env.get('gpu') else ''}; torch {env['torch']}, "
        f"{env['torch_threads']} CPU thread(s) of {env['cpu_count']} cores; load average at the start "
        f"{', '.join(f'{x:.1f}' for x in env['load_average'] or [])} (other jobs shared the machine). "
        f"{'Quick mode. ' if result['quick'] else ''}Total {result['elapsed_s'] / 60:.1f} min.",
        "",
        "## What is measured",
        "",
        "Samples per second of three ways of training on the same samples, timed in one process, taken in "
        "turn round by round (ratios are medians of per-round ratios):",
        "",
        "- **vectorized**: one FedAvg round of the engine (`run_vectorized`: all clients' local SGD at once, "
        "unequal sizes and partial batches included, then the weighted average); evaluation excluded.",
        "- **per-client loop**: the same clients and minibatches one model at a time; the faster of an "
        "`nn.Module` + `torch.optim.SGD` loop (as frameworks do) and the engine's reference loop.",
        "- **centralized**: minibatch SGD on the same model with batch = cohort x 10, on as many samples; the "
        "faster of `nn.Module` + autograd + SGD and, for logistic regression, the model's own batched "
        "gradient for one model ('fused').",
        "",
        f"Clients hold {result['settings']['client_sizes']} samples, one local epoch at batch "
        f"{result['settings']['client_batch']}; 'padding' is the share of batch slots left empty by partial "
        "last batches (computed, not counted as samples).",
        "",
        "## Results",
        "",
        format_table(cases),
        "",
    ]
    if any("centralized_module" in r["all_samples_per_s"] for r in cases):
        gpu = any("vectorized_cuda_peak_bytes" in r for r in cases)
        lines += ["Vectorized / centralized against each centralized implementation, and memory (the cohort's "
                  "models, one float32 copy each" + (", and the GPU's peak during a vectorized round" if gpu else "")
                  + "):", "",
                  "| model | cohort | vs nn.Module SGD | vs fused | cohort models |" + (" GPU peak |" if gpu else ""),
                  "|---|---|---|---|---|" + ("---|" if gpu else "")]
        for r in cases:
            a = r["all_samples_per_s"]
            fused = f"{a['vectorized'] / a['centralized_fused']:.2f}" if "centralized_fused" in a else "-"
            lines.append(f"| {r['model']} | {r['cohort']} | {a['vectorized'] / a['centralized_module']:.2f} | {fused} "
                         f"| {r['cohort_models_bytes'] / 2**20:.1f} MiB |"
                         + (f" {r.get('vectorized_cuda_peak_bytes', 0) / 2**20:.0f} MiB |" if gpu else ""))
        lines.append("")
    lines += ["### Targets (issue 4, at cohort 100)", ""]
    if result["targets"]:
        lines += ["| model | device | measure | target | measured | met |", "|---|---|---|---|---|---|"]
        for t in result["targets"]:
            lines.append(f"| {t['model']} | {t['device']} | {t['metric']} | >= {t['target']} | {t['measured']:.2f} "
                         f"| {'yes' if t['met'] else 'no'} |")
    else:
        lines.append("No target applies to the measured cases on this device.")
    if "cnn" not in {t["model"] for t in result["targets"]} and result["device"] == "cpu":
        lines += ["", "The CNN target (>= 0.5 of centralized) is for a GPU; this run had none."]
    lines += ["", "![samples/s against cohort size](" + plots["cohort"] + ")", ""]
    if result.get("profile"):
        lines += ["## Where a vectorized round spends its time (cohort 100, torch.profiler, self time)", ""]
        for model_name, ops in result["profile"]["top_ops"].items():
            lines.append(f"- **{model_name}**: " + ", ".join(
                f"`{o['op']}` {100 * o['share']:.0f}% ({o['calls_per_round']:g} calls/round)" for o in ops[:6]))
        if "mclr_maths_only_ratio" in result["profile"]:
            lines += ["", "Logistic regression, the model's maths alone (gradient + SGD update on inputs gathered "
                          "beforehand, the round's active counts): "
                          f"{result['profile']['mclr_maths_only_ratio']:.2f} of centralized at cohort 100. That is "
                          "the ceiling for the engine around it."]
        lines += ["", *PROFILE_NOTES, ""]
    if result.get("federation_scaling"):
        lines += ["## Cost as the federation grows (cohort 100, one stored [P] vector per client)", "",
                  "FedLaAvg (fedbench.algorithms.fedlaavg): each client keeps its latest accumulated gradient "
                  "in the engine's per-client table; a round chooses the clients absent the longest, gathers "
                  "their rows, trains, and scatters them back, and the server keeps a running mean, so only "
                  "the selection (a sort over N on the host) grows with N; memory grows as N x P. 'Resident "
                  "memory added' is the process's growth over the measurement; small tables fit in memory "
                  "the allocator had already freed, so they add nothing.", "",
                  "| model | clients N | samples/s | round | client table | resident memory added |"
                  + (" GPU peak |" if any("cuda_peak_bytes" in r for r in result["federation_scaling"]) else ""),
                  "|---|---|---|---|---|---|" + ("---|" if any("cuda_peak_bytes" in r for r in result["federation_scaling"]) else "")]
        for r in result["federation_scaling"]:
            lines.append(f"| {r['model']} | {r['num_clients']} | {_fmt_rate(r['samples_per_s'])} | "
                         f"{r['round_s'] * 1e3:.1f} ms | {r['table_bytes'] / 2**20:.1f} MiB | "
                         f"{r['resident_increase_bytes'] / 2**20:.1f} MiB |"
                         + (f" {r['cuda_peak_bytes'] / 2**20:.0f} MiB |" if "cuda_peak_bytes" in r else ""))
        lines += ["", "![samples/s and memory against federation size](" + plots["federation"] + ")", ""]
    if result.get("studies"):
        lines += [f"## Full-scale projections on this device ({result['device']})", "",
                  "| study | rounds | per round (measured) | projected wall time | assumptions |", "|---|---|---|---|---|"]
        for st in result["studies"]:
            lines.append(f"| {st['study']} | {st['rounds']:,} | {st['round_s'] * 1e3:.0f} ms | "
                         f"{_fmt_s(st['projected_s'])} | {st['assumptions']} |")
        lines += ["", "Projections multiply the measured per-round cost by the paper's rounds; they assume the "
                      "cost of a round stays what it was in the measured rounds (same device, same load).", ""]
    (out_dir / "README.md").write_text("\n".join(lines))


PROFILE_NOTES = [
    "What the profile led to (engine/local.py): minibatches are gathered with `index_select` (row copies;"
    " advanced indexing `x[idx]` was about 7x slower on CPU), only for clients still training (the old "
    "chunk gathered every client for every step of the chunk, 40% of it for clients already done), in a "
    "time-major block whose step-t slice is contiguous, in chunks of at most 4 MiB so they are still in "
    "cache when used; `prepare_inputs` of the whole training set is computed once per run and handed to "
    "every round (`CohortData.x_prepared`); the one-hot targets are written by one `scatter_`. What is "
    "left is the model's own maths: on CPU, K small per-client GEMMs (`bmm` over [10 x 61] @ [61 x 10]) "
    "cost more per sample than one large GEMM, and each step reads and writes every client's parameters "
    "(as many bytes as its minibatch), which centralized SGD does not. For the CNN on CPU, vmap turns the"
    " convolutions into grouped convolutions whose backward pass (mkldnn) dominates; it runs chunks of "
    "clients so that activations stay under glibc's mmap threshold (page faults had doubled the time at "
    "cohort 1000).",
]


def _plot(result: dict[str, Any], out_dir: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = result["cases"]
    models = list(dict.fromkeys(r["model"] for r in cases))
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4), squeeze=False)
    for ax, model_name in zip(axes[0], models):
        rows = sorted((r for r in cases if r["model"] == model_name), key=lambda r: r["cohort"])
        k = [r["cohort"] for r in rows]
        for key, label in (("vectorized_samples_per_s", "vectorized"), ("per_client_loop_samples_per_s", "per-client loop"),
                           ("centralized_samples_per_s", "centralized (batch = cohort x 10)")):
            ax.plot(k, [r[key] for r in rows], marker="o", label=label)
        ax.set(xscale="log", yscale="log", xlabel="cohort size (clients per round)", ylabel="samples / s",
               title=f"{model_name} on {result['device']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "cohort_scaling.png", dpi=120)
    plt.close(fig)
    names = {"cohort": "cohort_scaling.png"}
    fed = result.get("federation_scaling") or []
    if fed:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        for model_name in dict.fromkeys(r["model"] for r in fed):
            rows = [r for r in fed if r["model"] == model_name]
            n = [r["num_clients"] for r in rows]
            ax1.plot(n, [r["samples_per_s"] for r in rows], marker="o", label=model_name)
            ax2.plot(n, [r["table_bytes"] / 2**20 for r in rows], marker="o", label=f"{model_name}: client table")
            big = [r for r in rows if r["resident_increase_bytes"] >= 2**20]  # below, freed memory is reused
            if big:
                ax2.plot([r["num_clients"] for r in big], [r["resident_increase_bytes"] / 2**20 for r in big],
                         marker="x", ls="--", label=f"{model_name}: resident memory added")
            if all("cuda_peak_bytes" in r for r in rows):
                ax2.plot(n, [r["cuda_peak_bytes"] / 2**20 for r in rows], marker="s", ls=":",
                         label=f"{model_name}: GPU peak")
        ax1.set(xscale="log", yscale="log", xlabel="clients in the federation (cohort 100)", ylabel="samples / s",
                title="throughput")
        ax2.set(xscale="log", yscale="log", xlabel="clients in the federation", ylabel="MiB", title="memory")
        for ax in (ax1, ax2):
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "federation_scaling.png", dpi=120)
        plt.close(fig)
        names["federation"] = "federation_scaling.png"
    return names


# ---- the command -----------------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fedbench bench",
        description="Measure the simulator's training throughput side by side with a per-client Python loop and "
                    "with centralized minibatch SGD on the same model (batch = cohort x 10), for multinomial "
                    "logistic regression (60 features, 10 classes) and a small CNN (3x32x32), and print the "
                    "two ratios: vectorized / centralized throughput and speedup over the loop.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  fedbench bench --quick                       # about 2 minutes on 2 CPU cores\n"
               "  fedbench bench --quick --json bench.json     # the figures as JSON\n"
               "  fedbench bench --device cuda --cohorts 100   # one cohort size on the GPU\n"
               "  fedbench bench --report                      # full run; writes reports/bench/\n",
    )
    p.add_argument("--quick", action="store_true",
                   help="short measurements (CNN clients run 1 local step, loops on a subset of clients)")
    p.add_argument("--json", metavar="PATH", help="write the results as JSON to PATH")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (cuda if available; default)")
    p.add_argument("--cohorts", default=",".join(map(str, DEFAULT_COHORTS)), metavar="K,K,...",
                   help="cohort sizes (clients per round); default 10,100,1000")
    p.add_argument("--models", default=",".join(MODELS), metavar="NAME,...", help="mclr, cnn or both (default)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: small operations are steadier on one thread, above all "
                        "on a shared machine, and the ratios are per core; 0 = torch's own choice)")
    p.add_argument("--report", nargs="?", const="reports/bench", metavar="DIR",
                   help="also measure federation scaling, memory and full-scale projections, and write the "
                        "report (README.md, bench.json, plots) to DIR (default reports/bench)")
    p.add_argument("--min-time", type=float, help="seconds of timed rounds per path and case (overrides the mode)")
    p.add_argument("--seed", type=int, default=0)
    return p


def _parse_list(text: str, kind: type, allowed: tuple | None, flag: str) -> tuple:
    try:
        values = tuple(kind(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise SystemExit(f"fedbench bench: {flag} {text!r}: expected a comma-separated list")
    if not values:
        raise SystemExit(f"fedbench bench: {flag} is empty")
    for v in values:
        if allowed is not None and v not in allowed:
            raise SystemExit(f"fedbench bench: {flag}: unknown {v!r}; allowed: {', '.join(allowed)}")
        if kind is int and v < 1:
            raise SystemExit(f"fedbench bench: {flag}: cohort sizes must be >= 1 (got {v})")
    return values


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--"]:  # `fedbench bench -- --quick` (how argparse hands over a remainder)
        argv = argv[1:]
    a = build_parser().parse_args(argv)
    cohorts = _parse_list(a.cohorts, int, None, "--cohorts")
    models = _parse_list(a.models, str, MODELS, "--models")
    try:
        device = resolve_device(a.device)
    except ValueError as exc:
        print(f"fedbench bench: {exc}", file=sys.stderr)
        return 2
    if a.threads < 0:
        print(f"fedbench bench: --threads {a.threads}: must be >= 0", file=sys.stderr)
        return 2
    if a.threads and device.type == "cpu":
        torch.set_num_threads(a.threads)
    settings = QUICK if a.quick else FULL
    if a.min_time is not None:
        settings = dataclasses.replace(settings, min_time=a.min_time)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    t_start = time.perf_counter()
    log(f"fedbench bench on {device} ({'quick' if a.quick else 'full'}; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads)")
    rows = run_cases(models, cohorts, device, settings, log, a.seed)
    result: dict[str, Any] = {
        "schema": SCHEMA, "quick": bool(a.quick), "device": str(device), "environment": environment(device),
        "settings": {"client_batch": CLIENT_BATCH, "local_epochs": LOCAL_EPOCHS, "lr": LR,
                     "client_sizes": f"{SIZE_MIN} + int(LogNormal{SIZE_LOGNORMAL})",
                     "min_time_s": settings.min_time, "max_reps": settings.max_reps,
                     "max_local_steps": settings.max_steps, "loop_clients_max": settings.loop_clients},
        "cases": rows, "targets": check_targets(rows),
    }
    print(format_table(rows))
    for t in result["targets"]:
        print(f"target {t['model']} on {t['device']}: {t['metric']} {t['measured']:.2f} "
              f"(>= {t['target']}) {'met' if t['met'] else 'NOT met'}")
    if a.report:
        log("federation scaling (cohort 100, one stored vector per client):")
        result["federation_scaling"] = []
        for model_name in models:
            sizes = (100, 1000, 10_000) if a.quick or model_name == "cnn" else (100, 300, 1000, 3000, 10_000)
            for n in sizes:
                row = measure_federation(model_name, n, min(100, n), device, settings.max_steps[model_name],
                                         seed=a.seed)
                result["federation_scaling"].append(row)
                log(f"  {model_name:5s} N={n:6d}: {_fmt_rate(row['samples_per_s'])} samples/s, "
                    f"table {row['table_bytes'] / 2**20:.0f} MiB")
        log("full-scale projections:")
        result["studies"] = estimate_studies(device, settings, log)
        result["profile"] = profile_vectorized(models, device, settings, a.seed)
        result["elapsed_s"] = time.perf_counter() - t_start
        write_report(result, Path(a.report), argv)
        log(f"wrote {a.report}/")
    result["elapsed_s"] = time.perf_counter() - t_start
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(result, indent=2) + "\n")
        log(f"wrote {a.json}")
    log(f"done in {result['elapsed_s']:.0f} s")
    return 0


def profile_vectorized(models: tuple[str, ...], device: torch.device, settings: Settings,
                       seed: int = 0) -> dict[str, Any]:
    """Where one vectorized round at cohort 100 spends its time: the top operators (torch.profiler), and
    for logistic regression the ratio to centralized that the model's maths alone allow."""
    from torch.profiler import ProfilerActivity, profile

    out: dict[str, Any] = {"top_ops": {}}
    for model_name in models:
        case = build_case(model_name, 100, device, settings, seed)
        fn = case.rounds["vectorized"]
        fn()
        t0 = time.perf_counter()
        fn()
        rounds = max(1, min(20, int(0.5 / max(time.perf_counter() - t0, 1e-6))))  # ~0.5 s of rounds
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=acts) as prof:
            for _ in range(rounds):
                fn()
        events = prof.key_averages()
        attr = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
        total = sum(getattr(e, attr, 0.0) for e in events) or 1.0
        top = sorted(events, key=lambda e: getattr(e, attr, 0.0), reverse=True)[:8]
        out["top_ops"][model_name] = [{"op": e.key, "share": getattr(e, attr, 0.0) / total,
                                       "calls_per_round": e.count / rounds} for e in top]
        if model_name == "mclr":
            out["mclr_maths_only_ratio"] = maths_only_ratio(case, settings)
    return out


def maths_only_ratio(case: Case, settings: Settings) -> float:
    """Vectorized / centralized throughput when only the model's gradient and the SGD update run: every
    step's inputs gathered beforehand (the vectorized steps with the round's active counts, the centralized
    ones at batch cohort x 10). The ceiling of what the engine around them can reach."""
    from fedbench.engine.local import active_counts

    device = case.device
    model = build_model(case.model_name, FEATURES[case.model_name], NUM_CLASSES)
    theta0 = model.init(torch_generator(0, -1, "init")).to(device)
    counts = active_counts(case.schedule.steps, int(case.schedule.steps.max()))
    g = torch_generator(0, 0, "minibatch")

    def inputs(k: int, b: int):
        x = model.prepare_inputs(torch.randn(k, b, *FEATURES[case.model_name], generator=g)).to(device)
        w = torch.full((k, b, 1), 1.0 / b, device=device)
        y = torch.randint(0, NUM_CLASSES, (k, b, 1), generator=g).to(device)
        return x, torch.zeros(k, b, NUM_CLASSES, device=device).scatter_(-1, y, w), w

    steps = [inputs(int(a), CLIENT_BATCH) for a in counts]
    central = inputs(1, case.cohort * CLIENT_BATCH)

    def vectorized() -> None:
        theta = theta0.expand(int(counts[0]), -1).clone()
        for x, t, w in steps:
            theta = theta[: len(x)]
            theta = torch.add(theta, model.batched_grad(theta, x, t, w), alpha=-LR)
        _sync(device)

    def centralized() -> None:
        theta = theta0.unsqueeze(0)
        for _ in range(case.centralized_steps):
            theta = theta - LR * model.batched_grad(theta, *central)
        _sync(device)

    times = time_interleaved({"vectorized": vectorized, "centralized": centralized}, settings.min_time, 30)
    vec = case.schedule.samples / np.asarray(times["vectorized"])
    cen = case.samples["centralized_module"] / np.asarray(times["centralized"])
    return float(np.median(vec / cen))


if __name__ == "__main__":
    sys.exit(main())

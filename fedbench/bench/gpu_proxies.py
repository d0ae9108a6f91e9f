"""Issue 49's items of the prepared GPU check (the review's section 8, items 2, 3 (its 5-row step), 5 and 6), each timed on the device and
printed beside the CPU proxy that stands for it (fedbench.bench.proxies), so that the calibration the proxies are
read with is refit whenever a card is lent. Torch and numpy only, as fedbench.bench.gpucheck.

- :func:`round_fixed`: the round's fixed cost of a stack of ``runs`` runs (FedProx, mclr, one local step a
  client, evaluated at round 0 and on the final model only): seconds a round from the wall time of 3 + k rounds
  minus 3 rounds, with torch's count of synchronising operations a round (``torch.cuda.set_sync_debug_mode``)
  beside the proxies: ATen ops outside the local steps a round and the host's waits a round, counted on the CPU.
- :func:`stacked_evaluation`: one evaluation (train and test, every client) of ``models`` CIFAR-CNN models on the
  CNN study's data, in one pass a chunk (fedbench.engine.kernels.generic.BATCHED_EVAL_DEVICES, CUDA's default)
  against a pass a model: the median of 5 timings each after a warm-up, and the largest difference of the losses,
  beside the proxy: the passes counted both ways.
- :func:`cnn_step`: a CIFAR-CNN chain step at 5 rows (FedLaAvg's sequential-SGD arm, 70 M steps: the largest
  uncertain figure of the drawn profile, priced at the 100-row step's latency) against that price.
- :func:`synthetic_study`: FedProx's 140-run synthetic study stacked as the engine stacks it today, for as many of
  its first 20 rounds as the budget allows, projected to 200 rounds by its drawn chain (the seconds a chain step
  measured, times the chain of all rounds) beside the proxy: the chain, stacked as today and as one stack.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def round_fixed(device, runs: int = 30, rounds: int = 20, setup=None) -> dict[str, Any]:
    """Seconds a round of a stack of ``runs`` runs (module docstring), with torch's syncs a round (CUDA) and the
    CPU proxies at the same stack; ``setup``: fedbench.bench.proxies.RoundSetup (default its own)."""
    import warnings

    import torch

    from fedbench.bench import proxies

    setup = setup or proxies.RoundSetup()
    _simulate_on(setup, runs, 1, device)  # warm-up: the data, the kernel, the device's first launches
    seconds, syncs = {}, {}
    for n in (3, 3 + rounds):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if device.type == "cuda":
                torch.cuda.set_sync_debug_mode("warn")
            try:
                _sync(device)
                t0 = time.perf_counter()
                _simulate_on(setup, runs, n, device)
                _sync(device)
                seconds[n] = time.perf_counter() - t0
            finally:
                if device.type == "cuda":
                    torch.cuda.set_sync_debug_mode("default")
        syncs[n] = sum("synchronizing" in str(w.message) for w in caught)
    ops = proxies.round_ops(setup, runs, batched=True)  # the signal as CUDA runs it (one pass a stack)
    host = proxies.round_syncs(setup, 1, block=1)
    return {"runs": runs, "rounds_timed": rounds, "round_s": (seconds[3 + rounds] - seconds[3]) / rounds,
            "torch_syncs_per_round": (syncs[3 + rounds] - syncs[3]) / rounds if device.type == "cuda" else None,
            "cpu_ops_outside_steps": ops["outside"], "cpu_host_syncs_per_round": host["per_round"]}


def _simulate_on(setup, runs: int, rounds: int, device) -> None:
    from fedbench.algorithms import build_algorithm
    from fedbench.bench.proxies import PROTOCOL_EVERY, _synthetic
    from fedbench.engine.evaluation import EvalSpec
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    data, model = _synthetic(setup.devices)
    protocol = (EvalSpec("train", every=PROTOCOL_EVERY), EvalSpec("test", every=PROTOCOL_EVERY))
    cfg = SimulationConfig(rounds=rounds, clients_per_round=setup.clients_per_round, local_epochs=1, batch_size=10,
                           local_steps=setup.local_steps, device=str(device), evaluations=protocol,
                           dissimilarity_every=0, checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.05, mu=1.0))
             for s in range(runs)]
    simulate_stack(model, specs)


def stacked_evaluation(device, models: int = 15, repeats: int = 5, scale: float = 1.0) -> dict[str, Any]:
    """One evaluation of ``models`` CIFAR-CNN models, one pass a chunk against a pass a model (module docstring);
    ``scale`` < 1 shrinks the CNN study's federation (the CPU part)."""
    import torch

    import fedbench.engine.kernels.generic as generic
    from fedbench.bench import proxies, studies
    from fedbench.engine.kernels import choose_kernel
    from fedbench.engine.metrics import DeviceData, evaluate_many

    w = studies.cnn_study(scale=scale)
    data = DeviceData.build(w.dataset(w.runs[0].dataset), device)
    from fedbench.bench.federation import bench_model

    model = bench_model("cifar_cnn").build().to(device)
    kernel = choose_kernel(model, device, cohort=models * w.clients_per_round)
    thetas = torch.stack([model.init(torch.Generator().manual_seed(i)) for i in range(models)]).to(device)
    batched_devices = generic.BATCHED_EVAL_DEVICES

    def run(batched: bool):
        generic.BATCHED_EVAL_DEVICES = (device.type,) if batched else ()
        try:
            return evaluate_many(kernel, thetas, data, with_dissimilarity=False)
        finally:
            generic.BATCHED_EVAL_DEVICES = batched_devices

    times, results = {}, {}
    for batched in (True, False):
        results[batched] = run(batched)  # warm-up
        samples = []
        for _ in range(repeats):
            _sync(device)
            t0 = time.perf_counter()
            run(batched)
            _sync(device)
            samples.append(time.perf_counter() - t0)
        times[batched] = statistics.median(samples)
    diff = max(abs(a.train_loss - b.train_loss) + abs(a.test_loss - b.test_loss)
               for a, b in zip(results[True], results[False]))
    return {"models": models, "kernel": kernel.name, "one_pass_s": times[True], "pass_a_model_s": times[False],
            "max_abs_loss_difference": diff,
            "cpu_passes": {"one_pass": proxies.eval_passes(models, batched=True)["passes"],
                           "pass_a_model": proxies.eval_passes(models)["passes"]}}


def synthetic_study(device, seconds: float, max_rounds: int = 20) -> dict[str, Any]:
    """FedProx's synthetic study as the engine stacks it, timed for up to ``max_rounds`` rounds within about
    ``seconds``, projected to its 200 rounds by the chain (module docstring)."""
    import numpy as np

    from fedbench.bench import proxies, studies
    from fedbench.bench.work import planned_work
    from fedbench.bench.workload import group_stacks
    from fedbench.engine.simulation import RunSpec, simulate_stack
    from fedbench.models import build_model

    w = studies.fedprox_study()
    first = w.dataset(w.runs[0].dataset)
    model = build_model(w.model, first.feature_shape, first.num_classes)
    chain = proxies.synthetic_chain()

    def specs(rounds: int):
        return [RunSpec(w.config(r, rounds, str(device)), w.dataset(r.dataset), w.algorithm(r)) for r in w.runs]

    def timed(rounds: int) -> tuple[float, int]:
        all_specs = specs(rounds)
        work = [planned_work(s.cfg, s.dataset.train.sizes, s.algorithm.keeps_partial_work, rounds) for s in all_specs]
        groups = group_stacks(all_specs, tuple(range(len(all_specs))))
        _sync(device)
        t0 = time.perf_counter()
        for g in groups:
            simulate_stack(model, [all_specs[i] for i in g])
        _sync(device)
        steps = int(sum(np.max([work[i].chain for i in g], axis=0).sum() for g in groups))
        return time.perf_counter() - t0, steps

    one_s, one_chain = timed(1)
    rounds = int(max(1, min(max_rounds, seconds / max(one_s, 1e-3))))
    total_s, total_chain = timed(rounds) if rounds > 1 else (one_s, one_chain)
    per_step = total_s / max(total_chain, 1)
    return {"rounds_timed": rounds, "seconds": total_s, "chain_timed": total_chain, "s_per_chain_step": per_step,
            "projected_s": per_step * chain["chain"], "projected_one_stack_s": per_step * chain["one_stack_chain"],
            "cpu_chain": chain["chain"], "cpu_one_stack_chain": chain["one_stack_chain"]}


def cnn_step(device, rows: int = 5, steps: int = 40) -> dict[str, Any]:
    """Seconds a chain step of a stack of ``rows`` CIFAR-CNN rows (``rows`` runs of one client each, batch 5:
    FedLaAvg's sequential-SGD arm), from the wall time of 10 + ``steps`` local steps minus 10; beside what the
    drawn profile prices that step at (fedbench.bench.drawn_cost: the smallest stack timed, 100 rows)."""
    from fedbench.algorithms import build_algorithm
    from fedbench.bench import drawn_cost, studies
    from fedbench.bench.federation import bench_model
    from fedbench.engine.simulation import RunSpec, SimulationConfig, simulate_stack

    w = studies.cnn_study(scale=0.1)
    data = w.dataset(w.runs[0].dataset)
    model = bench_model("cifar_cnn").build()

    def timed(local_steps: int) -> float:
        cfg = SimulationConfig(rounds=1, clients_per_round=1, local_steps=local_steps, batch_size=5,
                               device=str(device), dissimilarity_every=0, evaluations=(), checkpoint_every=10**9)
        specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedavg", lr=0.01))
                 for s in range(rows)]
        _sync(device)
        t0 = time.perf_counter()
        simulate_stack(model, specs)
        _sync(device)
        return time.perf_counter() - t0

    timed(2)  # warm-up
    step_s = (timed(10 + steps) - timed(10)) / steps
    unit = drawn_cost.fit_unit(drawn_cost.load_table(drawn_cost.H200_TABLE)["studies"]["fedlaavg_cifar10"]["units"]
                               ["cifar_cnn@5"])
    a, b = unit.step_line(rows)
    return {"rows": rows, "step_s": step_s, "priced_step_s": a + b * rows}


def lines(found: dict[str, Any], card: str) -> list[str]:
    """Each item beside its CPU proxy, one line each."""
    out = []
    r = found.get("round_fixed")
    if r:
        torch_syncs = "-" if r["torch_syncs_per_round"] is None else f"{r['torch_syncs_per_round']:g}"
        out.append(f"round of a {r['runs']}-run stack: {r['round_s'] * 1e3:.2f} ms ({card}; target <= 1 ms), torch's "
                   f"syncs a round {torch_syncs} | CPU proxy: {r['cpu_ops_outside_steps']:g} ATen ops outside the "
                   f"local steps a round, {r['cpu_host_syncs_per_round']:g} host waits a round")
    e = found.get("stacked_evaluation")
    if e:
        out.append(f"evaluation of {e['models']} CNN models ({e['kernel']}): one pass {e['one_pass_s'] * 1e3:.1f} ms, "
                   f"a pass a model {e['pass_a_model_s'] * 1e3:.1f} ms ({card}); max |loss difference| "
                   f"{e['max_abs_loss_difference']:.2g} | CPU proxy: passes {e['cpu_passes']['one_pass']} against "
                   f"{e['cpu_passes']['pass_a_model']}")
    c = found.get("cnn_step")
    if c:
        out.append(f"CIFAR-CNN chain step at {c['rows']} rows (FedLaAvg's sequential arm): {c['step_s'] * 1e3:.2f} ms "
                   f"({card}) | priced in the drawn profile at {c['priced_step_s'] * 1e3:.2f} ms (the smallest "
                   "stack timed); 70 M such steps")
    s = found.get("synthetic_study")
    if s:
        out.append(f"FedProx synthetic study, stacked as today, {s['rounds_timed']} rounds: "
                   f"{s['s_per_chain_step'] * 1e6:.0f} us a chain step, projected {s['projected_s']:.0f} s "
                   f"({s['projected_one_stack_s']:.0f} s as one stack) ({card}; target <= 60 s) | CPU proxy: chain "
                   f"{s['cpu_chain']:,} ({s['cpu_one_stack_chain']:,} as one stack)")
    return out

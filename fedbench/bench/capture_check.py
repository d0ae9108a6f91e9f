"""The measurement of the captured local-step loop (fedbench.engine.capture) that the prepared GPU check calls:
:func:`capture_check` returns a dict of numbers (captured vs eager differences, round times), or says it skipped
where there is no CUDA. A module of its own so that fedbench.engine.capture imports nothing of the round loop."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch

from fedbench.engine.capture import CAPTURE_MODES, GPU_TOLERANCE


def capture_check(runs: int = 140, clients: int = 10, local_epochs: int = 20, repeats: int = 5,
                  device: str = "cuda") -> dict[str, Any]:
    """On CUDA: one round of FedProx's synthetic study at the paper's settings (mclr, 30 devices, K = ``clients``,
    E = ``local_epochs``, batch 10, lr 0.01, ``runs`` runs of mu x seed x stragglers in one stack) run three ways on
    the same schedules and starting models: the ragged eager path (capture none), the static padded path eager,
    and the static path replayed from one CUDA graph. Returns the largest absolute differences of the local models
    (captured vs static eager, captured vs ragged; both must be <= :data:`GPU_TOLERANCE`), the median time of
    ``run_round`` (local steps and aggregation; the schedules are drawn before the clock starts) of each way over
    ``repeats`` rounds, per local step of the round's longest client, and the first round's (for cuda_graph: with
    the capture); plus a short whole simulation (3 rounds, 20 runs) with capture none vs cuda_graph. About a minute
    on an H100/H200 at the defaults (not yet run on one). On a machine without CUDA: {"skipped": reason}. Imports
    neither MLflow nor DVC."""
    if not torch.cuda.is_available():
        return {"skipped": "no CUDA device here; the captured path runs only on CUDA"}
    from fedbench.algorithms import FedProx
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.round import run_round, schedule_round
    from fedbench.engine.simulation import RunSpec, SimulationConfig, build_stack, simulate_stack
    from fedbench.models import build_model
    from fedbench.seeding import torch_generator

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ds = generate_synthetic(1, 1, num_devices=30, seed=0)
    model = build_model("mclr", ds.feature_shape, ds.num_classes)
    mus, fractions = (0.0, 0.001, 0.01, 0.1, 1.0, 0.5, 2.0), (0.0, 0.5, 0.9, 0.2)
    specs = []
    for i in range(runs):
        cfg = SimulationConfig(rounds=3, clients_per_round=clients, local_epochs=local_epochs, batch_size=10,
                               straggler_fraction=fractions[i % len(fractions)], seed=i // len(mus), device=device,
                               checkpoint_every=10_000)
        specs.append(RunSpec(cfg, ds, FedProx(lr=0.01, mu=mus[i % len(mus)])))
    out: dict[str, Any] = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "runs": runs,
                           "clients_per_run": clients, "tolerance": GPU_TOLERANCE}
    thetas = {}
    for mode in CAPTURE_MODES:
        mode_specs = [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, capture=mode)) for s in specs]
        stack, states = build_stack(model, mode_specs)
        times, result = [], None
        for _ in range(repeats):
            for st, spec in zip(states, mode_specs):  # every repeat restarts round 0 from the run's own w_0
                theta0 = stack.model.init(torch_generator(st.cfg.seed, -1, "init")).to(stack.device)
                st.state = spec.algorithm.init(theta0, ds.num_clients)
            schedules = [s for s in (schedule_round(stack, st, 0) for st in states) if s is not None]
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run_round(stack, schedules)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            result = torch.stack([st.state.theta for st in states])
        shape_steps = max(int(s.steps.max()) for s in schedules)
        out[f"first_round_ms_{mode}"] = 1e3 * times[0]
        times.sort()
        out[f"round_ms_{mode}"] = 1e3 * times[len(times) // 2]
        out[f"step_us_{mode}"] = 1e6 * times[len(times) // 2] / shape_steps
        out["rows"] = sum(len(s.steps) for s in schedules)
        out["steps"] = shape_steps
        thetas[mode] = result
        if stack.captured is not None:
            out["graphs_captured"] = stack.captured.captures
    out["max_abs_captured_vs_static"] = float((thetas["cuda_graph"] - thetas["static"]).abs().max())
    out["max_abs_captured_vs_ragged"] = float((thetas["cuda_graph"] - thetas["none"]).abs().max())
    short = specs[:20]
    whole = {mode: simulate_stack(model, [dataclasses.replace(s, cfg=dataclasses.replace(s.cfg, capture=mode))
                                          for s in short]) for mode in ("none", "cuda_graph")}
    out["max_abs_simulation_captured_vs_none"] = max(
        float((a.theta - b.theta).abs().max()) for a, b in zip(whole["none"], whole["cuda_graph"]))
    out["passed"] = all(out[k] <= GPU_TOLERANCE for k in ("max_abs_captured_vs_static", "max_abs_captured_vs_ragged",
                                                           "max_abs_simulation_captured_vs_none"))
    return out

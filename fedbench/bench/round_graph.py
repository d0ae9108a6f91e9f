"""Graph breaks of a round under ``torch.compile(fullgraph=True)`` (issue 49, item 3: "capture the whole round in one
graph per block shape on CUDA"), counted on the CPU by TorchDynamo's ``explain`` (tracing only: no code is
generated, so it takes seconds, not the ~30 s of an inductor compile).

Two functions of a FedProx mclr stack at a static shape (``capture: static``), each traced on one round's inputs:

- ``steps``: the round's local steps on the device (fedbench.engine.static.run_static on the round's StaticCohort),
  the part a CUDA graph captures today (fedbench.engine.capture);
- ``round``: the whole round as the engine runs it (fedbench.engine.round.run_round: the static layout, the merged
  cohort, the local steps, each run's client_result and server_update).

``graph_breaks`` and their reasons are what the compiler reports; a round is one graph where it is 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def _stack(runs: int, rounds: int = 1):
    """A FedProx mclr stack on fedbench.bench.proxies.RoundSetup's data (generated here: importing that module would
    make an import cycle), built and scheduled for round 0."""
    from fedbench.algorithms import build_algorithm
    from fedbench.data.synthetic import generate_synthetic
    from fedbench.engine.round import schedule_stack
    from fedbench.engine.simulation import RunSpec, SimulationConfig, build_stack
    from fedbench.models import build_model

    data = generate_synthetic(1.0, 1.0, False, num_devices=30, seed=0, train_fraction=0.9)
    model = build_model("mclr", data.feature_shape, data.num_classes)
    cfg = SimulationConfig(rounds=rounds, clients_per_round=3, local_epochs=1, batch_size=10, local_steps=2,
                           device="cpu", capture="static", evaluations=(), dissimilarity_every=0,
                           checkpoint_every=10**9)
    specs = [RunSpec(dataclasses.replace(cfg, seed=s), data, build_algorithm("fedprox", lr=0.05, mu=1.0))
             for s in range(runs)]
    stack, states = build_stack(model, specs)
    return stack, states, schedule_stack(stack, states, 0)


def explain(part: str = "steps", runs: int = 2) -> dict[str, Any]:
    """TorchDynamo's account of ``part`` ("steps" or "round") of a stack of ``runs`` runs: graphs, graph breaks and
    each reason (with the fedbench line that made it) and how often it broke there."""
    import torch

    import fedbench.engine.round as round_
    from fedbench.engine.static import StaticShape, pad_schedule, run_static

    stack, _, schedules = _stack(runs)
    torch._dynamo.reset()
    if part == "steps":
        steps = [s.steps for s in schedules]
        shape = StaticShape(rows=sum(len(s) for s in steps), steps=int(max(s.max() for s in steps)),
                            batch=stack.batch_size)
        cohort = pad_schedule(steps, [s.batches for s in schedules], shape, stack.device, buckets=True,
                              row_bcast=True)
        from fedbench.engine import tree

        local = tree.concat([s.local for s in schedules])
        bcast = round_.row_broadcast([s.bcast for s in schedules],
                                     torch.repeat_interleave(torch.arange(runs), torch.tensor([len(s) for s in steps])))
        algorithm = round_.step_form(schedules[0].algorithm, local)

        def fn(local, bcast):
            return run_static(algorithm, stack.kernel, bcast, local, stack.x_prepared, stack.y, cohort)

        args = (local, bcast)
    elif part == "round":
        def fn():
            round_.run_round(stack, schedules)
            return [s.run.state.theta for s in schedules]

        args = ()
    else:
        raise ValueError(f"part: {part!r} is not allowed; allowed: steps, round")
    out = torch._dynamo.explain(fn)(*args)
    reasons = {}
    for b in out.break_reasons:
        frames = [f for f in getattr(b, "user_stack", []) if "fedbench" in f.filename]
        where = f"{frames[-1].filename.split('fedbench/')[-1]}:{frames[-1].lineno}" if frames else "?"
        why = f"{str(getattr(b, 'reason', b)).splitlines()[0][:120]} at {where}"
        reasons[why] = reasons.get(why, 0) + 1
    return {"part": part, "runs": runs, "graphs": out.graph_count, "graph_breaks": out.graph_break_count,
            "ops": out.op_count, "reasons": reasons}

"""The fused recurrent step against the engine's static path, for the prepared GPU check (issue 53, items 3 and 6:
"the LSTM step at 1 and 200 rows ... against the CPU within 1e-4"): one round of FedProx local work on a paper
model at its full size, drawn here (parameters near the model's init, random token ids, rows that finish at
different steps, last minibatches partial), run two ways from the same inputs:

- ``static``: fedbench.engine.static.run_static on the CPU, the reference;
- ``fused``: fedbench.engine.fused.rnn.run_fused on ``device`` (CUDA, or the CPU under Triton's interpreter).

- ``captured`` (CUDA only): the fused round recorded once in one CUDA graph (PyTorch's torch.cuda.graph recipe:
  a warm-up run on a side stream, then the capture) and replayed; the graph holds the round's every launch, its
  buffers allocated in the graph's own pool, so a replay recomputes the round from the same inputs. This is how the
  engine would run it (issue 53, item 6: "the LSTM step at 1 and 200 rows captured"): the step index is a launch
  argument, so a graph holds a whole round of chain steps, not one step replayed. Elsewhere its row says why it
  was skipped (:data:`NO_CUDA`).

For each: the largest |difference| from the reference, the launches a chain step (the fused ones counted at Triton's
launch entry; the captured ones as they were recorded into the graph) and, on CUDA, the median time of a chain step
over ``repeats`` runs (replays) after one warm-up run.

    python -m fedbench.bench.fused_rnn_check [--model fedprox_shakespeare_lstm] [--rows 1 --rows 200]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import torch

from fedbench.bench.fused_rnn_aot import PAPER_MODELS, _model
from fedbench.engine import tree
from fedbench.engine.fused import rnn
from fedbench.engine.kernels.rnn import RecurrentKernel
from fedbench.engine.static import StaticCohort, run_static
from fedbench.models.recurrent import FROZEN_TABLE


def draw_round(model: Any, rows: int, steps: int, batch: int, seq: int, seed: int = 0) -> tuple:
    """run_static's arguments for one FedProx (mu 1, lr 0.1) round of ``rows`` rows on the CPU: row k trains
    steps - (k % 2) steps (the finished-row mask), its last minibatch one sample short (a partial minibatch)."""
    from fedbench.algorithms import build_algorithm

    g = torch.Generator().manual_seed(seed)
    kernel = RecurrentKernel(model)
    theta0 = model.init(g)
    theta = theta0 + 0.01 * torch.randn(rows, model.num_params, generator=g)
    embedding = model.module.embedding
    vocab = embedding.num_embeddings if embedding is not None else model.frozen[FROZEN_TABLE].shape[0]
    n = rows * steps * batch
    x = torch.randint(0, vocab, (n, seq), generator=g).float()
    classes = 2 if model.loss == "sigmoid_ce" else model.module.head[-1].out_features
    y = torch.randint(0, classes, (n,), generator=g)
    batches = torch.arange(n).view(rows, steps, batch).transpose(0, 1).contiguous()
    active = torch.ones(steps, rows, dtype=torch.bool)
    for k in range(rows):
        last = steps - 1 - (k % 2) if steps > 1 else 0
        active[last + 1:, k] = False
        batches[last + 1:, k] = -1
        if batch > 1:
            batches[last, k, -1] = -1
    algorithm = build_algorithm("fedprox", lr=0.1, mu=1.0)
    bcast = algorithm.broadcast(algorithm.init(theta0, rows))
    cohort = StaticCohort(batches=batches, active=active, rows=rows)
    return algorithm, kernel, bcast, theta, x, y, cohort


def _to(args: tuple, device: torch.device) -> tuple:
    algorithm, kernel, bcast, theta, x, y, cohort = args
    if device.type == "cpu":
        return args
    model = kernel.model.to(device)
    return (algorithm, RecurrentKernel(model), tree.tree_map(lambda t: t.to(device), bcast), theta.to(device), x.to(device),
            y.to(device), StaticCohort(batches=cohort.batches.to(device), active=cohort.active.to(device),
                                       rows=cohort.rows))


NO_CUDA = "no CUDA: a CUDA graph is recorded and replayed on a card only"


def captured(on_device: tuple, reference: torch.Tensor, repeats: int = 5) -> dict[str, Any]:
    """The fused round of run_static's ``on_device`` arguments (on CUDA, its kernels already compiled) recorded in
    one CUDA graph and replayed: {max_abs_diff from ``reference``, launches_per_chain_step (recorded),
    us_per_chain_step (median replay)}; {"skipped": :data:`NO_CUDA`} where the arguments are not on CUDA."""
    if on_device[3].device.type != "cuda":
        return {"skipped": NO_CUDA}
    steps = on_device[-1].batches.shape[0]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        rnn.run_fused(*on_device)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with rnn.count_launches() as launches, torch.cuda.graph(graph):
        result = rnn.run_fused(*on_device)  # the graph's own output buffer
    graph.replay()
    torch.cuda.synchronize()
    out = {"max_abs_diff": float((result.cpu().double() - reference.double()).abs().max()),
           "launches_per_chain_step": launches.total / steps}
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    out["us_per_chain_step"] = 1e6 * statistics.median(times) / steps
    return out


def compare(args: tuple, device: str | torch.device = "cuda", repeats: int = 5) -> dict[str, dict]:
    """The static path on the CPU, the fused step on ``device`` and the fused round captured (:func:`captured`) from
    run_static's CPU ``args``: {path: {max_abs_diff, launches_per_chain_step, us_per_chain_step (CUDA only)}}, the
    captured path {"skipped": reason} off CUDA."""
    device = torch.device(device)
    steps = args[-1].batches.shape[0]
    reference = run_static(*args)
    on_device = _to(args, device)
    with rnn.count_launches() as launches:
        result = rnn.run_fused(*on_device)  # the warm-up run compiles the kernels
    out = {"static": {"max_abs_diff": 0.0, "launches_per_chain_step": None},
           "fused": {"max_abs_diff": float((result.cpu().double() - reference.double()).abs().max()),
                     "launches_per_chain_step": launches.total / steps}}
    if device.type == "cuda":
        for name, run in (("static", lambda: run_static(*on_device)), ("fused", lambda: rnn.run_fused(*on_device))):
            times = []
            for _ in range(repeats):
                torch.cuda.synchronize()
                start = time.perf_counter()
                run()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - start)
            out[name]["us_per_chain_step"] = 1e6 * statistics.median(times) / steps
    out["captured"] = captured(on_device, reference, repeats)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(PAPER_MODELS), action="append", help="default: all four")
    parser.add_argument("--rows", type=int, action="append", help="client rows (default: 1 and 200)")
    parser.add_argument("--steps", type=int, default=2, help="chain steps of the round (default 2)")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    for name in args.model or sorted(PAPER_MODELS):
        _, seq, batch = PAPER_MODELS[name]
        for rows in args.rows or [1, 200]:
            out = compare(draw_round(_model(name), rows, args.steps, batch, seq), args.device)
            print(json.dumps({"model": name, "rows": rows, "device": torch.cuda.get_device_name()
                              if torch.device(args.device).type == "cuda" else "cpu", **out}))


if __name__ == "__main__":
    main()

"""Each declared precision mode against fp32, per model family (issue 53, item 5; fedbench.engine.precision): the
GPU check's ``precision`` part, and ``python -m fedbench.bench.precision_check`` alone.

For each model (one of a family: mclr; a CNN; the stacked character LSTM) it runs the same short FedAvg simulation
(``rounds`` rounds of ``clients`` clients of a small random federation of the model's input shape,
fedbench.bench.federation; quick local work) once per mode on ``device``, and gives per mode the largest difference
of the final parameters from fp32's relative to the largest fp32 parameter (fedbench.engine.precision.deviation),
whether it is within the mode's declared tolerance (fedbench.engine.precision.TOLERANCE), and on CUDA the seconds
the run took (one warm-up run first). On the CPU tf32 is fp32 bit for bit and bf16 runs through autocast on the
CPU's bfloat16 kernels: what the test suite checks; the card's figures are what the check is for. Where PyTorch has
no kernel for a mode on the CPU (its oneDNN LSTM in bfloat16: a recurrent model runs bf16 on CUDA only) the mode is
reported as not computed there; on CUDA that is a failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

import torch

from fedbench.algorithms import FedAvg
from fedbench.bench.federation import BenchModel, bench_model, make_federation
from fedbench.engine.evaluation import EvalSpec
from fedbench.engine.precision import PRECISIONS, TOLERANCE, deviation
from fedbench.engine.simulation import SimulationConfig, simulate

FAMILIES = ("mclr", "leaf_femnist_cnn", "fedprox_shakespeare_lstm")  # one model of each family


def compare(spec: BenchModel, device: str, rounds: int = 2, clients: int = 5, lr: float = 0.05) -> dict[str, Any]:
    """``spec``'s short run in every mode on ``device``: per mode its deviation from fp32, within its declared
    tolerance or not, and (CUDA) its seconds."""
    model = spec.build()
    data = make_federation(spec, model, clients)
    cfg = SimulationConfig(rounds=rounds, clients_per_round=clients, local_epochs=1, batch_size=10,
                           local_steps=spec.quick_steps or 2, device=device, dissimilarity_every=0,
                           evaluations=(EvalSpec("test", every=rounds),), checkpoint_every=10**9)
    out: dict[str, Any] = {"model": spec.name, "device": device, "rounds": rounds, "clients": clients, "modes": {}}
    runs = {}
    for mode in PRECISIONS:
        run_cfg = dataclasses.replace(cfg, precision=mode)
        if device.startswith("cuda"):
            simulate(run_cfg, data, model, FedAvg(lr=lr))  # warm-up: kernels chosen and loaded once
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        try:
            runs[mode] = simulate(run_cfg, data, model, FedAvg(lr=lr))
        except RuntimeError as exc:  # PyTorch has no kernel for it here (the CPU's oneDNN LSTM in bfloat16)
            if mode == "fp32" or device.startswith("cuda"):
                raise
            out["modes"][mode] = {"unsupported": str(exc).splitlines()[0][:160]}
            continue
        seconds = time.perf_counter() - t0
        row: dict[str, Any] = {"seconds": round(seconds, 4)} if device.startswith("cuda") else {}
        if mode != "fp32":
            d = deviation(runs["fp32"], runs[mode])
            row |= {"max_rel": d["max_rel"], "tolerance": TOLERANCE[mode], "within": d["max_rel"] <= TOLERANCE[mode],
                    "bit_identical": bool(torch.equal(runs["fp32"].theta, runs[mode].theta))}
        out["modes"][mode] = row
    return out


def lines(result: dict[str, Any]) -> list[str]:
    """One line a mode: the model, the mode, its deviation against its tolerance, its time where measured."""
    out = []
    for mode, row in result["modes"].items():
        took = f", {row['seconds'] * 1e3:.1f} ms" if "seconds" in row else ""
        if mode == "fp32":
            out.append(f"{result['model']} fp32: the reference{took}")
        elif "unsupported" in row:
            out.append(f"{result['model']} {mode}: not computed on {result['device']} ({row['unsupported']})")
        else:
            out.append(f"{result['model']} {mode}: {row['max_rel']:.2e} of the largest parameter from fp32 "
                       f"(declared tolerance {row['tolerance']:g}: {'within' if row['within'] else 'OUTSIDE'})"
                       f"{'; bit-identical to fp32' if row['bit_identical'] else ''}{took}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fedbench.bench.precision_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--models", default=",".join(FAMILIES), help=f"comma-separated (default {','.join(FAMILIES)})")
    p.add_argument("--json", default=None, help="also write the results as JSON to this file")
    a = p.parse_args(argv)
    results = [compare(bench_model(name), a.device) for name in a.models.split(",") if name]
    for r in results:
        print("\n".join(lines(r)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(row.get("within", True) for r in results for row in r["modes"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())

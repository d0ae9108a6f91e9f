"""The ``ray`` executor against ``local`` (issue 13), side by side in one run: the regression's quick profile
(tests/regression/quick_profile.yaml: FedAvg and FedProx on Synthetic(1,1), 6 runs) trained by the train stage's
own function (fedbench.pipeline.train_runs) on ``workers`` processes, then as Ray tasks on a local Ray of as many
CPUs, and the dispatch cost of units that do nothing through each executor's map. Reported: Ray's start-up, the
stage's seconds per unit (a unit is a stack of runs) under each, their ratio, and whether the runs' numbers agree
bit for bit. The first Ray stage pays for starting worker processes (each imports torch); the second, on the same
cluster, is what every further stage costs.

On a GPU machine the issue also asks for GPU fractions per task against one run at a time (a 10-client CNN
study); not measured here (no GPU was available when this was written)."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

NOOP_UNITS = 20  # units that do nothing, for the dispatch cost per unit


def noop(job: int) -> int:
    """A unit that does nothing (top-level: Ray workers import it)."""
    return job


def measure_executors(workers: int = 2, repeats: int = 1, log=print) -> dict[str, Any]:
    """Seconds of the quick profile's train stage under ``local`` and ``ray`` (``repeats`` times each, the best
    kept), Ray's start-up, and the dispatch seconds per no-op unit of each executor."""
    from fedbench.config import QUICK_PROFILE as PROFILE
    from fedbench.config import load_config
    from fedbench.executors import ExecutorSettings, RayExecutor, open_executor
    from fedbench.pipeline import generate, plan_runs, study_runs, train_runs

    root = Path(__file__).resolve().parents[2]
    overrides = {**yaml.safe_load(PROFILE.read_text()), "train.workers": workers}
    cfg = {kind: load_config(root / "params.yaml", {**overrides, "train.executor": kind}) for kind in ("local", "ray")}
    keys = list(study_runs(cfg["local"]))
    out: dict[str, Any] = {"about": f"{PROFILE.name} ({len(keys)} runs, {cfg['local'].train.rounds} rounds), "
                                    f"{workers} workers / Ray CPUs", "workers": workers, "runs": len(keys)}
    with tempfile.TemporaryDirectory(prefix="fedbench-bench-ray-") as tmp:
        tmp = Path(tmp)
        for ds in cfg["local"].data.datasets:
            generate(cfg["local"], ds, root=tmp / "data")

        def stage(kind: str, name: str) -> tuple[float, list[dict[str, Any]]]:
            t0 = time.perf_counter()
            done = train_runs(cfg[kind], keys, tmp / "data", tmp / name, progress=False)
            return time.perf_counter() - t0, done

        units = len(plan_runs(cfg["local"], keys, tmp / "data", tmp / "none", workers)[0])  # the stacks of either
        local = [stage("local", f"local-{i}") for i in range(repeats)]
        t0 = time.perf_counter()
        with open_executor(ExecutorSettings("local"), workers) as ex:
            ex.map(noop, range(NOOP_UNITS))
        local_noop = time.perf_counter() - t0
        ray = RayExecutor(workers, gpu_fraction=1.0)
        try:
            t0 = time.perf_counter()
            ray.connect()
            startup = time.perf_counter() - t0
            cold = stage("ray", "ray-cold")
            warm = [stage("ray", f"ray-warm-{i}") for i in range(repeats)]
            t0 = time.perf_counter()
            ray.map(noop, range(NOOP_UNITS), progress=False)
            ray_noop = time.perf_counter() - t0
        finally:
            ray.close()
    digests = {name: [s["param_digest"] for s in done] for name, (_, done) in
               {"local": local[0], "ray-cold": cold, "ray-warm": warm[0]}.items()}
    best_local, best_warm = min(s for s, _ in local), min(s for s, _ in warm)
    out |= {
        "units": units, "ray_startup_s": startup,
        "local_s": best_local, "ray_cold_s": cold[0], "ray_warm_s": best_warm,
        "local_s_per_unit": best_local / units, "ray_warm_s_per_unit": best_warm / units,
        "ray_cold_over_local": cold[0] / best_local, "ray_warm_over_local": best_warm / best_local,
        "ray_warm_overhead_s_per_unit": (best_warm - best_local) / units,
        "noop_units": NOOP_UNITS, "local_noop_s_per_unit": local_noop / NOOP_UNITS,
        "ray_noop_s_per_unit": ray_noop / NOOP_UNITS,
        "bit_identical": digests["local"] == digests["ray-cold"] == digests["ray-warm"],
    }
    log(f"  executors: local {best_local:.2f} s, ray {cold[0]:.2f} s cold / {best_warm:.2f} s warm for {units} units; "
        f"Ray start-up {startup:.1f} s; identical: {out['bit_identical']}")
    return out


def table(e: dict[str, Any]) -> list[str]:
    return [f"{e['about']}; {e['units']} units (stacks). Ray start-up (local cluster): {e['ray_startup_s']:.1f} s. "
            f"Numbers bit-identical under both: {'yes' if e['bit_identical'] else 'NO'}.", "",
            "| executor | stage s | s per unit | / local | dispatch s per no-op unit |", "|---|---|---|---|---|",
            f"| local ({e['workers']} processes) | {e['local_s']:.2f} | {e['local_s_per_unit']:.2f} | 1.00 | "
            f"{e['local_noop_s_per_unit']:.4f} |",
            f"| ray, first stage (workers start) | {e['ray_cold_s']:.2f} | {e['ray_cold_s'] / e['units']:.2f} | "
            f"{e['ray_cold_over_local']:.2f} | - |",
            f"| ray, next stages | {e['ray_warm_s']:.2f} | {e['ray_warm_s_per_unit']:.2f} | "
            f"{e['ray_warm_over_local']:.2f} | {e['ray_noop_s_per_unit']:.4f} |"]


if __name__ == "__main__":  # python -m fedbench.bench.executors: the measurement alone, as JSON
    print(json.dumps(measure_executors(), indent=2))

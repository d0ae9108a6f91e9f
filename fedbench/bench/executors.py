"""The ``ray`` executor against ``local`` (issue 13), side by side in one run: the regression's quick profile
(tests/regression/quick_profile.yaml: FedAvg and FedProx on Synthetic(1,1), 6 runs) trained as `fedbench run`
trains them (fedbench.study.experiments.train_runs) on ``workers`` processes, then as Ray tasks on a local Ray of
as many CPUs, and the dispatch cost of units that do nothing through each executor's map. Reported: Ray's start-up,
the stage's seconds per unit (a unit is a stack of runs) under each, their ratio, and whether the runs' numbers
agree bit for bit. The first Ray stage pays for starting worker processes (each imports torch); the second, on the same
cluster, is what every further stage costs.

On a cluster (issue 54), :func:`measure_cluster`: three nodes on this machine (ray.cluster_utils.Cluster, a head that
runs no unit and two worker nodes of one CPU each), the dispatch cost of a no-op unit there (its dataset-free job,
the storage and the private folder included), and the seconds from a worker node's removal to its unit starting
again on the other node (Ray noticing the lost node, rescheduling, a worker process starting there).

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
    from fedbench.pipeline import generate
    from fedbench.study.experiments import plan_runs, study_runs, train_runs

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


def stall_first_attempt(job: tuple[str, int]) -> float:
    """A unit that logs each start (time, node) in ``job``'s folder and, on its first attempt, waits until its node is
    removed; it returns when it ran to its end (top-level: Ray workers import it)."""
    import ray

    folder, index = job
    log = Path(folder) / f"{index}.attempts"
    first = not log.exists()
    with open(log, "a") as f:
        f.write(json.dumps({"t": time.time(), "node": ray.get_runtime_context().get_node_id()}) + "\n")
    if first:
        time.sleep(300)
    return time.time()


def measure_cluster(log=print) -> dict[str, Any]:
    """On a three-node cluster on this machine: Ray's dispatch seconds per no-op unit (best of 3 batches of
    NOOP_UNITS, the first batch after the workers started), and the seconds from removing the node that runs a unit to
    that unit starting again on the other node."""
    import logging
    import os
    import threading

    import ray
    from ray.cluster_utils import Cluster

    from fedbench.executors import RayExecutor

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    out: dict[str, Any] = {"about": "a head (no CPU for units) and two worker nodes of one CPU each, on this machine"}
    try:
        t0 = time.perf_counter()
        workers = [cluster.add_node(num_cpus=1), cluster.add_node(num_cpus=1)]
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level=logging.WARNING)
        out["cluster_start_s"] = time.perf_counter() - t0
        ex = RayExecutor(workers=2, gpu_fraction=1.0)
        batches = []
        for _ in range(4):
            t0 = time.perf_counter()
            ex.map(noop, range(NOOP_UNITS), progress=False)
            batches.append((time.perf_counter() - t0) / NOOP_UNITS)
        out |= {"noop_units": NOOP_UNITS, "first_batch_s_per_unit": batches[0],
                "dispatch_s_per_unit": min(batches[1:])}
        with tempfile.TemporaryDirectory(prefix="fedbench-bench-lost-node-") as folder:
            removed: dict[str, float] = {}

            def remove() -> None:
                log_file = Path(folder) / "0.attempts"
                while not log_file.exists():
                    time.sleep(0.05)
                node = json.loads(log_file.read_text().splitlines()[0])["node"]
                removed["t"] = time.time()
                cluster.remove_node(next(w for w in workers if w.node_id == node), allow_graceful=False)

            remover = threading.Thread(target=remove, daemon=True)
            remover.start()
            (end,) = ex.map(stall_first_attempt, [(folder, 0)], progress=False)
            remover.join()
            attempts = [json.loads(line) for line in (Path(folder) / "0.attempts").read_text().splitlines()]
        out |= {"attempts": len(attempts), "resume_after_lost_node_s": attempts[-1]["t"] - removed["t"],
                "lost_node_to_done_s": end - removed["t"]}
    finally:
        ray.shutdown()
        cluster.shutdown()
    log(f"  cluster: dispatch {out['dispatch_s_per_unit'] * 1000:.0f} ms a no-op unit; a lost node's unit started again "
        f"{out['resume_after_lost_node_s']:.1f} s after the node was removed")
    return out


if __name__ == "__main__":  # python -m fedbench.bench.executors [cluster]: the measurement alone, as JSON
    import sys

    print(json.dumps(measure_cluster() if sys.argv[1:] == ["cluster"] else measure_executors(), indent=2))

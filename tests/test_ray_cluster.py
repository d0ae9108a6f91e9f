"""Issue 54: the ``ray`` executor on a cluster as clusters are, as three nodes on one machine
(``ray.cluster_utils.Cluster``): a head that runs no unit (no CPU for them) and two worker nodes of one CPU each, one
with a (fake) GPU. Every unit runs under an audit hook that refuses any file operation under the project folder
(the driver's working directory, holding data/ and the results), as a node without a shared disk would, and logs
where it ran; a worker node is removed while a unit is in flight there.

- The main job's regression profile (at 2 local epochs, not 20: what is checked is where units run and resume, not
  the profile's numbers, which tests/test_ray_executor.py holds against the reference): its stacks' checkpoints go to
  a local folder standing in for a bucket
  (train.checkpoint_storage); the unit stalled after its first checkpoint loses its node, runs again on the other
  one from that checkpoint, and every run digest equals the local executor's; nothing is left in the bucket, and the
  project folder holds only what the driver wrote.
- A paper study's fixture budget (fedproxvr_mnist on its fixture-sized real data), its checkpoints in the driver's
  folders (the default), a node removed under one of its units: the records' digests equal the local executor's.
- GPU shares: units ask for train.gpu_fraction of the fake GPU and the stage is planned for it (1 / fraction units
  at once, at most the CPUs); a stack that does not fit one GPU is refused in one line before any unit starts.
- A driver stopped (SIGTERM) cancels its units on both worker nodes.

In the default suite: the head's health checks (HEALTH) find a removed node in seconds, not Ray's 15, and every stage
fails its test after STAGE_S seconds, naming what each unit did, rather than hang the suite.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from fedbench.config import QUICK_PROFILE as PROFILE  # the main job's regression profile
from fedbench.config import load_config

# torch and the engine are imported where they are used: the units' processes import this module to find their
# function, and the stopped driver's units (test_a_driver_stopped_cancels_its_units_on_every_node) need neither

ROOT = Path(__file__).resolve().parents[1]
NODES = ({"num_cpus": 1, "num_gpus": 1}, {"num_cpus": 1})  # the worker nodes: one CPU each, the first a fake GPU
NODE_ARGS = {"include_log_monitor": False}  # a unit's output stays in its node's log files (fewer processes to start)
# Ray's GCS declares a node dead after health_check_failure_threshold failed checks, health_check_period_ms apart
# (Ray 2.60's defaults, 5 x 3000 ms: 15 s after a node's processes are gone). Until then a unit whose lease went to the
# lost node waits (a unit queued behind it, or one retried while the other node was busy): measured here, the retried
# unit of the main job started 12 s after its node's removal, a paper study's queued units 15 s after it. These checks
# find a removed node in 2.5 s (a refused connection fails a check at once) and a live one late by 3 s five times
# running (15 s of a raylet not answering) before they call it dead.
HEALTH = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 500, "health_check_timeout_ms": 3000,
          "health_check_failure_threshold": 5}
STAGE_S = 150  # a stage on the cluster that takes longer fails the test, naming what each unit did (never a hang)
STALL_S = 2 * STAGE_S  # a stalled unit waits at most this long for its node's removal
# one cluster for the module, started in one test process
pytestmark = [pytest.mark.slow(together=True)]
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
# file operations (audit events, https://docs.python.org/3/library/audit_events.html) a unit may not do in the
# project folder (os.chdir is not one: a Ray worker may start in the driver's working directory, and a unit goes back
# there from its private folder, reading and writing nothing)
GUARDED = ("open", "os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.listdir",
           "os.scandir", "os.truncate", "os.utime", "shutil.copyfile", "shutil.rmtree", "os.symlink", "os.link")
TWO_PATHS = ("os.rename", "os.replace", "shutil.copyfile", "os.symlink", "os.link")  # the others' first is the path


LIGHT = {"train.local_epochs": 2}  # the profile's runs a tenth of its local steps (its 20 epochs: 17 s of CPU each time)


def _overrides(executor: str, **more) -> dict:
    return {**yaml.safe_load(PROFILE.read_text()), "train.workers": 2, "train.executor": executor, **more}


def _inside(path: object, root: str) -> bool:
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        return False
    return os.path.abspath(os.fspath(path)).startswith(root + os.sep) or os.path.abspath(os.fspath(path)) == root


def _guard_project() -> None:
    """In a unit's process: refuse any file operation under the project folder (once per process; a hook stays)."""
    if getattr(sys, "_fedbench_guarded", False):
        return
    root = os.path.realpath(os.environ["FEDBENCH_TEST_PROJECT"])

    def hook(event: str, args: tuple) -> None:
        paths = args[:2] if event in TWO_PATHS else args[:1]
        if event in GUARDED and any(_inside(a, root) for a in paths):
            raise PermissionError(f"a unit touched the project folder: {event} {args[:2]}")

    sys.addaudithook(hook)
    sys._fedbench_guarded = True


def unit_in_a_cluster(job) -> list:
    """fedbench.study.runner._run_stack under the project guard, logging each attempt (its unit, node, working
    folder, resources, the round each run resumes from); the first attempt of the unit the test names (in
    stall.json beside the log: part of one of its runs' names, or null for the first unit to start) stalls, at its
    start or after its first checkpoint, until its node is removed.
    Top-level: the workers import it."""
    import ray
    import torch

    from fedbench.engine import simulation
    from fedbench.study.runner import _run_stack  # the unit every stack runs as (this process's: unpatched)

    _guard_project()
    log = Path(os.environ["FEDBENCH_TEST_LOG"])
    unit = job.sims[0].name
    earlier = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    first = not any(a.get("unit") == unit for a in earlier)
    stall = json.loads((log.parent / "stall.json").read_text()) if (log.parent / "stall.json").exists() else {}
    context = ray.get_runtime_context()
    with open(log, "a") as f:
        f.write(json.dumps({"unit": unit, "runs": [sim.name for sim in job.sims], "node": context.get_node_id(),
                            "started": time.time(), "checkpoints": [c.name.split("-", 1)[1] for c in job.checkpoints if c],
                            "pid": os.getpid(), "cwd": os.getcwd(),
                            "resources": context.get_assigned_resources(),
                            "resumed_from": {sim.name: torch.load(c, weights_only=False)["round"]  # by run
                                             if c is not None and c.exists() else None
                                             for sim, c in zip(job.sims, job.checkpoints)}}) + "\n")
    if first and stall and (any(stall["unit"] in sim.name for sim in job.sims) if stall["unit"] else not earlier):
        if stall["at"] == "start":
            time.sleep(STALL_S)
        save = simulation._save_checkpoint

        def save_then_stall(*args, **kwargs):
            save(*args, **kwargs)
            time.sleep(STALL_S)  # the unit copies the checkpoint to the storage, then its node is removed

        simulation._save_checkpoint = save_then_stall
    return _run_stack(job)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The cluster, its log and its project folder: a head (0 CPUs: the driver's node) and two worker nodes of one
    CPU each, the first with one fake GPU. The nodes' environment names the project folder and the log (the units'
    processes inherit it)."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    from ray.cluster_utils import Cluster

    base = tmp_path_factory.mktemp("ray-cluster")
    project, log = base / "project", base / "attempts.jsonl"
    project.mkdir()
    env = RAY_ENV | {"FEDBENCH_TEST_PROJECT": str(project), "FEDBENCH_TEST_LOG": str(log),
                     "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "no_monitor": True,
                                                      "_system_config": HEALTH, **NODE_ARGS})
    try:
        workers = [c.add_node(**resources, **NODE_ARGS) for resources in NODES]
        c.wait_for_nodes()
        ray.init(address=c.address, logging_level=logging.WARNING)
        yield c, workers, project, log
    finally:
        ray.shutdown()
        c.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _entries(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _attempts(log: Path) -> list[dict]:
    """The units' attempts, as they logged them (not the removals the test logged)."""
    return [e for e in _entries(log) if "unit" in e]


def _stage(what: str, run, log: Path, lose: tuple[str | None, object] | None = None, cluster=None):
    """``run()`` (a stage on the cluster) in a thread of its own, its result returned; it fails the test, naming each
    unit's attempts, if it has not finished within STAGE_S seconds. With ``lose = (unit, ready)``: once the first
    attempt of ``unit`` (part of one of its runs' names; None: the first unit to start) is logged and ``ready(attempt)``
    (one of its checkpoints kept, or it started), its node is removed, as a lost node, and a fresh node of the same resources is
    started in its place while the stage goes on (from this thread: Ray starts nodes from the main thread only). The
    removal's time is logged as ``{"removed": node, "at": time}``."""
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = run()
        except BaseException as exc:  # noqa: BLE001 - raised again in the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target, name=f"stage: {what}", daemon=True)
    thread.start()
    deadline = time.monotonic() + STAGE_S
    while thread.is_alive() and time.monotonic() < deadline:
        if lose is not None:
            unit, ready = lose
            mine = [a for a in _attempts(log) if "unit" in a and (unit is None or any(unit in r for r in a["runs"]))]
            if mine and ready(mine[0]):
                c, workers, _, _ = cluster
                i = next(i for i, w in enumerate(workers) if w.node_id == mine[0]["node"])
                c.remove_node(workers[i], allow_graceful=False)
                with open(log, "a") as f:
                    f.write(json.dumps({"removed": mine[0]["node"], "at": time.time()}) + "\n")
                workers[i] = c.add_node(**NODES[i], **NODE_ARGS)
                lose = None
        thread.join(0.1)
    if thread.is_alive():
        pytest.fail(f"{what}: not finished within {STAGE_S} s on the cluster{'' if lose is None else ', no node removed'}"
                    f"; the units' attempts: {_attempts(log)}", pytrace=False)
    if lose is not None:
        pytest.fail(f"{what}: finished before a node could be removed; the units' attempts: {_attempts(log)}",
                    pytrace=False)
    if "error" in out:
        raise out["error"]
    return out["value"]


def _resumed_after(log: Path, unit: str | None) -> float:
    """Seconds from the node's removal to the second attempt of ``unit`` (None: the first unit) starting elsewhere."""
    removed = next(e["at"] for e in _entries(log) if "removed" in e)
    units = _attempts(log)
    first = units[0]["unit"] if unit is None else next(a["unit"] for a in units if any(unit in r for r in a["runs"]))
    return [a["started"] for a in units if a["unit"] == first][1] - removed


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_main_job_on_a_cluster_without_shared_disk_survives_a_lost_node(cluster, tmp_path, monkeypatch):
    from fedbench import pipeline
    from fedbench.study import experiments
    from fedbench.study import runner

    _, _, project, log = cluster
    monkeypatch.chdir(project)
    more = {"train.checkpoint_every": 1, **LIGHT}
    local_cfg = load_config(ROOT / "params.yaml", _overrides("local", **more, **{"train.workers": 1}))
    keys = list(experiments.study_runs(local_cfg))
    for ds in local_cfg.data.datasets:
        pipeline.generate(local_cfg, ds, root=project / "data")
    local = experiments.train_runs(local_cfg, keys, project / "data", tmp_path / "runs-local", progress=False)
    before = _files(project)

    log.unlink(missing_ok=True)
    bucket = tmp_path / "bucket"  # a local folder standing in for s3://...
    stalled = "synthetic_1_1 fedavg stragglers=0 seed=0"  # a run: its unit (whatever runs share it) stalls
    (log.parent / "stall.json").write_text(json.dumps({"unit": stalled, "at": "checkpoint"}))
    monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **more, **{"train.checkpoint_storage": str(bucket)}))
    on_ray = _stage("the main job's regression profile",
                    lambda: experiments.train_runs(cfg, keys, Path("data"), Path("results"), progress=False), log,
                    lose=(stalled, lambda first: any((bucket / c).exists() for c in first["checkpoints"])),
                    cluster=cluster)
    print(f"lost node: the main job's unit started again {_resumed_after(log, stalled):.2f} s after its node's removal")

    assert [s["param_digest"] for s in on_ray] == [s["param_digest"] for s in local]
    assert [s["final"] for s in on_ray] == [s["final"] for s in local]
    mine = [a for a in _attempts(log) if stalled in a["runs"]]
    assert len(mine) == 2 and mine[0]["node"] != mine[1]["node"]  # lost with its node, run again on the other
    assert set(mine[0]["resumed_from"].values()) == {None}  # the stall came after one run's first checkpoint:
    assert sorted(r for r in mine[1]["resumed_from"].values() if r is not None) == [1]  # it resumes from the bucket
    others = [a["unit"] for a in _attempts(log) if stalled not in a["runs"]]
    assert others and len(others) == len(set(others))  # every other unit ran once: nothing finished was run again
    assert all(a["cwd"] != str(project) and not a["cwd"].startswith(str(project)) for a in _attempts(log))
    assert not list(bucket.iterdir())  # kept until the driver had the outcomes, then removed
    written = _files(project) - before  # only what the driver writes: the store's outcomes, records and locks
    store, runs = "results/fedprox_main_job/pipeline/outcomes", "results/fedprox_main_job/runs"
    outcomes = {f"{store}/{s['fingerprint']}.json" for s in on_ray}
    assert outcomes <= written and all(
        w in outcomes or w.endswith(".lock") or w in ("results", "results/fedprox_main_job",
                                                      "results/fedprox_main_job/pipeline", store, runs,
                                                      f"{runs}/simulations.jsonl") for w in written), written


def test_a_paper_study_on_a_cluster_without_shared_disk_survives_a_lost_node(cluster, monkeypatch, study_run):
    """fedproxvr_mnist at its fixture budget (its fixture-sized real data: tests/studies/real_fixtures), locally and on
    the cluster, the first unit's node removed as it starts; its checkpoints in the driver's folders (the default).
    The local run is the session's (``study_run``, tests/conftest.py: run_claim_study on the local executor, one
    worker, the same budget and data bytes, run once for every test that reads it)."""
    from fedbench.executors import ExecutorSettings
    from fedbench.study import runner
    from fedbench.study.output import run_claim_study
    from tests.studies.real_fixtures import build_for

    _, _, project, log = cluster
    local = study_run("fedproxvr_mnist")
    monkeypatch.chdir(project)
    real_root = build_for("fedproxvr_mnist", project / "real")  # in the project folder: no node reads it there
    folder = project / "study-ray"

    def study():
        return run_claim_study("fedproxvr_mnist", folder, workers=2, budget="fixture", executor=ExecutorSettings("ray"),
                               real_root=real_root)

    log.unlink(missing_ok=True)
    (log.parent / "stall.json").write_text(json.dumps({"unit": None, "at": "start"}))
    monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
    _stage("fedproxvr_mnist's fixture budget", study, log, lose=(None, lambda first: True), cluster=cluster)
    print(f"lost node: the study's unit started again {_resumed_after(log, None):.2f} s after its node's removal")
    records = {kind: [json.loads(line) for line in (out / "simulations.jsonl").read_text().splitlines()]
               for kind, out in (("local", local.out), ("ray", folder))}
    numbers = {kind: sorted((r["name"], r["param_digest"], json.dumps(r["final"])) for r in rs)
               for kind, rs in records.items()}
    assert numbers["ray"] == numbers["local"] and len(numbers["ray"]) >= 2
    attempts = _attempts(log)
    first = attempts[0]["unit"]
    again = [a for a in attempts if a["unit"] == first]
    assert len(again) == 2 and again[0]["node"] != again[1]["node"]  # lost with its node, run again on another
    assert not list(project.rglob("*.checkpoint.pt*"))


def test_units_ask_for_their_gpu_share_and_a_stack_too_big_for_one_gpu_is_refused(cluster, tmp_path, monkeypatch):
    """On the cluster's one (fake) GPU: train.device auto trains on it, each unit asking for train.gpu_fraction of it,
    and the stage planned for 1 / fraction units at once at most (and the CPUs); a stack whose step does not fit one
    GPU is refused in one line before any unit starts (the GPU's memory, which a fake GPU does not have, given)."""
    from fedbench import pipeline
    from fedbench.study import experiments
    from fedbench.executors import DoesNotFit, ExecutorSettings, RayExecutor, open_executor
    from fedbench.study import runner

    _, _, project, log = cluster
    monkeypatch.chdir(project)
    for fraction, slots in ((1.0, 1), (0.5, 2)):
        with open_executor(ExecutorSettings("ray", fraction), workers=2) as ex:
            assert (ex.slots("auto"), ex.slots("cpu")) == (slots, 2)
    log.unlink(missing_ok=True)
    (log.parent / "stall.json").unlink(missing_ok=True)
    monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **{"train.device": "auto", "train.gpu_fraction": 0.5},
                                                      **LIGHT))
    keys = list(experiments.study_runs(cfg))[:1]
    for ds in cfg.data.datasets:
        pipeline.generate(cfg, ds, root=project / "data-gpu")
    monkeypatch.setattr(RayExecutor, "gpu_memory", lambda self: 2**10)  # a 1 KiB GPU
    with pytest.raises(DoesNotFit) as refused:
        experiments.train_runs(cfg, keys, Path("data-gpu"), Path("results-gpu"), progress=False)
    assert "\n" not in str(refused.value) and "more than 0.8 of one GPU of the cluster (1.0 KiB)" in str(refused.value)
    assert not log.exists() and not list(project.glob("results-gpu/train/outcomes/*.json"))  # nothing ran
    monkeypatch.setattr(RayExecutor, "gpu_memory", lambda self: 80 * 2**30)
    done = _stage("a run on a GPU share", lambda: experiments.train_runs(cfg, keys, Path("data-gpu"), Path("results-gpu"),
                                                                       progress=False), log)
    assert len(done) == 1 and {json.dumps(a["resources"], sort_keys=True) for a in _attempts(log)} == {
        json.dumps({"CPU": 1.0, "GPU": 0.5}, sort_keys=True)}


def stalled_unit(job: int) -> None:
    """A unit of the stopped driver: logs its attempt (node, process), then waits to be cancelled."""
    import ray

    with open(os.environ["FEDBENCH_TEST_LOG"], "a") as f:
        f.write(json.dumps({"unit": job, "runs": [], "node": ray.get_runtime_context().get_node_id(),
                            "pid": os.getpid()}) + "\n")
    time.sleep(STALL_S)


DRIVER = """
from fedbench.executors import ExecutorSettings, open_executor
from fedbench.guard import run_guarded
from tests.test_ray_cluster import stalled_unit


def stage():
    with open_executor(ExecutorSettings("ray"), workers=2) as ex:
        return ex.map(stalled_unit, [0, 1], progress=False)


run_guarded(stage)
"""


def test_a_driver_stopped_cancels_its_units_on_every_node(cluster, tmp_path):
    """SIGTERM to a driver (its own process, connected through RAY_ADDRESS) whose two units run on the two worker
    nodes: it ends as a stopped command (one line, exit 143), and the units' processes on both nodes are gone. The
    units wait from their start (what they would train is the other tests' business: a stop cancels them whatever
    they run), so that neither the driver nor they import torch's engine."""
    from tests.faults.conftest import alive, wait_for

    c, _, project, log = cluster
    log.unlink(missing_ok=True)
    env = os.environ | {"RAY_ADDRESS": c.address}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], cwd=project, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        units = wait_for(lambda: (a if len(a := _attempts(log)) == 2 else None), STAGE_S, "both units to start")
        assert len({a["node"] for a in units}) == 2  # one on each worker node
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 143, err[-3000:]
    wait_for(lambda: not any(alive(a["pid"]) for a in units), 30, "the units' processes to be killed")

"""Issue 54: the ``ray`` executor on a cluster as clusters are, as three nodes on one machine
(``ray.cluster_utils.Cluster``): a head that runs no unit (no CPU for them) and two worker nodes of one CPU each, one
with a (fake) GPU. Every unit runs under an audit hook that refuses any file operation under the project folder
(the driver's working directory, holding data/ and the results), as a node without a shared disk would, and logs
where it ran; a worker node is removed while a unit is in flight there.

- The main job's regression profile: its stacks' checkpoints go to a local folder standing in for a bucket
  (train.checkpoint_storage); the unit stalled after its first checkpoint loses its node, runs again on the other
  one from that checkpoint, and every run digest equals the local executor's; nothing is left in the bucket, and the
  project folder holds only what the driver wrote.
- A paper study's fixture budget (fedproxvr_mnist on its fixture-sized real data), its checkpoints in the driver's
  folders (the default), a node removed under one of its units: the records' digests equal the local executor's.
- GPU shares: units ask for train.gpu_fraction of the fake GPU and the stage is planned for it (1 / fraction units
  at once, at most the CPUs); a stack that does not fit one GPU is refused in one line before any unit starts.
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

from fedbench.config import load_config
from fedbench.regression import PROFILE
from fedbench.study.runner import _run_stack as run_stack  # the unit every stack runs as (unpatched)

ROOT = Path(__file__).resolve().parents[1]
NODES = ({"num_cpus": 1, "num_gpus": 1}, {"num_cpus": 1})  # the worker nodes: one CPU each, the first a fake GPU
# one cluster for the module, started in one test process; opt-in (pyproject's markers say why)
pytestmark = [pytest.mark.slow(together=True), pytest.mark.cluster]
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
# file operations (audit events, https://docs.python.org/3/library/audit_events.html) a unit may not do in the
# project folder (os.chdir is not one: a Ray worker may start in the driver's working directory, and a unit goes back
# there from its private folder, reading and writing nothing)
GUARDED = ("open", "os.mkdir", "os.rename", "os.replace", "os.remove", "os.rmdir", "os.listdir",
           "os.scandir", "os.truncate", "os.utime", "shutil.copyfile", "shutil.rmtree", "os.symlink", "os.link")
TWO_PATHS = ("os.rename", "os.replace", "shutil.copyfile", "os.symlink", "os.link")  # the others' first is the path


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

    import fedbench.engine.simulation as simulation

    _guard_project()
    log = Path(os.environ["FEDBENCH_TEST_LOG"])
    unit = job.sims[0].name
    earlier = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    first = not any(a["unit"] == unit for a in earlier)
    stall = json.loads((log.parent / "stall.json").read_text()) if (log.parent / "stall.json").exists() else {}
    context = ray.get_runtime_context()
    with open(log, "a") as f:
        f.write(json.dumps({"unit": unit, "runs": [sim.name for sim in job.sims], "node": context.get_node_id(),
                            "pid": os.getpid(), "cwd": os.getcwd(),
                            "resources": context.get_assigned_resources(),
                            "resumed_from": {sim.name: torch.load(c, weights_only=False)["round"]  # by run
                                             if c is not None and c.exists() else None
                                             for sim, c in zip(job.sims, job.checkpoints)}}) + "\n")
    if first and stall and (any(stall["unit"] in sim.name for sim in job.sims) if stall["unit"] else not earlier):
        if stall["at"] == "start":
            time.sleep(120)
        save = simulation._save_checkpoint

        def save_then_stall(*args, **kwargs):
            save(*args, **kwargs)
            time.sleep(120)  # the unit copies the checkpoint to the storage, then its node is removed

        simulation._save_checkpoint = save_then_stall
    return run_stack(job)


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
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    try:
        workers = [c.add_node(**resources) for resources in NODES]
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


def _attempts(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _remove_node_of(cluster, unit: str | None, ready, log: Path) -> threading.Thread:
    """A thread that removes the node running ``unit``'s first attempt (None: the first unit's) once ``ready()`` (its
    checkpoint kept, or it started), as a lost node; ``.removed`` then holds the node's index (Ray starts nodes from
    the main thread only: :func:`_replace` puts a fresh node in its place once the stage is over)."""
    c, workers, _, _ = cluster

    def remove() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            mine = [a for a in _attempts(log) if unit is None or any(unit in run for run in a["runs"])]
            if mine and ready():
                i = next(i for i, w in enumerate(workers) if w.node_id == mine[0]["node"])
                c.remove_node(workers[i], allow_graceful=False)
                t.removed = i
                return
            time.sleep(0.2)

    t = threading.Thread(target=remove, daemon=True)
    t.removed = None
    t.start()
    return t


def _replace(cluster, remover: threading.Thread) -> None:
    """A fresh node of the removed one's resources in its place, for the next test."""
    remover.join(timeout=60)
    c, workers, _, _ = cluster
    assert remover.removed is not None, "no node was removed"
    workers[remover.removed] = c.add_node(**NODES[remover.removed])
    c.wait_for_nodes()


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_main_job_on_a_cluster_without_shared_disk_survives_a_lost_node(cluster, tmp_path, monkeypatch):
    import fedbench.pipeline as pipeline
    import fedbench.study.runner as runner

    _, _, project, log = cluster
    monkeypatch.chdir(project)
    more = {"train.checkpoint_every": 1}
    local_cfg = load_config(ROOT / "params.yaml", _overrides("local", **more, **{"train.workers": 1}))
    keys = list(pipeline.study_runs(local_cfg))
    for ds in local_cfg.data.datasets:
        pipeline.generate(local_cfg, ds, root=project / "data")
    local = pipeline.train_runs(local_cfg, keys, project / "data", tmp_path / "runs-local", progress=False)
    before = _files(project)

    log.unlink(missing_ok=True)
    bucket = tmp_path / "bucket"  # a local folder standing in for s3://...
    stalled = "synthetic_1_1 fedavg stragglers=0 seed=0"  # a run: its unit (whatever runs share it) stalls
    (log.parent / "stall.json").write_text(json.dumps({"unit": stalled, "at": "checkpoint"}))
    monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **more, **{"train.checkpoint_storage": str(bucket)}))
    remover = _remove_node_of(cluster, stalled, lambda: any(bucket.glob("*.checkpoint.pt")), log)
    try:
        on_ray = pipeline.train_runs(cfg, keys, Path("data"), Path("results"), progress=False)
    finally:
        _replace(cluster, remover)

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
    written = _files(project) - before  # only what the driver writes: the store's outcomes, index and locks
    outcomes = {f"results/train/outcomes/{s['fingerprint']}.json" for s in on_ray}
    assert outcomes <= written and all(
        w in outcomes or w.endswith(".lock") or w in ("results", "results/train", "results/train/outcomes",
                                                      "results/train/index.jsonl") for w in written), written


def test_a_paper_study_on_a_cluster_without_shared_disk_survives_a_lost_node(cluster, tmp_path, monkeypatch):
    """fedproxvr_mnist at its fixture budget (its fixture-sized real data: tests/studies/real_fixtures), locally and on
    the cluster, the first unit's node removed as it starts; its checkpoints in the driver's folders (the default)."""
    import fedbench.study.runner as runner
    from fedbench.executors import ExecutorSettings
    from fedbench.study.output import run_claim_study
    from tests.studies.real_fixtures import build_for

    _, _, project, log = cluster
    monkeypatch.chdir(project)
    real_root = build_for("fedproxvr_mnist", project / "real")
    records = {}
    for kind in ("local", "ray"):
        if kind == "ray":
            log.unlink(missing_ok=True)
            (log.parent / "stall.json").write_text(json.dumps({"unit": None, "at": "start"}))
            monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
            remover = _remove_node_of(cluster, None, lambda: True, log)
        folder = (project if kind == "ray" else tmp_path) / f"study-{kind}"
        try:
            run_claim_study("fedproxvr_mnist", folder, workers=1 if kind == "local" else 2, budget="fixture",
                            executor=ExecutorSettings(kind), real_root=real_root)
        finally:
            if kind == "ray":
                _replace(cluster, remover)
        records[kind] = [json.loads(line) for line in (folder / "simulations.jsonl").read_text().splitlines()]
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
    import fedbench.pipeline as pipeline
    import fedbench.study.runner as runner
    from fedbench.executors import DoesNotFit, ExecutorSettings, RayExecutor, open_executor

    _, _, project, log = cluster
    monkeypatch.chdir(project)
    for fraction, slots in ((1.0, 1), (0.5, 2)):
        with open_executor(ExecutorSettings("ray", fraction), workers=2) as ex:
            assert (ex.slots("auto"), ex.slots("cpu")) == (slots, 2)
    log.unlink(missing_ok=True)
    (log.parent / "stall.json").unlink(missing_ok=True)
    monkeypatch.setattr(runner, "_run_stack", unit_in_a_cluster)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **{"train.device": "auto", "train.gpu_fraction": 0.5}))
    keys = list(pipeline.study_runs(cfg))[:2]
    for ds in cfg.data.datasets:
        pipeline.generate(cfg, ds, root=project / "data-gpu")
    monkeypatch.setattr(RayExecutor, "gpu_memory", lambda self: 2**10)  # a 1 KiB GPU
    with pytest.raises(DoesNotFit) as refused:
        pipeline.train_runs(cfg, keys, Path("data-gpu"), Path("results-gpu"), progress=False)
    assert "\n" not in str(refused.value) and "more than 0.8 of one GPU of the cluster (1.0 KiB)" in str(refused.value)
    assert not log.exists() and not list(project.glob("results-gpu/train/outcomes/*.json"))  # nothing ran
    monkeypatch.setattr(RayExecutor, "gpu_memory", lambda self: 80 * 2**30)
    done = pipeline.train_runs(cfg, keys, Path("data-gpu"), Path("results-gpu"), progress=False)
    assert len(done) == 2 and {json.dumps(a["resources"], sort_keys=True) for a in _attempts(log)} == {
        json.dumps({"CPU": 1.0, "GPU": 0.5}, sort_keys=True)}


DRIVER = """
import sys
from pathlib import Path
import fedbench.study.runner as runner
from fedbench.config import load_config
from fedbench.guard import run_guarded
from fedbench.pipeline import study_runs, train_runs
from tests.test_ray_cluster import _overrides, unit_in_a_cluster
runner._run_stack = unit_in_a_cluster
cfg = load_config(Path(sys.argv[1]) / "params.yaml", _overrides("ray"))
run_guarded(lambda: train_runs(cfg, list(study_runs(cfg)), Path("data-stop"), Path("results-stop"), progress=False))
"""


def test_a_driver_stopped_cancels_its_units_on_every_node(cluster, tmp_path):
    """SIGTERM to a driver (its own process, connected through RAY_ADDRESS) whose two units run on the two worker
    nodes: it ends as a stopped command (one line, exit 143), and the units' processes on both nodes are gone."""
    from fedbench.pipeline import generate
    from tests.faults.conftest import alive, wait_for

    c, _, project, log = cluster
    cfg = load_config(ROOT / "params.yaml", _overrides("ray"))
    for ds in cfg.data.datasets:
        generate(cfg, ds, root=project / "data-stop")
    log.unlink(missing_ok=True)
    (log.parent / "stall.json").write_text(json.dumps({"unit": "synthetic", "at": "start"}))  # every unit waits
    env = os.environ | {"RAY_ADDRESS": c.address}
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(ROOT)], cwd=project, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        units = wait_for(lambda: (a if len(a := _attempts(log)) == 2 else None), 120, "both units to start")
        assert len({a["node"] for a in units}) == 2  # one on each worker node
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 143, err[-3000:]
    wait_for(lambda: not any(alive(a["pid"]) for a in units), 30, "the units' processes to be killed")

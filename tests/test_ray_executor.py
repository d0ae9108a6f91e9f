"""Issue 13: the ``ray`` executor (fedbench.executors) against a local Ray of 2 CPUs, started once for the module:
the regression profile gives the same numbers, bit for bit, as the local executor; a unit whose worker dies after
a checkpoint is retried and resumes to the same digest; two stages submitting overlapping runs at once lose and
duplicate nothing; a unit that raises fails the stage naming its runs; a claim study gives the same records; a
wrong executor is one line at load; a stop that Ray raises as its own error cancels the units and goes on as itself,
and a SIGTERM while a local Ray starts kills what it started (the command's end: tests/faults/test_process_lifetime.py)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

from fedbench.config import ConfigError, load_config
from fedbench.regression import PROFILE, REFERENCE, compare
from fedbench.study import reuse
from fedbench.study.experiments import RunKey, outcome_path, runs_folder, train_runs
from fedbench.study.record import SIMULATIONS
from fedbench.study.runner import _run_stack as run_stack  # the unit every stack runs as (unpatched)

ROOT = Path(__file__).resolve().parents[1]
# a local Ray and the profile's runs, started once for the module (fixtures): the first tests of the suite, so that
# one test process runs them all (tests/conftest.py)
pytestmark = pytest.mark.slow(together=True)
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a private cluster on this machine
TIMING = ("wall_time_s", "eval_time_s")  # the only columns of a run's history that may differ


LIGHT = {"train.local_epochs": 2}  # a tenth of the profile's local steps: where no run is held against the reference


def _overrides(executor: str, **more) -> dict:
    """The regression profile (tests/regression/quick_profile.yaml) on 2 workers, with ``executor``."""
    return {**yaml.safe_load(PROFILE.read_text()), "train.workers": 2, "train.executor": executor, **more}


def _history(rows: list[dict]) -> str:
    """History rows without their timings, as JSON (NaN compares equal to NaN there)."""
    return json.dumps([{k: v for k, v in row.items() if k not in TIMING} for row in rows])


def _numbers(summary: dict) -> dict:
    """Everything of a run's summary that its numbers decide (timings and the stack it ran in left out)."""
    return {"fingerprint": summary["fingerprint"], "param_digest": summary["param_digest"],
            "final": summary["final"], "history": _history(summary["history"]), "diverged": summary["diverged"]}


def _files(results_root: Path, summary: dict) -> dict[str, str]:
    """A run's files as a person opens them, as text: its outcome file in the main job's store (fedbench.study.reuse:
    history, final values, each device's training loss and test accuracy, the models) and its record in the main job's
    records (results/fedprox_main_job/runs/simulations.jsonl: fedbench.study.experiments.train_runs), timings
    (TIMING, ``seconds``, the stack it ran in) dropped, and what computed it (``about``: its commit; the local runs are
    computed minutes before the Ray ones: a commit made meanwhile failed the comparison)."""
    fp = summary["fingerprint"]
    body = reuse.read(outcome_path(results_root, fp).parent, fp)
    outcome = {k: v.tolist() if hasattr(v, "tolist") else v for k, v in body.items()
               if k not in ("history", "seconds", "stack_size", "about")}
    records = [json.loads(line) for line in (runs_folder(results_root) / SIMULATIONS).read_text().splitlines()]
    kept = [r for r in records if r.get("fingerprint") == fp][-1]  # the last: a run read back is recorded again
    return {"history": _history(body["history"]), "outcome": json.dumps(outcome, sort_keys=True),
            "record": json.dumps({k: v for k, v in kept.items() if k != "seconds"}, sort_keys=True)}


@pytest.fixture(scope="module")
def ray_cluster(workspace):
    """One local Ray (2 CPUs, no dashboard) for the whole module; its address for other processes. Started after
    the local executor's runs (``workspace``): forking worker processes from a process that holds Ray's threads
    can deadlock the children, so nothing here forks while Ray is up."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
    env = RAY_ENV | {"FEDBENCH_TEST_ROOT": str(workspace.root)}  # the workers' environment: where tests' units log
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Workspace(NamedTuple):
    root: Path  # this module's folder: what its tests write
    data: Path  # the profile's data (read only)
    local_results: Path  # the results holding the profile's runs by the local executor, in the main job's store (read only)
    keys: list[RunKey]  # the profile's runs
    local: dict[RunKey, dict]  # their summaries


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, quick_profile):
    """The profile's data, and its runs computed by the local executor in a test process, once a session
    (``quick_profile``, tests/conftest.py: fedbench.regression's runs, train.workers 1 as here: no worker forked from
    a pytest worker that earlier tests may have left holding threads; in the full suite on 2 cores a forked worker
    died here twice, BrokenProcessPool, where the module alone passes), read back here. Stacked runs equal runs alone
    bit for bit on the CPU, so the reference does not depend on how the runs were cut into stacks."""
    from fedbench.study.experiments import study_runs

    cfg = load_config(ROOT / "params.yaml", _overrides("local", **{"train.workers": 1}))
    keys = list(study_runs(cfg))
    data, results = quick_profile / "data", quick_profile / "results"
    local = train_runs(cfg, keys, data, results, progress=False)
    assert all(s["reused"] for s in local)  # the session's runs, none computed again
    return Workspace(tmp_path_factory.mktemp("ray-ws"), data, results, keys, dict(zip(keys, local)))


def test_regression_profile_on_ray_is_bit_identical_to_local(ray_cluster, workspace, capfd):
    root, data, local_results, keys, local = workspace
    cfg = load_config(ROOT / "params.yaml", _overrides("ray"))
    on_ray = dict(zip(keys, train_runs(cfg, keys, data, root / "runs-ray", progress=False)))
    for k in keys:
        assert not on_ray[k]["reused"]
        assert _numbers(on_ray[k]) == _numbers(local[k]), k.desc
        assert _files(local_results, local[k]) == _files(root / "runs-ray", on_ray[k]), k.desc
    assert "2 of 2 units done" in capfd.readouterr().err  # two stacks for the cluster's 2 CPUs
    again = train_runs(cfg, keys, data, root / "runs-ray", progress=False)  # finished: read back here
    assert all(s["reused"] for s in again) and "units done" not in capfd.readouterr().err
    # and the committed regression reference holds for them (the key numbers of fedbench.regression)
    values = {}
    for k, s in on_ray.items():
        head = f"{k.dataset}/{k.variant}/stragglers={k.stragglers:g}/seed={k.seed}"
        values |= {f"{head}/final_train_loss": s["final"]["train/loss"],
                   f"{head}/final_test_accuracy": s["final"]["test/accuracy"],
                   f"{head}/final_dissimilarity": s["final"]["train/dissimilarity"],
                   f"{head}/loss_round_1": s["history"][1]["train/loss"]}
    assert compare(values, json.loads(REFERENCE.read_text())) == []


def die_after_first_checkpoint(job) -> list:
    """fedbench.study.runner._run_stack, except that on its first attempt the worker process dies (os._exit, as a
    killed or lost worker) right after the run's first checkpoint is written and kept. The second attempt records
    what it resumed from. Top-level in an importable module: Ray workers import it."""
    import time

    import torch

    import fedbench.engine.simulation as simulation
    from fedbench.executors import PERSIST_EVERY_S

    checkpoint = job.checkpoints[0]  # in the unit's private folder, read back from the storage
    log = Path(os.environ["FEDBENCH_TEST_ROOT"]) / "kill" / "attempts.jsonl"
    resumed = torch.load(checkpoint, weights_only=False)["round"] if checkpoint.exists() else None
    first = not log.exists()
    with open(log, "a") as f:
        f.write(json.dumps({"pid": os.getpid(), "resumed_from_round": resumed}) + "\n")
    if first:
        save = simulation._save_checkpoint

        def save_then_die(*args, **kwargs):
            save(*args, **kwargs)
            time.sleep(4 * PERSIST_EVERY_S)  # the unit copies it to the storage meanwhile
            os._exit(1)

        simulation._save_checkpoint = save_then_die
    return run_stack(job)


def test_worker_killed_after_a_checkpoint_is_retried_and_resumes_to_the_same_digest(ray_cluster, workspace,
                                                                                     monkeypatch, capfd):
    import fedbench.study.runner as runner

    root, data = workspace.root, workspace.data
    key = RunKey("synthetic_1_1", "fedavg", 0.0, 0)
    more = {"train.rounds": 6, "train.checkpoint_every": 2, **LIGHT}  # the same settings both ways
    uninterrupted = train_runs(load_config(ROOT / "params.yaml", _overrides("local", **more)), [key],
                               data, root / "kill" / "local", progress=False)[0]
    monkeypatch.setattr(runner, "_run_stack", die_after_first_checkpoint)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **more))
    retried = train_runs(cfg, [key], data, root / "kill" / "ray", progress=False)[0]
    attempts = [json.loads(line) for line in (root / "kill" / "attempts.jsonl").read_text().splitlines()]
    assert len(attempts) == 2 and attempts[0]["pid"] != attempts[1]["pid"]  # the first worker died
    assert attempts[0]["resumed_from_round"] is None and attempts[1]["resumed_from_round"] == 2
    assert _numbers(retried) == _numbers(uninterrupted)
    assert "1 of 1 units done" in capfd.readouterr().err and not list((root / "kill" / "ray").rglob("*.checkpoint.pt*"))


SUBMIT = """
import json, sys
from pathlib import Path
from fedbench.config import load_config
from fedbench.study.experiments import RunKey, train_runs
overrides, keys, root, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
cfg = load_config(Path(sys.argv[5]) / "params.yaml", overrides)
done = train_runs(cfg, [RunKey(*k) for k in keys], Path(sys.argv[6]), root / "runs-shared", progress=False)
Path(out).write_text(json.dumps([[s["param_digest"], s["reused"]] for s in done]))
"""


def test_two_stages_submitting_overlapping_runs_lose_and_duplicate_nothing(ray_cluster, workspace, tmp_path):
    root, keys, local = workspace.root, workspace.keys, workspace.local
    # three runs each, two in both: four of the profile's six (each run computed here costs about 3 s of CPU)
    mine, theirs = keys[:3], keys[1:4]
    submitted = [k for k in keys if k in mine or k in theirs]
    env = os.environ | RAY_ENV | {"RAY_ADDRESS": ray_cluster, "PYTHONPATH": str(ROOT)}
    procs = []
    for name, ks in (("a", mine), ("b", theirs)):
        args = [json.dumps(_overrides("ray")), json.dumps([[k.dataset, k.variant, k.stragglers, k.seed] for k in ks]),
                str(root), str(tmp_path / f"{name}.json"), str(ROOT), str(workspace.data)]
        procs.append(subprocess.Popen([sys.executable, "-c", SUBMIT, *args], cwd=tmp_path, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for p in procs:
        out, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out[-3000:]
    a = dict(zip(mine, json.loads((tmp_path / "a.json").read_text())))
    b = dict(zip(theirs, json.loads((tmp_path / "b.json").read_text())))
    for k in submitted:  # every run there, with the local executor's numbers
        digests = {d for d, _ in (x for x in (a.get(k), b.get(k)) if x)}
        assert digests == {local[k]["param_digest"]}, k.desc
    for k in set(mine) & set(theirs):  # computed by one stage, read back by the other
        assert sorted([a[k][1], b[k][1]]) == [False, True], k.desc
    shared = root / "runs-shared"
    assert len(list((shared / "fedprox_main_job" / "pipeline" / "outcomes").glob("*.json"))) == len(submitted) == 4
    assert not [p for p in shared.rglob("*") if ".tmp" in p.name or p.name.endswith(".checkpoint.pt")]


FAILING = "synthetic_1_1 fedprox_mu1 stragglers=0 seed=0"  # a run whose stack raises (RunKey.desc)


def fail_on_one_run(job) -> list:
    """fedbench.study.runner._run_stack, except that the stack holding run FAILING raises (as a run's own bug would)."""
    if any(sim.name == FAILING for sim in job.sims):
        raise ZeroDivisionError("a bug in this run")
    return run_stack(job)


def test_a_unit_that_fails_for_good_fails_the_stage_naming_its_runs(ray_cluster, workspace, monkeypatch):
    import fedbench.study.runner as runner
    from fedbench.executors import UnitsFailed

    root, keys = workspace.root, workspace.keys
    monkeypatch.setattr(runner, "_run_stack", fail_on_one_run)
    cfg = load_config(ROOT / "params.yaml", _overrides("ray", **LIGHT))  # the other unit's runs: kept, not compared
    with pytest.raises(UnitsFailed) as failed:
        train_runs(cfg, keys, workspace.data, root / "runs-failing", progress=False)
    message = str(failed.value)
    assert "\n" not in message and message.startswith("1 of 2 units failed for good on Ray: [")
    failed_runs = message.split("[", 1)[1].split("]", 1)[0].split(", ")  # the runs of the failed unit, named
    assert FAILING in failed_runs and message.endswith("] ZeroDivisionError: a bug in this run")
    assert isinstance(failed.value.__cause__, ZeroDivisionError)
    kept = (root / "runs-failing" / "fedprox_main_job" / "runs" / SIMULATIONS).read_text().splitlines()  # the other unit's
    assert sorted(json.loads(line)["name"] for line in kept) == sorted(k.desc for k in keys if k.desc not in failed_runs)


def test_claim_study_simulations_on_ray_are_the_same(ray_cluster):
    """A claim study's simulations through run_simulations, on the executor run_claim_study sets (studies
    stacked; the workers rebuild the datasets, which locally they inherit by fork)."""
    import dataclasses

    import fedbench.study.runner as studies
    from fedbench.algorithms.delta_fl import DeltaFL
    from fedbench.algorithms.fedavg import FedAvg
    from fedbench.executors import ExecutorSettings
    from fedbench.studies.delta_fl_triangle import simulation

    sims = [simulation("delta_fl", DeltaFL(lr=0.1, theta=2 / 3, weighting="exact"), "obtuse"),
            simulation("fedavg", FedAvg(lr=0.1), "obtuse"), simulation("delta_fl", DeltaFL(lr=0.1, theta=2 / 3), "acute")]
    sims = [dataclasses.replace(s, config=dataclasses.replace(s.config, rounds=40)) for s in sims]
    outcomes = {}
    for kind, workers in (("local", 1), ("ray", 2)):  # local in this process: no fork while Ray is up
        token = studies.EXECUTOR.set(ExecutorSettings(kind))  # as run_claim_study does for a study's run()
        try:
            outcomes[kind] = studies.run_simulations(sims, workers=workers)
        finally:
            studies.EXECUTOR.reset(token)
    for a, b in zip(outcomes["local"], outcomes["ray"]):
        assert (a.name, a.param_digest, a.diverged, json.dumps(a.final)) == (b.name, b.param_digest, b.diverged,
                                                                            json.dumps(b.final))
        assert _history(a.history) == _history(b.history) and a.models.tobytes() == b.models.tobytes()


@pytest.mark.parametrize("key, value, expected", [
    ("train.executor", "rey", "train.executor: 'rey' is not allowed (did you mean 'ray'?); allowed: local, ray"),
    ("train.executor", 1, "train.executor: expected a string, got 1"),
    ("train.gpu_fraction", 0.0, "train.gpu_fraction: must be in (0, 1], got 0.0"),
    ("train.checkpoint_storage", "ckpt", ("train.checkpoint_storage: 'ckpt' is a relative folder, which each unit "
     "would read as its own private folder; allowed: '' (the driver's folders), an absolute folder every node mounts, "
     "or a URI (s3://...)")),
    ("train.checkpoint_storage", "nosuch://bucket/ckpt",
     "train.checkpoint_storage: 'nosuch://bucket/ckpt': ValueError: Protocol not known: nosuch"),
])
def test_bad_executor_settings_are_one_line_at_load(key, value, expected):
    with pytest.raises(ConfigError) as bad:
        load_config(ROOT / "params.yaml", {key: value})
    assert str(bad.value) == expected


def test_ray_executor_without_ray_installed_is_one_line(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    with pytest.raises(ConfigError, match=r"^train.executor: 'ray' needs Ray, which is not installed here \(pip "
                                          r"install -e '\.\[ray\]'\); allowed without it: local$"):
        load_config(ROOT / "params.yaml", {"train.executor": "ray"})


def test_bad_executor_from_the_command_line_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fedbench.cli", "run", "--params", str(ROOT / "params.yaml"),
                           "--dataset", "synthetic_1_1", "--algorithm", "fedavg", "--stragglers", "0", "--seed", "0",
                           "--set", "train.executor=threads"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("fedbench: config error: train.executor: 'threads' is not allowed; allowed: "
                                   "local, ray")


class _StandIn:
    """``ray.remote(f)``, ``.options(...)`` of it and ``.remote(...)`` of that, as the executor calls them (no Ray)."""

    def options(self, **_):
        return self

    def remote(self, *_):
        return object()  # a unit's (or the board's) handle


def test_a_stop_ray_raises_as_its_own_error_cancels_the_units_and_goes_on_as_itself(monkeypatch):
    """SIGTERM while the driver waits in ``ray.wait``: Ray raises fedbench's Terminated as a SystemError caused by it.
    The units still out are cancelled and the Terminated itself is raised, as from the local executor (before: the
    SystemError, which fedbench.guard printed as a traceback)."""
    from types import SimpleNamespace

    from fedbench.executors import RayExecutor
    from fedbench.parallel import Terminated

    stop, cancelled = Terminated(), []

    def wait(pending, **_):
        raise SystemError("<cyfunction CoreWorker.wait> returned a result with an exception set") from stop

    ray = SimpleNamespace(remote=lambda _: _StandIn(), wait=wait, cancel=lambda ref, force: cancelled.append(force),
                          get_runtime_context=lambda: SimpleNamespace(get_node_id=lambda: "0" * 56))
    ex = RayExecutor(workers=2, gpu_fraction=0.25)
    monkeypatch.setattr(ex, "connect", lambda: ray)
    with pytest.raises(Terminated) as raised:
        ex.map(abs, [1, 2, 3], progress=False)
    assert raised.value is stop and cancelled == [True, True, True]


def test_a_sigterm_while_ray_starts_kills_what_it_started_and_is_a_stop(monkeypatch):
    """ray.init installs a SIGTERM handler of its own for its start (``sys.exit(15)``): a SIGTERM then ended the
    command with exit 15 and no line, and left the agents its raylet had started running after the driver had
    exited (Ray 2.60). A stand-in ray.init starts a process with a child of its own (a raylet and its agent), then
    exits as Ray's handler does: both are killed, and the stop is fedbench's Terminated."""
    import signal
    from types import SimpleNamespace

    from fedbench.executors import RayExecutor
    from fedbench.parallel import Terminated
    from tests.faults.conftest import alive, descendants, wait_for

    started: set[int] = set()

    def init(**_):
        raylet = subprocess.Popen(["sh", "-c", "sleep 60 & wait"])
        started.update({raylet.pid} | wait_for(lambda: descendants(raylet.pid), 10, "the agent to start"))
        sys.exit(signal.SIGTERM)

    shutdowns = []
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(is_initialized=lambda: False, init=init,
                                                            shutdown=lambda: shutdowns.append(True)))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        RayExecutor(workers=2, gpu_fraction=0.25).connect()
    assert len(started) == 2 and shutdowns == [True] and signal.getsignal(signal.SIGTERM) is handler
    wait_for(lambda: not any(alive(pid) for pid in started), 10, "what the start began to be killed")


def test_importing_fedbench_imports_no_ray():
    probe = ("import sys, fedbench, fedbench.pipeline, fedbench.studies, fedbench.executors, fedbench.config; "
             "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr[-2000:]

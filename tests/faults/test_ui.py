"""Item 7: `fedbench ui` stopped by its PID stops the MLflow server. Before: the server and its web workers kept
running on the port. Now the server runs under fedbench.parallel.supervised: a process group that goes down
with `fedbench ui` (on SIGTERM, SIGINT or SIGHUP by its handlers, on SIGKILL by the parent-death signal)."""

import signal
import socket
import subprocess
import sys

import pytest

from tests.faults.conftest import alive, descendants, wait_for, wait_for_descendants


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


TREE = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # a child of the program, as MLflow's
time.sleep(600)
"""
PARENT = """
import subprocess, sys, time
from fedbench.parallel import supervised
subprocess.Popen(supervised([sys.executable, "-c", sys.argv[1]]), start_new_session=True)
time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_supervised_group_dies_with_its_parent(ws, reaper, sig):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, TREE], env=ws.env, cwd=ws.path)
    reaper.add(parent.pid)
    group = wait_for_descendants(parent.pid, 3)  # supervisor, program, the program's child
    reaper.update(group)
    parent.send_signal(sig)  # a SIGTERM that the parent does not handle kills it just the same
    parent.wait(timeout=10)
    wait_for(lambda: not any(alive(pid) for pid in group), 15, "the supervised group to exit")


def _get(port: int, path: str, body: dict | None = None) -> dict:
    import json
    import urllib.request

    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _chromium() -> str | None:
    import shutil

    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


# a first visit by a fresh browser (its own empty profile), as a new user's: no settings remembered from before
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,900", "--virtual-time-budget=20000")


def _browse(url: str, profile, *action: str) -> str:
    """The DOM (--dump-dom) of ``url`` after the page has run, or chromium's output (--screenshot=PATH)."""
    out = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *action, url],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _cmdline(pid: int) -> str:
    from pathlib import Path

    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:  # exited meanwhile
        return ""


@pytest.mark.slow
def test_ui_answers_when_it_prints_its_links_shows_the_runs_and_stops_by_its_pid(ws, reaper, monkeypatch, tmp_path):
    """One server start serves every check of `fedbench ui` (MLflow takes 9-40 s to start on 2 cores).

    Issue 29 item 5: the links are printed once the server answers (they were printed 25-40 s before it did), and
    no GenAI job workers are started (MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false: eight processes a training UI
    never uses). Issue 23 item 2, through MLflow's REST API: what the UI lists is the experiments marked for its
    "Model training" mode (tag mlflow.experimentKind), each described (the note the UI shows), no empty Default;
    the runs with short names (runs differing only in rounds told apart: issue 29 item 4) and their
    dataset/algorithm/stragglers/mu/seed tags; curves whose points carry the rounds' real times; each
    experiment's runs-table link printed in model-training mode (MLflow 3.17's UI takes its mode from the link:
    ?workflowType=machine_learning). In headless Chromium (where installed): the printed link opens the runs
    table with the runs' names in model-training mode, no mode switch; the same page without the link's query,
    the control, opens GenAI mode with the runs hidden. Item 7: `kill PID` (SIGTERM) stops it with the server
    and its workers, and the port is free again."""
    import re
    import urllib.request

    from fedbench import tracking
    from fedbench.track import differs, run_name, train_description, train_experiment
    from tests.test_track import _summary, log_train

    monkeypatch.setenv("MLFLOW_TRACKING_URI", ws.uri)
    monkeypatch.delenv("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", raising=False)
    names = []
    for fp, variant, rounds in (("fp-0", "fedavg", 200), ("fp-1", "fedprox_mu1", 200), ("fp-2", "fedprox_mu1", 10)):
        s = _summary(fp)
        s["params"] |= {"variant": variant, "algorithm": variant.split("_")[0], "rounds": rounds}
        if variant == "fedavg":
            del s["params"]["algo.mu"]
        names.append(run_name("synthetic_1_1", variant, 0.9, 3, fp,
                              differs(s["params"], s["params"] | {"rounds": 200})))  # a default of 200 rounds
        log_train(train_experiment("stragglers"), names[-1], s, lambda: [], train_description("stragglers"),
                         finished_ms=2_000_000)
    assert names == ["fedavg 90% s3 synthetic_1_1 #fp-0", "fedprox_mu1 90% s3 synthetic_1_1 #fp-1",
                     "fedprox_mu1 90% s3 rounds=10 synthetic_1_1 #fp-2"]
    port = _free_port()
    proc = ws.start("ui", "--port", str(port))
    reaper.add(proc.pid)
    wait_for(lambda: "ready after" in proc.log.read_text(), 300, "`fedbench ui` to print its links", step=0.1)
    base = f"http://127.0.0.1:{port}"
    with urllib.request.urlopen(f"{base}/health", timeout=5) as reply:  # answering as soon as it says so
        assert reply.status == 200
    server = descendants(proc.pid)
    reaper.update(server)
    assert not [pid for pid in server if "huey" in _cmdline(pid) or "jobs._job_runner" in _cmdline(pid)]

    exps = _get(port, "/api/2.0/mlflow/experiments/search?max_results=100")["experiments"]
    assert [e["name"] for e in exps] == ["train-stragglers"]  # no Default
    tags = {t["key"]: t["value"] for t in exps[0]["tags"]}
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    assert tags["mlflow.note.content"] == train_description("stragglers")
    runs = _get(port, "/api/2.0/mlflow/runs/search", {"experiment_ids": [exps[0]["experiment_id"]]})["runs"]
    by_name = {r["info"]["run_name"]: r for r in runs}
    assert set(by_name) == set(names)
    prox = by_name[names[1]]
    prox_tags = {t["key"]: t["value"] for t in prox["data"]["tags"]}
    assert {k: prox_tags[k] for k in ("dataset", "variant", "stragglers", "mu", "seed")} == {
        "dataset": "synthetic_1_1", "variant": "fedprox_mu1", "stragglers": "0.9", "mu": "1", "seed": "3"}
    assert {t["key"]: t["value"] for t in by_name[names[0]]["data"]["tags"]}["mu"] == "-"
    assert int(prox["info"]["end_time"]) - int(prox["info"]["start_time"]) == 3_000  # the rounds' 0 + 1 + 2 s
    curve = _get(port, f"/api/2.0/mlflow/metrics/get-history?run_id={prox['info']['run_id']}&metric_key=train/loss")
    assert [(int(m["step"]), int(m["timestamp"])) for m in curve["metrics"]] == [(0, 1_997_000), (1, 1_998_000),
                                                                                 (2, 2_000_000)]
    assert not any(m["key"].startswith("final/") for m in prox["data"]["metrics"])
    (link,) = re.findall(r"^  train-stragglers  (\S+)$", proc.log.read_text(), re.M)
    assert link == f"{base}/#/experiments/{exps[0]['experiment_id']}/runs?workflowType=machine_learning"

    if _chromium() is not None:
        dom = _browse(link, tmp_path / "profile-link", "--dump-dom")
        assert all(name in dom for name in names), dom[-3000:]
        assert re.search(r"<h2[^>]*>Runs<", dom) and "Evaluation runs" not in dom  # model training: no GenAI sidebar
        control = _browse(link.split("?")[0], tmp_path / "profile-control", "--dump-dom")
        assert re.search(r"<h2[^>]*>Training runs<", control) and "Evaluation runs" in control  # GenAI mode
        shot = tmp_path / "runs.png"
        _browse(link, tmp_path / "profile-shot", f"--screenshot={shot}")
        # a drawn page (a blank 1400x900 one is a few KB)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

    server = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)  # `kill PID`
    ws.finish(proc, timeout=30)
    assert proc.returncode == 0
    wait_for(lambda: not any(alive(pid) for pid in server), 20, "the server processes to exit")
    assert not _listening(port)
    if _chromium() is None:  # what ran above passed; say what did not run
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium): the UI's pages were not checked in a "
                    "browser (REST, links and stop were)")


def test_waiting_for_the_ui_gives_up_in_one_line():
    """`fedbench ui` prints its links once MLflow answers; a server that exits first, or never answers, is one
    line (the CLI then stops the server's group: serve_ui's finally)."""
    import time

    from fedbench.errors import FedbenchError
    from fedbench.tracking import _wait_until_answering

    base = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    exits = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    exits.wait(timeout=30)
    with pytest.raises(FedbenchError, match="exited with code 3 before it answered"):
        _wait_until_answering(exits, base, 30)
    silent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        t0 = time.monotonic()
        with pytest.raises(FedbenchError, match=r"did not answer on http://127\.0\.0\.1:\d+ within 1 s; stopped it"):
            _wait_until_answering(silent, base, 1)
        assert time.monotonic() - t0 < 10  # bounded: 1 s, plus one poll's connect timeout and sleep
    finally:
        silent.kill()
        silent.wait()

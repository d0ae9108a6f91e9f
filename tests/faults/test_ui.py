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


def test_ui_stopped_by_its_pid_frees_the_port(ws, reaper):
    port = _free_port()
    proc = ws.start("ui", "--port", str(port))
    reaper.add(proc.pid)
    wait_for(lambda: _listening(port), 90, f"the UI on port {port}", step=0.25)  # about 12 s: MLflow starting
    server = descendants(proc.pid)
    reaper.update(server)
    proc.send_signal(signal.SIGTERM)  # `kill PID`
    assert proc.wait(timeout=30) == 0
    wait_for(lambda: not any(alive(pid) for pid in server), 20, "the server processes to exit")
    assert not _listening(port)


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

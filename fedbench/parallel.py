"""Run independent jobs in forked worker processes, or one after another in this process; and make child
processes die with their parent.

Workers never outlive the process that started them: each asks the kernel for SIGTERM when its parent dies
(Linux ``PR_SET_PDEATHSIG``, so even a SIGKILL of the parent reaches them), and on SIGTERM a worker unwinds the
job it is running (``finally`` blocks run: temporary folders are removed, locks released; a run keeps its last
checkpoint) and exits. Ctrl-C and SIGTERM are the parent's to handle (``fedbench.guard.run_guarded`` turns
SIGTERM into :class:`Terminated`): workers ignore SIGINT, and when the parent is interrupted, ``map_jobs``
cancels the jobs not started, terminates the running ones and re-raises at once, keeping every result already
handed to ``each``.

A long-running program with children of its own (the MLflow UI) runs under :func:`supervised`: a small
supervisor leads a process group holding the program and everything it starts, and takes the whole group down
when it is told to stop or when its parent dies.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from typing import TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Terminated(BaseException):
    """SIGTERM, raised in the main thread (like KeyboardInterrupt for SIGINT) so that the same clean-up runs."""


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: ``signal.signal(signal.SIGTERM, raise_terminated)``."""
    raise Terminated()


def die_with_parent(parent_pid: int, sig: int = signal.SIGTERM) -> None:
    """Have the kernel send ``sig`` to this process when its parent dies (Linux; elsewhere nothing is done).
    ``parent_pid`` is the parent as the caller knew it before forking: if it is already gone, exit now."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(128 + sig)


def one_torch_thread() -> None:
    import torch

    torch.set_num_threads(1)  # the processes are the parallelism; one thread each keeps them from competing


_in_job = False  # in a worker: True while a job runs (SIGTERM then unwinds it; otherwise it exits at once)


def _worker_sigterm(signum: int, frame: object) -> None:
    if _in_job:
        raise Terminated()
    os._exit(128 + signum)


def _quiet_after_fork() -> None:
    """In a child just forked from a process whose SIGTERM raises Terminated (a fedbench command): SIGTERM ends it at
    once, as in a worker outside a job, until it installs a handler of its own. Without this, a worker still starting
    up when its parent stops the pool raised the inherited Terminated in its start-up code, with a traceback."""
    if signal.getsignal(signal.SIGTERM) is raise_terminated:
        try:
            signal.signal(signal.SIGTERM, _worker_sigterm)
        except ValueError:  # pragma: no cover (forked from a thread that is not the main one: nothing to change)
            pass


os.register_at_fork(after_in_child=_quiet_after_fork)


def _init_worker(parent_pid: int) -> None:
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent decides
        signal.signal(signal.SIGTERM, _worker_sigterm)
    except Terminated:  # SIGTERM came before the fork hook ran: the parent's handler, inherited
        os._exit(128 + signal.SIGTERM)
    die_with_parent(parent_pid)
    one_torch_thread()


def _run_in_worker(fn: Callable[[Job], Result], job: Job) -> Result:
    global _in_job
    _in_job = True
    try:
        return fn(job)
    except Terminated:
        os._exit(128 + signal.SIGTERM)  # the job has unwound (its finally blocks ran); nothing to send back
    finally:
        _in_job = False


def map_jobs(fn: Callable[[Job], Result], jobs: Iterable[Job], workers: int,
             each: Callable[[Result], None] | None = None) -> list[Result]:
    """``[fn(job) for job in jobs]``, in order, on ``workers`` processes (one process: here, serially), each
    job with one torch thread. ``each(result)`` is called here, in this process, as each job finishes (in the
    order they finish), so that what finished is kept (logged, reported) even if the rest is interrupted.

    Workers are forked, so ``fn`` must be a top-level function, and they inherit what this process has
    imported and built (datasets built before the call are shared, not rebuilt). Fork is for the CPU only:
    a process that has used CUDA cannot be forked safely, so pass ``workers=1`` there. If a job raises, or
    this process is interrupted (KeyboardInterrupt, :class:`Terminated`), the jobs not started are cancelled,
    the running ones terminated, and the exception re-raised.
    """
    jobs = list(jobs)
    if workers <= 1:
        one_torch_thread()
        results = []
        for job in jobs:
            results.append(fn(job))
            if each is not None:
                each(results[-1])
        return results
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork"), initializer=_init_worker,
                               initargs=(os.getpid(),))
    try:
        futures = [pool.submit(_run_in_worker, fn, job) for job in jobs]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                result = f.result()  # a job's exception is raised here
                if each is not None:
                    each(result)
        pool.shutdown()
        return [f.result() for f in futures]
    except BaseException:
        _terminate(pool)
        raise


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Cancel the jobs not started and SIGTERM the workers (each unwinds its job and exits), then reap them, and
    wait for the pool's manager thread to wind down: left running, it closes its wake-up pipe while the
    interpreter's exit hook writes to it (concurrent.futures.process._python_exit; CPython 3.11 takes no lock
    there), and the exit prints an OSError traceback after our one line."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public API before Python 3.14
    manager = getattr(pool, "_executor_manager_thread", None)  # nor for this one
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join()
    if manager is not None:
        manager.join(timeout=10)


def supervised(command: list[str]) -> list[str]:
    """The command line that runs ``command`` under a supervisor dying with the calling process. Start it with
    ``start_new_session=True``: the supervisor then leads a process group of its own holding ``command`` and
    every process ``command`` starts; on SIGTERM, SIGINT or SIGHUP, and when the caller dies (even by SIGKILL:
    PR_SET_PDEATHSIG), it stops the whole group (SIGTERM, then SIGKILL after 5 s). Stop it with
    ``os.killpg(pid, SIGTERM)``."""
    return [sys.executable, "-m", "fedbench.parallel", str(os.getpid()), *command]


def _supervise(parent_pid: int, command: list[str]) -> None:
    def stop(signum: int, frame: object) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # the group's SIGTERM reaches this process too
        try:
            os.killpg(0, signal.SIGTERM)
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline and _others_in_my_group():
                time.sleep(0.05)
            os.killpg(0, signal.SIGKILL)  # this process included: the group is gone
        finally:
            os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    die_with_parent(parent_pid)
    # the command runs in a child: a program may install signal handlers of its own, which would replace these
    sys.exit(subprocess.call(command))


def _others_in_my_group() -> bool:
    """Whether a live process other than this one is in this process's group (from /proc; elsewhere: False)."""
    me, group = os.getpid(), os.getpgid(0)
    if not os.path.isdir("/proc"):
        return False
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[2]) == group:
                return True
    return False


if __name__ == "__main__":
    _supervise(int(sys.argv[1]), sys.argv[2:])

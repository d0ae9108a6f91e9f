"""fedbench.parallel: a child forked from a fedbench command exits quietly on SIGTERM while it starts up."""

import os
import signal
import time

from fedbench import parallel


def test_a_child_forked_from_a_terminating_process_exits_at_once_on_sigterm():
    """The parent raises Terminated on SIGTERM (raise_terminated); its forked child, before installing a handler of
    its own, exits at once with 128 + SIGTERM instead of raising the inherited Terminated (a worker stopped while its
    pool starts: tests/faults/test_process_lifetime.py saw its traceback)."""
    old = signal.signal(signal.SIGTERM, parallel.raise_terminated)
    try:
        pid = os.fork()
        if pid == 0:  # the child: signal itself; the inherited handler would raise, and exit 0 below
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is parallel.raise_terminated  # the parent's own is untouched
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_stopped_pool_leaves_no_manager_thread_for_the_exit_hook_to_race():
    """map_jobs' clean-up (_terminate) reaps the workers and waits for the pool's manager thread: left running, it
    closed its wake-up pipe while the interpreter's exit hook wrote to it, and a SIGTERMed `fedbench run` ended with
    an OSError traceback after its one line (the fault suite's SIGTERM case, once in CI under load)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    pool = ProcessPoolExecutor(max_workers=2, mp_context=get_context("fork"))
    futures = [pool.submit(time.sleep, 30) for _ in range(3)]
    while not all(p.is_alive() for p in (pool._processes or {}).values()) or not pool._processes:
        time.sleep(0.01)
    manager = pool._executor_manager_thread
    parallel._terminate(pool)
    assert not manager.is_alive() and manager._started.is_set()
    assert not any(p.is_alive() for p in (pool._processes or {}).values()) or pool._processes is None
    assert all(f.done() for f in futures)  # cancelled, or failed as the pool broke

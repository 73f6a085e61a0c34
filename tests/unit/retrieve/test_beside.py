"""Work run beside a search's thread: by an idle helper, else in the caller's thread; errors reach the caller."""

import threading

import pytest

from kbflow.retrieve import beside as B


def test_work_runs_in_a_helper_and_its_value_or_error_reaches_the_caller():
    pending = B.beside(lambda: threading.current_thread().name)
    assert pending.result().startswith("kbflow-helper-")

    def broken():
        raise ValueError("no index")

    with pytest.raises(ValueError, match="no index"):
        B.beside(broken).result()


def test_where_every_helper_is_busy_the_work_runs_in_the_callers_thread_and_nothing_queues():
    release = threading.Event()
    started = threading.Barrier(B.HELPERS + 1)

    def hold():
        started.wait(timeout=10)
        release.wait(timeout=10)
        return "held"

    held = [B.beside(hold) for _ in range(B.HELPERS)]
    started.wait(timeout=10)  # every helper is busy now
    try:
        late = B.beside(lambda: threading.current_thread().name)
        assert late.result() == threading.current_thread().name
    finally:
        release.set()
    assert [p.result() for p in held] == ["held"] * B.HELPERS
    # the helpers are idle again: the next work is handed to one
    assert B.beside(lambda: threading.current_thread().name).result().startswith("kbflow-helper-")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
def test_a_forked_child_starts_helpers_of_its_own():
    import os

    assert B.beside(lambda: 1).result() == 1  # the parent's helpers are running
    pid = os.fork()
    if pid == 0:  # the child: its parent's helper threads are gone; a wait on them would never end
        import signal

        signal.alarm(20)  # so a child that waits for ever dies, and the test fails
        try:
            ok = B.beside(lambda: threading.current_thread().name).result().startswith("kbflow-helper-")
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

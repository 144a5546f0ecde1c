"""The controller's lock is handed out in arrival order (controlplane.runtime.batcher.FairRLock):
a thread releasing and re-taking it at once (the next slice of a large change) never jumps
ahead of a thread already waiting (the fencing round)."""

from __future__ import annotations

import threading
import time

import pytest

from controlplane.runtime.batcher import FairRLock


def test_it_is_reentrant_and_refuses_a_release_by_another_thread() -> None:
    lock = FairRLock()
    with lock, lock:
        errors: list[BaseException] = []

        def release_elsewhere() -> None:
            try:
                lock.release()
            except RuntimeError as error:
                errors.append(error)

        thread = threading.Thread(target=release_elsewhere)
        thread.start()
        thread.join()
        assert errors
    with pytest.raises(RuntimeError):
        lock.release()


def test_a_waiter_gets_the_lock_before_the_releaser_takes_it_again() -> None:
    lock = FairRLock()
    order: list[str] = []
    waiting = threading.Event()

    def waiter() -> None:
        waiting.set()
        with lock:
            order.append("waiter")

    lock.acquire()
    thread = threading.Thread(target=waiter)
    thread.start()
    waiting.wait()
    time.sleep(0.05)  # the waiter is queued on the lock by now
    for slice_index in range(3):  # release and re-take at once, as a sliced change does
        lock.release()
        lock.acquire()
        order.append(f"slice {slice_index}")
    lock.release()
    thread.join(timeout=5)
    assert order[0] == "waiter"


def test_waiters_are_served_in_the_order_they_came() -> None:
    lock = FairRLock()
    served: list[int] = []
    lock.acquire()
    threads = []
    for index in range(5):
        thread = threading.Thread(
            target=lambda i=index: (lock.acquire(), served.append(i), lock.release())
        )
        thread.start()
        threads.append(thread)
        time.sleep(0.02)  # each queued before the next starts
    lock.release()
    for thread in threads:
        thread.join(timeout=5)
    assert served == [0, 1, 2, 3, 4]

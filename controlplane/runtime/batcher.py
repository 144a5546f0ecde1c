"""Group commit: one thread turns the controller's waiting events into batches, one commit each,
as Kafka's QuorumController does with its event queue."""

from __future__ import annotations

import collections
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from django.db import DatabaseError, connection

from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent
from controlplane.runtime.lease import now_ms

logger = logging.getLogger("controlplane.controller")

MAX_BATCH_EVENTS = 500  # events handled in one batch (one commit) at the most

HandleBatch = Callable[[Sequence[ControllerEvent]], list[ControllerAnswer]]
Waiting = tuple[ControllerEvent, "Future[ControllerAnswer]"]


class EventBatcher:
    """One thread drains the waiting events into batches for the controller: group commit.

    While a batch commits, new events queue up; the next batch takes all of them (up to
    `max_batch`), so the cost of a commit is shared by every event that arrived meanwhile.
    """

    def __init__(self, handle_batch: HandleBatch, *, max_batch: int) -> None:
        self.handle_batch = handle_batch
        self.max_batch = max_batch
        self._waiting: queue.SimpleQueue[Waiting | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="controller-events", daemon=True)
        self._thread.start()

    def submit(self, event: ControllerEvent) -> ControllerAnswer:
        answer: Future[ControllerAnswer] = Future()
        self._waiting.put((event.queued(now_ms()), answer))
        return answer.result()

    def stop(self) -> None:
        """Finish what waits, then end the thread (and its database connection)."""
        self._waiting.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            while (first := self._waiting.get()) is not None:
                batch = [first]
                while len(batch) < self.max_batch:
                    try:
                        waiting = self._waiting.get_nowait()
                    except queue.Empty:
                        break
                    if waiting is None:
                        self._waiting.put(None)  # stop after this batch
                        break
                    batch.append(waiting)
                self._handle(batch)
        finally:
            reset_connection()

    def _handle(self, batch: list[Waiting]) -> None:
        try:
            answers = self.handle_batch([event for event, _ in batch])
        except BaseException as error:  # every waiting caller learns of it; the loop goes on
            logger.exception("controller batch of %d event(s) failed", len(batch))
            for _, waiting in batch:
                waiting.set_exception(error)
            reset_connection()
            return
        for (_, waiting), answer in zip(batch, answers, strict=True):
            waiting.set_result(answer)
        if connection.errors_occurred:
            reset_connection()


def reset_connection() -> None:
    """A connection that failed (the database restarted) is replaced on the next batch."""
    with contextlib.suppress(DatabaseError):
        connection.close()


class FairRLock:
    """A reentrant lock handed to its waiters in the order they came (Kafka's controller runs
    its events from one FIFO queue). Python's own locks are not fair: a thread that releases
    and at once takes the lock again (the next slice of a large change) usually gets it back
    before a waiter wakes, and the controller's fencing round waited behind every slice."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._owner: int | None = None
        self._count = 0
        self._waiters: collections.deque[tuple[int, threading.Lock]] = collections.deque()

    def acquire(self) -> bool:
        me = threading.get_ident()
        with self._mutex:
            if self._owner == me:
                self._count += 1
                return True
            if self._owner is None:
                self._owner, self._count = me, 1
                return True
            gate = threading.Lock()
            gate.acquire()
            self._waiters.append((me, gate))
        gate.acquire()  # the releasing thread made this one the owner before opening the gate
        return True

    def release(self) -> None:
        with self._mutex:
            if self._owner != threading.get_ident():
                raise RuntimeError("cannot release a lock this thread does not hold")
            self._count -= 1
            if self._count:
                return
            if self._waiters:
                self._owner, gate = self._waiters.popleft()
                self._count = 1
                gate.release()
            else:
                self._owner = None

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

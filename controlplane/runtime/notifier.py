"""Wakes long-polling metadata fetches when the log grows, and table readers when the state
tables follow it.

A commit is two transactions, the log's then the tables' (controlplane.runtime.metadata_log), and
each has its own generation: `generation` moves when the log grows or retention moves its
start (what a broker's long-poll fetches, and the head the fetch keeps between notices),
`tables_generation` when the tables reach it (what caches built from the tables and waits on a
projection read), `acl_generation` when the tables reach a commit that changed ACLs (what
every request's authorization reads: rebuilt only then, not after every commit) and
`quota_generation` when they reach one that changed client quotas (what every admin write's
controller mutation rate reads). A reader of the tables keyed on the log's generation could
rebuild between the two and keep the state before the commit until the next one. Embedded, the
generations are an in-process condition; with Redis, the committing controller publishes each
notice on a channel and one listener thread per process fans it out locally: a process starts
it the first time it waits or reads a generation through `watched_*`, so that every process
authorizing requests hears a revoked ACL at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

from controlplane.redis_client import key_prefix, redis_client

# The pub/sub channel's name under the deployment's key prefix (`CP_REDIS_KEY_PREFIX`).
CHANNEL = "metadata-committed"
# A notice's text: the log's last offset, or this prefix and the tables' offset, or the other
# prefix and the log's new start (retention): all but the tables', the ACLs' and the quotas'
# move the log's generation. A commit that changed ACLs or client quotas sends their notice (its
# prefix and the tables' offset) just before the tables' (a process of an earlier version takes
# it for the log's: at worst a spurious wake-up).
TABLES_NOTICE = "t"
ACLS_NOTICE = "a"
QUOTAS_NOTICE = "q"
LOG_START_NOTICE = "s"
logger = logging.getLogger(__name__)


class MetadataNotifier:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.generation = 0
        self.tables_generation = 0
        self.acl_generation = 0
        self.quota_generation = 0
        self.tables_offset = -1  # the highest offset the tables were heard to reach
        self._listener: threading.Thread | None = None
        self._listener_lock = threading.Lock()
        self._async_waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def publish(self, last_offset: int) -> None:
        """Tell the other processes (through Redis) that the log grew."""
        self._send(str(last_offset))
        self.bump()

    def publish_log_start(self, offset: int) -> None:
        """Tell the other processes that retention moved the log's start to `offset` (a change
        of the log's head, as a commit is: what its readers keep is read again)."""
        self._send(f"{LOG_START_NOTICE}{offset}")
        self.bump()

    def publish_tables(
        self, offset: int, *, acls_changed: bool = False, quotas_changed: bool = False
    ) -> None:
        """Tell the other processes that the state tables reached the log's `offset` (and,
        with `acls_changed` or `quotas_changed`, that the ACLs or the client quotas they hold
        changed on the way)."""
        if acls_changed:
            self._send(f"{ACLS_NOTICE}{offset}")
            self.bump_acls()
        if quotas_changed:
            self._send(f"{QUOTAS_NOTICE}{offset}")
            self.bump_quotas()
        self._send(f"{TABLES_NOTICE}{offset}")
        self.bump_tables(offset)

    def _send(self, notice: str) -> None:
        client = redis_client()
        if client is not None:
            try:
                client.publish(key_prefix() + CHANNEL, notice)
            except Exception:  # a lost wake-up only delays readers until their wait or cache ends
                logger.warning("could not publish the metadata commit notice", exc_info=True)

    def watched_generation(self) -> int:
        """The log's generation, this process listening for the notices that move it."""
        self._ensure_listener()
        return self.generation

    def watched_tables_generation(self) -> int:
        """The tables' generation, this process listening for the notices that move it."""
        self._ensure_listener()
        return self.tables_generation

    def watched_acl_generation(self) -> int:
        """The ACLs' generation, this process listening for the notices that move it."""
        self._ensure_listener()
        return self.acl_generation

    def watched_quota_generation(self) -> int:
        """The client quotas' generation, this process listening for the notices that move it."""
        self._ensure_listener()
        return self.quota_generation

    def wait(self, generation: int, timeout_s: float) -> bool:
        """Wait until the generation moves past `generation`; False on timeout."""
        self._ensure_listener()
        with self._cond:
            return self._cond.wait_for(lambda: self.generation != generation, timeout_s)

    def wait_tables(self, generation: int, timeout_s: float) -> bool:
        """Wait until the tables' generation moves past `generation`; False on timeout."""
        self._ensure_listener()
        with self._cond:
            return self._cond.wait_for(lambda: self.tables_generation != generation, timeout_s)

    def wait_tables_offset(self, offset: int, timeout_s: float) -> bool:
        """Wait until the tables were heard to reach the log's `offset`; False on timeout."""
        self._ensure_listener()
        with self._cond:
            return self._cond.wait_for(lambda: self.tables_offset >= offset, timeout_s)

    async def wait_async(self, generation: int, timeout_s: float) -> bool:
        """`wait` on an event loop: no thread is held while the log stands still."""
        self._ensure_listener()
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        waiter = (loop, woken)
        with self._cond:
            if self.generation != generation:
                return True
            self._async_waiters.add(waiter)
        try:
            await asyncio.wait_for(woken, timeout_s)
            return True
        except TimeoutError:
            return self.generation != generation
        finally:
            with self._cond:
                self._async_waiters.discard(waiter)

    @property
    def parked(self) -> int:
        """The long-polls waiting on an event loop now (each holding no thread)."""
        with self._cond:
            return len(self._async_waiters)

    def bump(self) -> None:
        with self._cond:
            self.generation += 1
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, set()
        for loop, woken in waiters:
            loop.call_soon_threadsafe(_wake, woken)

    def bump_tables(self, offset: int | None = None) -> None:
        with self._cond:
            self.tables_generation += 1
            if offset is not None and offset > self.tables_offset:
                self.tables_offset = offset
            self._cond.notify_all()

    def bump_acls(self) -> None:
        with self._cond:
            self.acl_generation += 1
            self._cond.notify_all()

    def bump_quotas(self) -> None:
        with self._cond:
            self.quota_generation += 1
            self._cond.notify_all()

    def _ensure_listener(self) -> None:
        if self._listener is not None or redis_client() is None:
            return
        with self._listener_lock:
            if self._listener is None:
                self._listener = threading.Thread(
                    target=self._listen, name="metadata-notifier", daemon=True
                )
                self._listener.start()

    def _listen(self) -> None:
        client = redis_client()
        assert client is not None
        while True:
            try:
                pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
                pubsub.subscribe(key_prefix() + CHANNEL)
                for message in pubsub.listen():
                    if message.get("type") != "message":
                        continue
                    notice = _text(message.get("data"))
                    if notice.startswith(TABLES_NOTICE):
                        self.bump_tables(_offset(notice[len(TABLES_NOTICE) :]))
                    elif notice.startswith(ACLS_NOTICE):
                        self.bump_acls()
                    elif notice.startswith(QUOTAS_NOTICE):
                        self.bump_quotas()
                    else:
                        self.bump()
            except Exception:
                logger.warning("metadata notifier lost Redis; reconnecting", exc_info=True)
                self.bump()  # wake waiters so they re-read the log themselves
                self.bump_tables()  # and drop what was built from the tables
                self.bump_acls()
                self.bump_quotas()
                time.sleep(0.5)


def _text(data: object) -> str:
    return data.decode() if isinstance(data, bytes) else str(data)


def _offset(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # a notice of another version: a bump without an offset
        return None


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


notifier = MetadataNotifier()

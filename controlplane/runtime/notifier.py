"""Wakes long-polling metadata fetches when the log grows.

Commits bump a generation. Embedded, that is an in-process condition; with Redis, the committing
controller publishes on a channel and one listener thread per web process fans it out locally.
"""

from __future__ import annotations

import logging
import threading
import time

from controlplane.redis_client import key_prefix, redis_client

# The pub/sub channel's name under the deployment's key prefix (`CP_REDIS_KEY_PREFIX`).
CHANNEL = "metadata-committed"
logger = logging.getLogger(__name__)


class MetadataNotifier:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.generation = 0
        self._listener: threading.Thread | None = None
        self._listener_lock = threading.Lock()

    def publish(self, last_offset: int) -> None:
        """Tell the other processes (through Redis) that the log grew."""
        client = redis_client()
        if client is not None:
            try:
                client.publish(key_prefix() + CHANNEL, str(last_offset))
            except Exception:  # a lost wake-up only delays fetchers until their wait ends
                logger.warning("could not publish the metadata commit notice", exc_info=True)
        self.bump()

    def wait(self, generation: int, timeout_s: float) -> bool:
        """Wait until the generation moves past `generation`; False on timeout."""
        self._ensure_listener()
        with self._cond:
            return self._cond.wait_for(lambda: self.generation != generation, timeout_s)

    def bump(self) -> None:
        with self._cond:
            self.generation += 1
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
                    if message.get("type") == "message":
                        self.bump()
            except Exception:
                logger.warning("metadata notifier lost Redis; reconnecting", exc_info=True)
                self.bump()  # wake waiters so they re-read the log themselves
                time.sleep(0.5)


notifier = MetadataNotifier()

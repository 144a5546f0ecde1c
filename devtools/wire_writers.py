"""The fault campaign's Kafka-protocol writer: a stock client (kafka-python's KafkaAdminClient,
SASL/PLAIN as the admin) creating topics of its own through `serve_kafka`, one at a time, each
retried under the same name until acknowledged. A retry answered TOPIC_ALREADY_EXISTS was
applied by an attempt whose answer the fault cut: acknowledged then. What the campaign checks:
every acknowledged topic is in the metadata log exactly once, none is there twice, and no first
attempt found its topic there (that is a "not applied" answer to a write that was)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from typing import Any


class WireWriter:
    def __init__(self, bootstrap: str, token: str, *, prefix: str = "wire-campaign") -> None:
        self.bootstrap = bootstrap
        self.token = token
        self.prefix = prefix
        self.acknowledged: dict[str, float] = {}  # topic -> when acknowledged
        self.outcomes: Counter[str] = Counter()
        self._stop = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._admin: Any = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._go.set()
        self._thread.join(timeout=60)
        self._close_client()  # its own I/O thread would go on reconnecting to a dead listener

    def pause(self) -> None:
        """No new topic once this returns, and the one in flight answered (or given up)."""
        self._go.clear()
        self._idle.wait(timeout=60)

    def resume(self) -> None:
        self._go.set()

    def first_acknowledged_after(self, moment: float) -> bool:
        return any(when > moment for when in list(self.acknowledged.values()))

    def _client(self) -> Any:
        from kafka import KafkaAdminClient

        if self._admin is None:
            self._admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap,
                client_id="campaign-wire-writer",
                security_protocol="SASL_PLAINTEXT",
                sasl_mechanism="PLAIN",
                sasl_plain_username="admin",
                sasl_plain_password=self.token,
                request_timeout_ms=10000,
                reconnect_backoff_ms=100,
                reconnect_backoff_max_ms=1000,
            )
        return self._admin

    def _run(self) -> None:
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        number = 0
        while not self._stop.is_set():
            self._idle.set()
            self._go.wait()
            if self._stop.is_set():
                return
            self._idle.clear()
            if not self._go.is_set():  # paused between the wait and now
                continue
            name = f"{self.prefix}-{number:05d}"
            attempts = 0
            while not self._stop.is_set():
                attempts += 1
                try:
                    self._client().create_topics([NewTopic(name, 1, 3)])
                    self.outcomes["created"] += 1
                    break
                except TopicAlreadyExistsError:
                    # On a first attempt: kafka-python resent it after an answer that said
                    # NOT_CONTROLLER ("not applied") for a write that was applied; counted, and
                    # the campaign fails on it (the topic exists: the writer goes on).
                    self.outcomes[
                        "already_there_at_first_attempt"
                        if attempts == 1
                        else "created_by_a_cut_attempt"
                    ] += 1
                    break
                except Exception as error:  # the listener died: a new client, the same name
                    self.outcomes[type(error).__name__] += 1
                    self._close_client()
                    time.sleep(0.2)
            else:
                self._idle.set()
                return
            self.acknowledged[name] = time.monotonic()
            number += 1

    def _close_client(self) -> None:
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(Exception):  # a client of a dead connection
                admin.close()

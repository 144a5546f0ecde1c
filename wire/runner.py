"""Run a WireServer: in a process of its own (serve_kafka), or in a thread of this one (the
tests, a benchmark)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from wire.apis import load_all
from wire.listeners import parse_listeners
from wire.server import Bound, Limits, WireServer


class ThreadedListener:
    """A WireServer on an event loop of its own thread; `stop()` closes it."""

    def __init__(self, server: WireServer) -> None:
        load_all()
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafka-wire-loop", daemon=True)

    def start(self) -> list[Bound]:
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self.server.bound

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        except BaseException as error:  # a port taken: told to the starting thread
            self._error = error
            self._started.set()
            return
        self._started.set()
        self.loop.run_forever()

    def stop(self) -> None:
        if not self.loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


async def start_embedded(log: Any) -> WireServer:
    """The embedded web worker's listener (`CP_KAFKA_LISTENERS`), on the worker's event loop."""
    from django.conf import settings

    load_all()
    server = WireServer(
        parse_listeners(
            settings.CP_KAFKA_LISTENERS,
            settings.CP_KAFKA_LISTENER_SECURITY_PROTOCOL_MAP,
            settings.CP_KAFKA_CONTROLLER_LISTENER_NAMES,
        ),
        limits=Limits(
            heartbeat_threads=settings.CP_HEARTBEAT_THREADS,
            heartbeat_rate=settings.CP_HEARTBEAT_RATE_LIMIT,
            heartbeat_burst=settings.CP_HEARTBEAT_RATE_BURST,
            max_long_polls_per_peer=settings.CP_LONG_POLL_MAX_PER_PEER,
        ),
        advertised_host=settings.CP_KAFKA_ADVERTISED_HOST,
        port_per_node=settings.CP_KAFKA_PORT_PER_NODE,
        controller_plaintext_principal=settings.CP_KAFKA_CONTROLLER_PLAINTEXT_PRINCIPAL,
    )
    for bound in await server.start():
        listener = bound.listener
        log.info(
            "Kafka protocol listener %s://%s:%d (%s, %s)",
            listener.listener_name,
            bound.host,
            bound.port,
            listener.protocol,
            listener.role,
        )
    return server

"""The internal listener as a web worker serves it, in a thread of the test process: uvicorn's
HTTP/1.1 protocol with the header deadline, `ListenerApp` with its pools, Django behind it, on a
free port that is `CP_INTERNAL_PORT` for the test (the socket's port picks the listener). Its
requests reach the test's database and this process's controller, as the embedded run does."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import uvicorn
from django.core.wsgi import get_wsgi_application

from controlplane.server.listener import ListenerApp
from controlplane.server.protocol import deadline_protocol


class LiveListener:
    def __init__(self, app: ListenerApp, sock: socket.socket) -> None:
        self.app = app
        self.host, self.port = sock.getsockname()[:2]
        self._sock = sock
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._up = threading.Event()
        self._thread = threading.Thread(target=self._run, name="internal-listener", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        config = uvicorn.Config(
            self.app,
            http=deadline_protocol(10),
            lifespan="off",
            interface="asgi3",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            timeout_keep_alive=60,
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[self._sock])
        self._stop = asyncio.Event()
        self._up.set()
        await self._stop.wait()
        server.should_exit = True
        await server.shutdown()

    def start(self) -> None:
        self._thread.start()
        assert self._up.wait(10), "the listener did not start"

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=20)
        self.app.close()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None,
        timeout_s: float = 20,
    ) -> tuple[int, Any]:
        """One request on a connection of its own: (status, JSON body)."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            data = None if body is None else json.dumps(body)
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()


@contextlib.contextmanager
def live_internal_listener(
    settings: Any,
    *,
    threads: int,
    fetch_threads: int,
    heartbeat_threads: int,
    heartbeat_rate: float = 0.0,
    heartbeat_burst: float = 0.0,
    max_parked_per_peer: int = 0,
) -> Iterator[LiveListener]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    settings.CP_INTERNAL_PORT = sock.getsockname()[1]
    app = ListenerApp(
        get_wsgi_application(),
        name="internal",
        threads=threads,
        max_body_bytes=settings.CP_MAX_BODY_BYTES,
        body_timeout_s=10,
        fetch_threads=fetch_threads,
        heartbeat_threads=heartbeat_threads,
        heartbeat_rate=heartbeat_rate,
        heartbeat_burst=heartbeat_burst,
        max_parked_per_peer=max_parked_per_peer,
    )
    listener = LiveListener(app, sock)
    listener.start()
    try:
        yield listener
    finally:
        listener.stop()
        sock.close()

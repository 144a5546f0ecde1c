"""gunicorn's worker class for the control plane: one event loop, one server per listener.

    gunicorn controlplane.wsgi:application \\
        --worker-class controlplane.server.worker.ControlPlaneWorker \\
        --bind 127.0.0.1:8000 --bind 127.0.0.1:8001 --threads 8 --no-control-socket \\
        --config python:controlplane.gunicorn_conf

gunicorn's arbiter binds the sockets, forks and watches the workers; each worker serves every
socket it was given with uvicorn's HTTP/1.1 protocol (header deadline: `DeadlineProtocol`). The
sockets on `CP_INTERNAL_PORT` (every socket when `CP_LISTENER=internal`) are the internal
listener's and get a server and a thread pool of their own; the rest are the public listener's.
`--threads` is the size of each listener's pool; the internal listener has a second pool of that
size for the metadata fetch and a third of `CP_HEARTBEAT_THREADS` for the brokers' heartbeats
and registrations (controlplane.server.listener). Idle connections close after
gunicorn's `--keep-alive`, on the internal listener after three heartbeat intervals at least
(`internal_keep_alive_s`).
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import sys
from typing import Any

from gunicorn.workers import base

from controlplane.server.ingress_lag import HOUSEKEEPING_S, IngressLagReporter, WaitSource


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency; plain asyncio works too
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


# The internal listener keeps an idle connection at least this long: above the broker
# simulator's own idle expiry (simulator.client.KEEPALIVE_EXPIRY_S, 4 s), so that the
# client, not the server, is the one that drops a pooled connection.
MIN_INTERNAL_KEEP_ALIVE_S = 5


def internal_keep_alive_s(keepalive_s: float, heartbeat_interval_ms: int) -> int:
    """The internal listener's keep-alive: gunicorn's, but at least three heartbeat intervals
    (and `MIN_INTERNAL_KEEP_ALIVE_S`). A broker's pooled connection sits idle one interval
    between heartbeats: a keep-alive near it (gunicorn's default 2 s,
    `broker.heartbeat.interval.ms` 2000) closes the connection just as the broker reuses it,
    failing the heartbeat with a reset."""
    return max(
        MIN_INTERNAL_KEEP_ALIVE_S,
        math.ceil(keepalive_s or 1),
        math.ceil(3 * heartbeat_interval_ms / 1000),
    )


async def _start_kafka_listener(log: Any) -> Any:
    """Embedded, the web worker is the controller: it hosts the Kafka protocol listener too
    (`CP_KAFKA_LISTENERS`) on its own event loop; distributed, `serve_kafka` is a process."""
    from django.conf import settings

    if not settings.CP_KAFKA_LISTENERS:
        return None
    from django.utils.module_loading import import_string

    # Named by the settings: the server knows no app (the import contracts say so).
    return await import_string(settings.CP_KAFKA_LISTENER_STARTER)(log)


def listener_of_socket(port: int) -> str:
    from django.conf import settings

    if settings.CP_LISTENER == "internal":
        return "internal"
    internal = settings.CP_INTERNAL_PORT
    return "internal" if internal and port == internal else "public"


class ControlPlaneWorker(base.Worker):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loop: asyncio.AbstractEventLoop | None = None

    def init_process(self) -> None:
        # The settings are read before gunicorn loads the app (controlplane.wsgi names the
        # same default): a server started without DJANGO_SETTINGS_MODULE must still boot.
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        from django.conf import settings

        # How long a thread holds the GIL before it must let another run (Python's default:
        # 5 ms). The listener's threads answer heartbeats beside metadata fetches that encode
        # and copy megabytes; a shorter turn keeps a heartbeat from waiting behind them.
        sys.setswitchinterval(settings.CP_GIL_SWITCH_INTERVAL_MS / 1000)
        self.loop = new_event_loop()
        asyncio.set_event_loop(self.loop)
        super().init_process()

    def init_signals(self) -> None:
        assert self.loop is not None
        for sig in self.SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        for sig in (signal.SIGTERM, signal.SIGQUIT, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._stop)
        self.loop.add_signal_handler(signal.SIGUSR1, self.log.reopen_files)
        self.loop.add_signal_handler(signal.SIGWINCH, lambda: None)

    def _stop(self) -> None:
        self.alive = False

    def run(self) -> None:
        assert self.loop is not None
        try:
            self.loop.run_until_complete(self._serve())
        finally:
            self.loop.close()

    async def _serve(self) -> None:
        import uvicorn
        from django.conf import settings

        from controlplane.server.listener import ListenerApp
        from controlplane.server.protocol import deadline_protocol

        sockets: dict[str, list[Any]] = {}
        for sock in self.sockets:
            port = sock.sock.getsockname()[1]
            sockets.setdefault(listener_of_socket(port), []).append(sock.sock)
        apps: list[ListenerApp] = []
        servers: list[uvicorn.Server] = []
        protocol = deadline_protocol(settings.CP_HTTP_HEADER_TIMEOUT_S)
        for name, bound in sockets.items():
            internal = name == "internal"
            app = ListenerApp(
                self.wsgi,
                name=name,
                threads=self.cfg.threads,
                max_body_bytes=settings.CP_MAX_BODY_BYTES,
                body_timeout_s=settings.CP_HTTP_BODY_TIMEOUT_S,
                fetch_threads=self.cfg.threads if internal else 0,
                heartbeat_threads=settings.CP_HEARTBEAT_THREADS if internal else 0,
                heartbeat_rate=settings.CP_HEARTBEAT_RATE_LIMIT,
                heartbeat_burst=settings.CP_HEARTBEAT_RATE_BURST,
                max_parked_per_peer=settings.CP_LONG_POLL_MAX_PER_PEER,
            )
            keep_alive_s = max(1, int(self.cfg.keepalive or 1))
            if internal:
                keep_alive_s = internal_keep_alive_s(
                    self.cfg.keepalive, settings.CP_BROKER_HEARTBEAT_INTERVAL_MS
                )
            config = uvicorn.Config(
                app,
                http=protocol,
                lifespan="off",
                interface="asgi3",
                log_config=None,
                access_log=False,
                proxy_headers=False,  # the peer is who connected: never a header's word
                server_header=False,
                timeout_keep_alive=keep_alive_s,
                timeout_graceful_shutdown=int(self.cfg.graceful_timeout),
            )
            config.load()
            server = uvicorn.Server(config)
            server.lifespan = config.lifespan_class(config)  # "off": a no-op, as serve() sets it
            await server.startup(sockets=bound)
            apps.append(app)
            servers.append(server)
        self.log.info(
            "serving %s",
            ", ".join(f"{name} on {len(bound)} socket(s)" for name, bound in sockets.items()),
        )
        kafka = await _start_kafka_listener(self.log)
        internal_apps = [app for app in apps if app.name == "internal"]
        sources: list[WaitSource] = [*internal_apps, *([kafka] if kafka is not None else [])]
        lag = IngressLagReporter(sources) if internal_apps else None
        try:
            while self.alive:
                self.notify()
                if self.ppid != os.getppid():
                    self.log.info("parent changed, shutting down: %s", self)
                    break
                if lag is not None:
                    await lag.sleep_and_measure()
                else:
                    await asyncio.sleep(HOUSEKEEPING_S)
        finally:
            for server in servers:
                server.should_exit = True
                await server.shutdown()
            for app in apps:
                app.close()
            if kafka is not None:
                await kafka.close()

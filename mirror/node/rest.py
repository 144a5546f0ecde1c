"""A flow's REST server on a mirror node (KIP-710): Kafka Connect's REST API, the subset
docs/operators/mirror.md names, one server per flow, bound as the flow's worker config says (http or
https).

`GET /`, `GET /connectors`, `GET /connectors/{name}`, `GET /connectors/{name}/config`
(references unresolved), `GET /connectors/{name}/status`, `GET /connectors/{name}/tasks`,
`PUT /connectors/{name}/pause` and `/resume` (202), and the internal
`POST /connectors/{name}/tasks`: a follower's new task configs for the leader, signed with the
flow's session key (403 otherwise). Errors are Connect's `{error_code, message}`, the HTTP status
as the code.
"""

from __future__ import annotations

import json
import logging
import re
import ssl
import threading
import urllib.parse
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

logger = logging.getLogger("mirror.node.rest")
MAX_BODY = 8 * 1024 * 1024
Answer = tuple[int, Any]  # (HTTP status, JSON body or None)


class Herder(Protocol):
    """What a flow's REST server asks of its worker (Connect's Herder, this API's part)."""

    def server_info(self) -> dict[str, Any]: ...

    def connector_names(self) -> list[str]: ...

    def connector_info(self, name: str) -> dict[str, Any] | None: ...

    def connector_config(self, name: str) -> dict[str, str] | None: ...

    def connector_status(self, name: str) -> dict[str, Any] | None: ...

    def connector_tasks(self, name: str) -> list[dict[str, Any]] | None: ...

    def alter_target_state(self, name: str, state: str, authorization: str) -> Answer: ...

    def receive_task_configs(
        self, name: str, body: bytes, headers: Mapping[str, str], forward: bool | None
    ) -> Answer: ...


def error(status: int, message: str) -> Answer:
    return status, {"error_code": status, "message": message}


CONNECTOR = r"/connectors/(?P<name>[^/]+)"
ROUTES: list[tuple[str, re.Pattern[str], str]] = [
    ("GET", re.compile(r"/"), "root"),
    ("GET", re.compile(r"/connectors/?"), "list"),
    ("GET", re.compile(CONNECTOR + r"/?"), "info"),
    ("GET", re.compile(CONNECTOR + r"/config/?"), "config"),
    ("GET", re.compile(CONNECTOR + r"/status/?"), "status"),
    ("GET", re.compile(CONNECTOR + r"/tasks/?"), "tasks"),
    ("PUT", re.compile(CONNECTOR + r"/pause/?"), "pause"),
    ("PUT", re.compile(CONNECTOR + r"/resume/?"), "resume"),
    ("POST", re.compile(CONNECTOR + r"/tasks/?"), "put_tasks"),
]


def route(
    herder: Herder, method: str, raw_path: str, body: bytes, headers: Mapping[str, str]
) -> Answer:
    """The answer to one request (pure dispatch, so tests can call it without sockets)."""
    parts = urllib.parse.urlsplit(raw_path)
    query = urllib.parse.parse_qs(parts.query)
    allowed = False
    for route_method, pattern, action in ROUTES:
        match = pattern.fullmatch(parts.path)
        if match is None:
            continue
        allowed = True
        if route_method != method:
            continue
        name = urllib.parse.unquote(match.groupdict().get("name") or "")
        return _dispatch(herder, action, name, body, headers, query)
    return error(405, f"{method} is not allowed here") if allowed else error(404, "Not found")


def _dispatch(
    herder: Herder,
    action: str,
    name: str,
    body: bytes,
    headers: Mapping[str, str],
    query: Mapping[str, list[str]],
) -> Answer:
    if action == "root":
        return 200, herder.server_info()
    if action == "list":
        return 200, herder.connector_names()
    if action in ("pause", "resume"):
        state = "PAUSED" if action == "pause" else "STARTED"
        return herder.alter_target_state(name, state, headers.get("Authorization", ""))
    if action == "put_tasks":
        forward = query.get("forward", [None])[0]
        return herder.receive_task_configs(
            name, body, headers, None if forward is None else forward.lower() == "true"
        )
    read = {
        "info": herder.connector_info,
        "config": herder.connector_config,
        "status": herder.connector_status,
        "tasks": herder.connector_tasks,
    }[action]
    found = read(name)
    if found is None:
        return error(404, f"Connector {name} not found")
    return 200, found


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RestServer

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._send(*error(413, "Request body too large"))
            return
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items()}
        try:
            status, answer = route(self.server.herder, self.command, self.path, body, headers)
        except Exception:  # a bug answers 500 in Connect's shape; the server keeps serving
            logger.exception("REST request %s %s failed", self.command, self.path.split("?")[0])
            status, answer = error(500, "Internal error")
        self._send(status, answer)

    def _send(self, status: int, answer: Any) -> None:
        payload = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        if answer is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # no headers, no bodies, quietly
        logger.debug("%s %s", self.command, self.path.split("?")[0])


class RestServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, herder: Herder, host: str, port: int, tls: ssl.SSLContext | None = None
    ) -> None:
        self.herder = herder
        self.tls = tls
        super().__init__((host or "0.0.0.0", port), _Handler)
        self._thread: threading.Thread | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake happens in the request's own thread, never in the accepting loop.
        if self.tls is not None:
            request = self.tls.wrap_socket(request, server_side=True)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("REST connection from %s failed", client_address, exc_info=True)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


def server_tls(tls: Mapping[str, str]) -> ssl.SSLContext:
    """The https listener's context from `listeners.https.` settings (PEM keystore: the
    certificate chain and its key in `ssl.keystore.location`; `ssl.key.password` when the key
    is encrypted; `ssl.truststore.location` and `ssl.client.auth` for client certificates)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    keystore = tls.get("ssl.keystore.location", "")
    if not keystore:
        raise ValueError("listeners.https.ssl.keystore.location is required for https")
    context.load_cert_chain(keystore, password=tls.get("ssl.key.password") or None)
    auth = tls.get("ssl.client.auth", "none").lower()
    if auth != "none":
        context.verify_mode = ssl.CERT_REQUIRED if auth == "required" else ssl.CERT_OPTIONAL
        context.load_verify_locations(tls["ssl.truststore.location"])
    return context


def client_tls(tls: Mapping[str, str]) -> ssl.SSLContext | bool:
    """How a worker verifies another worker's https REST server (and presents its own
    certificate when client authentication is on)."""
    truststore = tls.get("ssl.truststore.location")
    keystore = tls.get("ssl.keystore.location")
    if not truststore and not keystore:
        return True
    context = ssl.create_default_context(cafile=truststore or None)
    if keystore and tls.get("ssl.client.auth", "none").lower() != "none":
        context.load_cert_chain(keystore, password=tls.get("ssl.key.password") or None)
    return context

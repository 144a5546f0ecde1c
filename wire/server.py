"""The Kafka protocol listener: asyncio for the sockets, a thread pool for the handlers.

Each connection is served as Kafka's SocketServer serves it: one whole frame (bounded by the
maximum frame size) is read, then the connection is muted until that request is answered, so
one request at a time is held per connection; the bytes of every request held are bounded
together (`queued.max.request.bytes`, wire.memory), and a request whose list is longer than
its API allows is refused before anything of it is decoded. A SASL listener's connection starts
unauthenticated: only ApiVersions, SaslHandshake and SaslAuthenticate are served until
SASL/PLAIN succeeds, within the authentication timeout. Listeners have a role (wire.listeners):
controller listeners serve what brokers send the controller (Envelope), to brokers and super
users only; client listeners serve admin clients. Handlers run on the pool (Django, the
controller) and their answers are encoded there too, so the event loop only moves bytes; a
broker's heartbeats and registrations have a pool of their own (wire.doors). What
Kafka would not parse closes the connection; nothing of it reaches a handler, so nothing is
written.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import ssl
import time
import uuid
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode

from controlplane.http_errors import is_unavailable
from controlplane.login_failures import (
    CLIENT_DOOR,
    CONTROLLER_DOOR,
    FAILED_AUTHENTICATION_DELAY_S,
    FAILED_LOGINS,
)
from controlplane.principals import AuthenticatedPrincipal, principal_forwarded
from controlplane.rpc import Caller
from wire import metrics
from wire.admission import (
    ANONYMOUS,
    authenticate_plain_on_pool,
    plain_user,
    within_request_rate,
)
from wire.apis.base import WIRE_APIS, Advertised, LongPoll, WireApi, WireRequest
from wire.convert import from_data
from wire.doors import HEARTBEAT_APIS, Door, doors_of
from wire.features import api_versions_features
from wire.lanes import Peer, answered, in_heartbeat_lane
from wire.limits import (
    Limits,
    TooLargeBeforeAuthentication,
    TooManyItems,
    unauthenticated_frame_size,
    within_item_bound,
)
from wire.listeners import (
    CLIENT,
    SECURITY_PROTOCOLS,
    Listener,
    require_private_plaintext_controllers,
)
from wire.memory import MemoryWaitTimedOut, read_charged
from wire.protocol import (
    API_VERSIONS_KEY,
    InvalidRequest,
    RequestHeader,
    encode_body,
    encode_response,
    frame_size,
    peek_header,
    read_body,
    read_header,
    software_version_of,
    unsupported_api_versions,
)
from wire.sasl import MECHANISMS, SaslFailed
from wire.scram import ScramExchange, is_scram, scram_authenticate
from wire.tls_principal import (
    NoMatchingRule,
    Rule,
    distinguished_name,
    mapped_name,
    parse_rules,
    ssl_context,
)

logger = logging.getLogger(__name__)

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
# The APIs of the connection itself, served by the server (they change its state).
SESSION_APIS: dict[int, tuple[str, int, int]] = {
    API_VERSIONS_KEY: ("ApiVersions", 0, 4),
    # v0: the SASL tokens follow as raw frames (no Kafka header), as Kafka still serves them and
    # librdkafka's feature check needs v0 in the range (kcat from Debian: librdkafka 2.0.2).
    SASL_HANDSHAKE_KEY: ("SaslHandshake", 0, 1),
    SASL_AUTHENTICATE_KEY: ("SaslAuthenticate", 0, 2),
}
__all__ = ["SECURITY_PROTOCOLS", "Limits", "Listener", "WireServer", "ssl_context"]


@dataclasses.dataclass(slots=True)
class _Connection:
    listener: Listener
    host: str
    principal: AuthenticatedPrincipal | None  # None until SASL succeeds
    door: Door
    opened_at: float = dataclasses.field(default_factory=time.monotonic)
    handshake_done: bool = False
    client_id: str = ""
    client_software_version: str = ""  # from its ApiVersions v3+ (KIP-511), when valid
    # After a SaslHandshake v0: the next frames are raw SASL tokens, answered with raw frames
    # (PLAIN's empty on success, SCRAM's challenges; a failure closes), as Kafka does.
    raw_sasl_token_next: bool = False
    mechanism: str = ""  # the SaslHandshake's; SCRAM's exchange under way (wire.scram):
    scram: ScramExchange | None = None
    # After its answer is sent, the connection is not read for this long (a throttled
    # heartbeat's throttle_time_ms, as Kafka mutes a throttled channel).
    muted_s: float = 0.0


STORE = "the metadata store cannot be reached now"


class _Close(Exception):
    """End this connection (what Kafka would not parse, or refused authentication)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Bound:
    listener: Listener
    host: str
    port: int


class WireServer:
    """Serves every listener on the running event loop (serve_kafka's own, or the embedded web
    worker's)."""

    def __init__(
        self,
        listeners: list[Listener],
        *,
        limits: Limits | None = None,
        ssl_context: ssl.SSLContext | None = None,
        advertised_host: str | None = None,
        port_per_node: bool = False,
        principal_mapping_rules: str = "DEFAULT",
        controller_plaintext_principal: str | None = None,
    ) -> None:
        if any(listener.tls for listener in listeners) and ssl_context is None:
            raise ValueError("SSL and SASL_SSL listeners need a certificate and key")
        if controller_plaintext_principal:
            require_private_plaintext_controllers(listeners)
        # Who a PLAINTEXT controller listener's connections are (a broker principal), where
        # the operator binds it to loopback or a private network and says so; else ANONYMOUS.
        self.controller_plaintext_principal = controller_plaintext_principal or None
        self.listeners = listeners
        self.limits = limits or Limits()
        self.ssl_context = ssl_context
        self.advertised_host = advertised_host
        self.port_per_node = port_per_node
        # Kafka's ssl.principal.mapping.rules: an SSL client certificate's name to a principal.
        self.principal_mapping_rules: list[Rule] = parse_rules(principal_mapping_rules)
        self._node_ports: dict[tuple[int, int], int] = {}  # (listener index, node id) -> port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._binding: asyncio.Lock | None = None
        limits = self.limits
        self.doors = doors_of(
            client_memory_bytes=limits.queued_max_request_bytes,
            controller_memory_bytes=limits.controller_queued_max_request_bytes,
            client_threads=limits.threads,
            controller_threads=limits.controller_threads,
            heartbeat_threads=limits.heartbeat_threads,
            memory_wait_timeout_s=limits.memory_wait_timeout_s,
            max_connections=limits.max_connections,
            max_connections_per_ip=limits.max_connections_per_ip,
            heartbeat_rate=limits.heartbeat_rate,
            heartbeat_burst=limits.heartbeat_burst,
            max_long_polls_per_peer=limits.max_long_polls_per_peer,
        )
        self.memory = self.doors[CLIENT].memory  # the client door's: what tests look at
        self.bound: list[Bound] = []
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[Any]] = set()
        # The longest a heartbeat or registration waited between its frame and its handler
        # (the loop, its lane, the pool) since the last take: the fencing rule's measure of
        # this listener's deafness (controlplane.server.ingress_lag).
        self._longest_heartbeat_wait_s = 0.0

    # --- lifecycle ------------------------------------------------------------------------
    async def start(self) -> list[Bound]:
        self._loop = asyncio.get_running_loop()
        self._binding = asyncio.Lock()
        for listener in self.listeners:
            port = await self._serve_port(listener, listener.port)
            self.bound.append(Bound(listener, listener.host, port))
        return self.bound

    async def _serve_port(self, listener: Listener, port: int) -> int:
        server = await asyncio.start_server(
            functools.partial(self._connection, listener=listener),
            listener.host,
            port,
            ssl=self.ssl_context if listener.tls else None,
            ssl_handshake_timeout=self.limits.authentication_timeout_s if listener.tls else None,
            limit=64 * 1024,
        )
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    def node_port(self, bound: Bound, node_id: int) -> int:
        """The port node `node_id` is advertised at on `bound`'s listener (port per node):
        bound on first use, from a handler's thread, on the event loop; kept while the
        process lives."""
        key = (self.bound.index(bound), node_id)
        port = self._node_ports.get(key)
        if port is not None:
            return port
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(self._bind_node(key, bound), self._loop)
        return future.result(timeout=10)

    async def _bind_node(self, key: tuple[int, int], bound: Bound) -> int:
        assert self._binding is not None
        async with self._binding:
            if key not in self._node_ports:
                self._node_ports[key] = await self._serve_port(bound.listener, 0)
            return self._node_ports[key]

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        for door in self.doors.values():
            door.shutdown()

    def advertised(self, bound: Bound) -> Advertised:
        host = self.advertised_host or bound.host
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if not self.port_per_node:
            return Advertised(host, bound.port)
        return Advertised(host, bound.port, functools.partial(self.node_port, bound))

    def _maps_plaintext_controller(self, listener: Listener) -> bool:
        return bool(
            self.controller_plaintext_principal
            and listener.controller
            and listener.protocol == "PLAINTEXT"
        )

    def _transport_principal(self, writer: asyncio.StreamWriter) -> AuthenticatedPrincipal:
        """PLAINTEXT, or SSL without a client certificate: User:ANONYMOUS; SSL with one: its
        subject's name as `ssl.principal.mapping.rules` maps it (Kafka's
        DefaultKafkaPrincipalBuilder)."""
        certificate = writer.get_extra_info("peercert")
        if not certificate:
            return ANONYMOUS
        name = mapped_name(distinguished_name(certificate), self.principal_mapping_rules)
        return AuthenticatedPrincipal(0, name, False, False)

    @staticmethod
    def served(role: str = CLIENT) -> dict[int, tuple[int, int]]:
        """The versions ApiVersions advertises on a listener of `role`."""
        versions = {key: (low, high) for key, (_, low, high) in SESSION_APIS.items()}
        versions.update(
            {key: (a.min_version, a.max_version) for key, a in WIRE_APIS.items() if role in a.roles}
        )
        return versions

    # --- one connection -------------------------------------------------------------------
    async def _connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: Listener
    ) -> None:
        peer = writer.get_extra_info("peername") or ("", 0)
        host = str(peer[0])
        door = self.doors[listener.role]
        refused = door.refusal(host)
        if refused is not None:
            metrics.CONNECTIONS_REFUSED.labels(listener.listener_name, refused).inc()
            writer.close()
            return
        try:
            principal = None if listener.sasl else self._transport_principal(writer)
            if principal is not None and self._maps_plaintext_controller(listener):
                assert self.controller_plaintext_principal is not None
                principal = await asyncio.get_running_loop().run_in_executor(
                    door.pool, principal_forwarded, self.controller_plaintext_principal
                )
        except NoMatchingRule as error:
            metrics.CONNECTIONS_REFUSED.labels(listener.listener_name, "principal_mapping").inc()
            logger.warning("closing %s: %s", host, error)
            writer.close()
            return
        door.opened(host)
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        metrics.CONNECTIONS.labels(listener.listener_name).inc()
        bound = next(b for b in self.bound if b.listener is listener)
        conn = _Connection(listener, host, principal, door)
        try:
            await self._serve(conn, reader, writer, bound)
        except asyncio.CancelledError:
            pass  # the listener closes (a parked Fetch among others): nothing more to answer
        finally:
            writer.close()
            door.closed(host)
            metrics.CONNECTIONS.labels(listener.listener_name).dec()

    def _refused(self, conn: _Connection, reason: str) -> None:
        metrics.CONNECTIONS_REFUSED.labels(conn.listener.listener_name, reason).inc()

    async def _serve(
        self,
        conn: _Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        bound: Bound,
    ) -> None:
        """Read a frame, answer it, then read the next: the connection is muted while its one
        request is held (Kafka's SocketServer), so a peer never has more than one frame in this
        process. An authenticated frame's bytes come from its door's request memory as they
        arrive; a frame before authentication is bounded by itself and charged to no pool."""
        memory = conn.door.memory
        name = conn.listener.listener_name
        try:
            while True:
                size = await self._next_frame_size(conn, reader)
                frame: bytes | bytearray
                if conn.principal is None:
                    timeout_s = self._timeout(conn)
                    frame = await asyncio.wait_for(reader.readexactly(size), timeout_s)
                    charged = 0
                else:
                    frame, charged = await read_charged(
                        reader, size, memory, name, timeout_s=self.limits.frame_timeout_s
                    )
                try:
                    received = time.perf_counter()
                    response = await self._respond(conn, bytes(frame), bound, received)
                    del frame
                    writer.write(response)
                    await writer.drain()
                finally:
                    await memory.give_back(charged)
                if conn.muted_s > 0:
                    muted_s, conn.muted_s = conn.muted_s, 0.0
                    await asyncio.sleep(muted_s)
        except _Close as error:
            logger.info("closing %s (%s): %s", conn.host, conn.client_id, error)
            if error.args and isinstance(error.args[-1], bytes):  # a last answer, then close
                writer.write(error.args[-1])
                await writer.drain()
        except TooLargeBeforeAuthentication as error:
            self._refused(conn, "sasl_receive_size")
            logger.warning("closing %s before authentication: %s", conn.host, error)
        except TooManyItems as error:
            self._refused(conn, "too_many_items")
            logger.warning("closing %s (%s): %s", conn.host, conn.client_id, error)
        except InvalidRequest as error:
            self._refused(conn, "invalid_frame")
            logger.info("closing %s: %s", conn.host, error)
        except MemoryWaitTimedOut as error:
            self._refused(conn, "memory_wait_timeout")
            logger.warning("closing %s (%s): %s", conn.host, conn.client_id, error)
        except TimeoutError:
            reason = "idle" if conn.principal is not None else "authentication_timeout"
            self._refused(conn, reason)
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass

    def _timeout(self, conn: _Connection) -> float:
        """Idle time between frames; before authentication, what is left of the session's whole
        time to authenticate (a peer sending ApiVersions every few seconds gets no more)."""
        if conn.principal is None:
            left = conn.opened_at + self.limits.authentication_timeout_s - time.monotonic()
            if left <= 0:
                raise TimeoutError
            return left
        return self.limits.idle_timeout_s

    async def _next_frame_size(self, conn: _Connection, reader: asyncio.StreamReader) -> int:
        timeout_s = self._timeout(conn)
        prefix = await asyncio.wait_for(reader.readexactly(4), timeout_s)
        if conn.principal is None:
            return unauthenticated_frame_size(prefix, self.limits.sasl_max_receive_bytes)
        return frame_size(prefix, self.limits.max_frame_bytes)

    async def _respond(
        self, conn: _Connection, frame: bytes, bound: Bound, received: float
    ) -> bytes:
        if conn.raw_sasl_token_next:
            return await self._raw_sasl_token(conn, frame)
        api_key, api_version, correlation_id = peek_header(frame)
        if api_key == API_VERSIONS_KEY and api_version > SESSION_APIS[API_VERSIONS_KEY][2]:
            self._count("ApiVersions", api_version, ["UNSUPPORTED_VERSION"], received)
            return unsupported_api_versions(correlation_id, self.served(conn.listener.role))
        try:
            header = read_header(frame)
        except InvalidRequest as error:
            raise _Close(str(error)) from None
        conn.client_id = header.client_id
        if api_key in SESSION_APIS:
            name, low, high = SESSION_APIS[api_key]
            if not low <= api_version <= high:
                raise _Close(f"{name} v{api_version} is not served")
            body = self._body(header, frame)
            return await self._session(conn, header, body, received)
        if conn.principal is None:  # Kafka: IllegalSaslStateException, then the close
            raise _Close(f"apiKey {api_key} before SASL authentication")
        api = self._api(conn, api_key, api_version)
        within_item_bound(api, header, frame)
        request = WireRequest(
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            body=self._body(header, frame),
            caller=Caller(
                conn.principal,
                host=conn.host,
                client_id=header.client_id,
                request_id=str(uuid.uuid4()),
                security_protocol=conn.listener.protocol,
                listener_role=conn.listener.role,
                client_software_version=conn.client_software_version,
            ),
            advertised=self.advertised(bound),
            listener=conn.listener.protocol,
            listener_name=conn.listener.listener_name,
            listener_role=conn.listener.role,
        )
        await within_request_rate(conn.principal, conn.host, conn.listener.listener_name)
        gate = conn.listener.listener_name if conn.listener.controller else None
        handle = functools.partial(self._handle, api, received=received, gate=gate)
        peer = Peer(conn.door, conn.principal.principal, conn.host, conn.listener.listener_name)
        if api.name in HEARTBEAT_APIS:
            response, conn.muted_s = await in_heartbeat_lane(peer, api.name, request, handle)
        else:
            response = await answered(peer, request, handle)
        if response is None or isinstance(response, LongPoll):
            raise _Close(f"{api.name} failed")
        return response

    def _api(self, conn: _Connection, api_key: int, api_version: int) -> WireApi:
        """The API served for this request on this connection's listener, else the close (as
        Kafka closes a connection that asks for an API its listener does not enable)."""
        api = WIRE_APIS.get(api_key)
        if api is None or not api.min_version <= api_version <= api.max_version:
            raise _Close(f"apiKey {api_key} v{api_version} is not served")
        listener = conn.listener
        if listener.role not in api.roles:
            self._refused(conn, "not_served_on_listener")
            raise _Close(f"{api.name} is not served on {listener.role} listener {listener.name}")
        return api

    @staticmethod
    def _body(header: RequestHeader, frame: bytes) -> Any:
        try:
            return read_body(header, frame)
        except InvalidRequest as error:
            raise _Close(str(error)) from None

    def _handle(
        self, api: WireApi, request: WireRequest, *, received: float, gate: str | None
    ) -> bytes | LongPoll | None:
        """On the pool: the handler, then the encoding (never on the event loop). On a
        controller listener (`gate`: its name) the caller must hold CLUSTER_ACTION first."""
        from django.db import close_old_connections

        from wire.apis.controller.gate import (
            may_reach_the_controller,
            refused_on_controller_listener,
        )

        if api.name in HEARTBEAT_APIS:
            self._note_heartbeat_wait(time.perf_counter() - received)
        close_old_connections()
        try:
            if gate is not None and not may_reach_the_controller(request):
                answer = refused_on_controller_listener(api, request, gate)
            else:
                answer = api.handler(request)
            if isinstance(answer, LongPoll):
                return answer
            body = answer if isinstance(answer, bytes) else encode_body(answer)
            errors = (
                list(getattr(answer, "error_names", ()))
                if isinstance(answer, bytes)
                else metrics.error_names(answer)
            )
        except Exception as error:
            if is_unavailable(error):  # a store restarting: the peer reconnects and retries
                logger.warning("%s v%d: %s (%s)", api.name, request.api_version, STORE, error)
            else:
                logger.exception("%s v%d failed", api.name, request.api_version)
            self._count(api.name, request.api_version, ["UNKNOWN_SERVER_ERROR"], received)
            return None
        finally:
            close_old_connections()
        self._count(api.name, request.api_version, errors, received)
        return encode_response(request.api_key, request.api_version, request.correlation_id, body)

    def _note_heartbeat_wait(self, waited_s: float) -> None:
        # A lost race between two threads only loses a smaller wait: no lock on the hot path.
        if waited_s > self._longest_heartbeat_wait_s:
            self._longest_heartbeat_wait_s = waited_s

    def take_longest_wait(self) -> float:
        """The longest a heartbeat or registration waited before its handler ran since the
        last call (s)."""
        longest, self._longest_heartbeat_wait_s = self._longest_heartbeat_wait_s, 0.0
        return longest

    @staticmethod
    def _count(name: str, version: int, errors: list[str], received: float) -> None:
        metrics.REQUESTS.labels(name, str(version)).inc()
        for error in errors:
            metrics.ERRORS.labels(name, error).inc()
        metrics.TOTAL_TIME_MS.labels(name).observe((time.perf_counter() - received) * 1000)

    # --- ApiVersions and SASL -------------------------------------------------------------
    async def _session(
        self, conn: _Connection, header: RequestHeader, body: Any, received: float
    ) -> bytes:
        key, version = header.api_key, header.api_version
        name = SESSION_APIS[key][0]
        response_class = load_response_schema(key, version)
        if key == API_VERSIONS_KEY:
            conn.client_software_version = software_version_of(body) or conn.client_software_version
            data: dict[str, Any] = {
                "error_code": 0,
                "api_keys": [
                    {"api_key": k, "min_version": low, "max_version": high}
                    for k, (low, high) in sorted(self.served(conn.listener.role).items())
                ],
                **await asyncio.get_running_loop().run_in_executor(
                    conn.door.pool, api_versions_features, version
                ),
            }
        elif key == SASL_HANDSHAKE_KEY:
            data = self._handshake(conn, body.mechanism)
            conn.raw_sasl_token_next = version == 0 and data["error_code"] == 0
        else:
            data = await self._authenticate(conn, body.auth_bytes)
        response = from_data(response_class, data)
        self._count(name, version, [ErrorCode(data["error_code"]).name.upper()], received)
        encoded = encode_response(key, version, header.correlation_id, encode_body(response))
        if key == SASL_AUTHENTICATE_KEY and data["error_code"] != 0:
            raise _Close("SASL authentication failed", encoded)  # answered, then closed
        return encoded

    def _handshake(self, conn: _Connection, mechanism: str) -> dict[str, Any]:
        mechanisms = list(MECHANISMS) if conn.listener.sasl else []
        if not conn.listener.sasl or conn.principal is not None:
            return {"error_code": int(ErrorCode.illegal_sasl_state), "mechanisms": mechanisms}
        if mechanism not in MECHANISMS:
            return {
                "error_code": int(ErrorCode.unsupported_sasl_mechanism),
                "mechanisms": mechanisms,
            }
        conn.handshake_done = True
        conn.mechanism = mechanism
        return {"error_code": 0, "mechanisms": mechanisms}

    async def _authenticate(self, conn: _Connection, auth_bytes: bytes) -> dict[str, Any]:
        if not conn.handshake_done or conn.principal is not None:
            return {
                "error_code": int(ErrorCode.illegal_sasl_state),
                "error_message": "SaslAuthenticate before SaslHandshake, or after success.",
                "auth_bytes": b"",
            }
        if is_scram(conn.mechanism):
            return await scram_authenticate(conn, bytes(auth_bytes))
        loop = asyncio.get_running_loop()
        name = plain_user(bytes(auth_bytes))
        door = CONTROLLER_DOOR if conn.listener.controller else CLIENT_DOOR
        try:
            wait_s = FAILED_LOGINS.retry_after_s(door=door, host=conn.host, name=name)
            if wait_s > 0:
                raise SaslFailed(
                    f"Too many failed authentications from this address; retry in {wait_s:.0f} s."
                )
            principal = await loop.run_in_executor(
                conn.door.pool, authenticate_plain_on_pool, auth_bytes
            )
        except SaslFailed as error:
            metrics.AUTHENTICATIONS.labels(conn.listener.listener_name, "failed").inc()
            FAILED_LOGINS.failed(host=conn.host, name=name, door=door, why=str(error))
            # Kafka's connection.failed.authentication.delay.ms, on the loop: no thread held.
            await asyncio.sleep(FAILED_AUTHENTICATION_DELAY_S)
            return {
                "error_code": int(ErrorCode.sasl_authentication_failed),
                "error_message": str(error),
                "auth_bytes": b"",
            }
        except Exception as error:
            if not is_unavailable(error):
                raise
            # Neither refused nor let in: a failed authentication is fatal to Kafka's clients,
            # a closed connection is retried.
            raise _Close(f"{STORE} ({error})") from None
        conn.principal = principal
        metrics.AUTHENTICATIONS.labels(conn.listener.listener_name, "successful").inc()
        return {"error_code": 0, "error_message": None, "auth_bytes": b""}

    async def _raw_sasl_token(self, conn: _Connection, token: bytes) -> bytes:
        """SaslHandshake v0's tokens, raw: raw frames answer them (PLAIN's success empty, SCRAM's
        rounds the server's messages); a failure is logged and closes (v0 carries no error)."""
        answer = await self._authenticate(conn, token)
        conn.raw_sasl_token_next = answer["error_code"] == 0 and conn.principal is None
        if answer["error_code"] != 0:
            raise _Close(f"SASL authentication failed: {answer['error_message']}")
        return len(answer["auth_bytes"]).to_bytes(4, "big") + bytes(answer["auth_bytes"])

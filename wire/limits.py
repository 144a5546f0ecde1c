"""What one connection may send the listener: frame sizes before and after authentication,
the time it has to send them, request memory per door, connections per address, and the item
bound of a request's leading list (checked before anything of it is decoded)."""

from __future__ import annotations

import dataclasses

from wire.apis.base import WireApi
from wire.protocol import (
    DEFAULT_MAX_FRAME_BYTES,
    InvalidRequest,
    RequestHeader,
    frame_size,
    leading_items,
)


class TooLargeBeforeAuthentication(InvalidRequest):
    """A frame over `sasl_max_receive_bytes` from a connection not authenticated yet."""


def unauthenticated_frame_size(prefix: bytes, limit: int) -> int:
    announced = int.from_bytes(prefix, "big", signed=True)
    if announced > limit:
        raise TooLargeBeforeAuthentication(
            f"a frame of {announced} bytes is larger than sasl.server.max.receive.size ({limit})"
        )
    return frame_size(prefix, limit)


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES  # Kafka's socket.request.max.bytes
    # What an unauthenticated SASL connection may send in one frame, before and during its
    # authentication (Kafka's sasl.server.max.receive.size, CVE-2022-34917): a peer that has
    # proved nothing announces no 100 MiB frame.
    sasl_max_receive_bytes: int = 512 * 1024
    idle_timeout_s: float = 600.0  # Kafka's connections.max.idle.ms
    authentication_timeout_s: float = 10.0  # a SASL connection's time to authenticate
    # The bytes of requests read and not yet answered, all client connections together
    # (Kafka's queued.max.request.bytes), charged as they arrive; one connection holds one
    # request at a time (muted meanwhile). Controller listeners have a pool of their own.
    queued_max_request_bytes: int = 100 * 1024 * 1024
    controller_queued_max_request_bytes: int = 100 * 1024 * 1024
    # The longest a connection waits for request memory before it is closed, and the longest
    # a frame may take to arrive once its size is read.
    memory_wait_timeout_s: float = 10.0
    frame_timeout_s: float = 30.0
    max_connections_per_ip: int = 1000  # Kafka's max.connections.per.ip, per door
    max_connections: int = 10000  # Kafka's max.connections, per door
    threads: int = 8  # the client door's handlers (Django and the controller run there)
    controller_threads: int = 8  # the controller door's, which client load never takes
    # The controller door's BrokerHeartbeat and BrokerRegistration: a pool no Fetch takes.
    heartbeat_threads: int = 4
    # A broker's heartbeats and registrations per second on the controller door past which
    # they are answered with throttle_time_ms and the connection muted for it
    # (CP_HEARTBEAT_RATE_LIMIT, controlplane.server.peer_limits); 0: no limit.
    heartbeat_rate: float = 20.0
    heartbeat_burst: float = 40.0
    # Raft Fetches parked at once per principal and address (CP_LONG_POLL_MAX_PER_PEER); one
    # more is answered at once with what there is. 0: no limit.
    max_long_polls_per_peer: int = 1000


class TooManyItems(InvalidRequest):
    """A request whose leading list is longer than its API allows: refused unread."""


def within_item_bound(api: WireApi, header: RequestHeader, frame: bytes) -> None:
    """A request over its API's item bound closes the connection, as a frame over
    socket.request.max.bytes does, before anything of its list is decoded: decoding is what
    costs memory (tens of bytes on the wire become a Python object each)."""
    if api.max_items is None:
        return
    items = leading_items(header, frame)
    if items > api.max_items:
        raise TooManyItems(
            f"{api.name} v{header.api_version} with {items} items: at most {api.max_items} "
            "per request"
        )

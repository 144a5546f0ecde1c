"""The listener's two doors, each with resources of its own, as a KRaft controller has a socket
server of its own beside a broker's: controller listeners (brokers: the Raft Fetch, their
lifecycle, Envelopes) and client listeners (admin clients, ANONYMOUS among them) never share
request memory, handler threads or connection counts, so no number of client connections,
authenticated or not, can starve a broker's heartbeat or fetch.

Within the controller door, a broker's lifeline (BrokerHeartbeat, BrokerRegistration) has a pool
of its own, as Kafka's controller answers heartbeats from its event queue whatever the fetch
load: a commit wakes every broker's Raft Fetch at once, and while one of them encodes the commit
the others wait for it, each holding a thread of the door's pool; the heartbeats never queue
behind them (nor behind AlterPartition, Envelopes or the admin APIs). There a broker has one
heartbeat at a time, and a rate (controlplane.server.peer_limits): a broker flooding heartbeats
from many connections takes one thread of the pool, never the others' (wire.server answers it
with throttle_time_ms and mutes its connection, as Kafka's request quota does). A door's parked
long-polls are capped per principal and address."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections import Counter as Tally

from controlplane.server.peer_limits import HeartbeatLanes, ParkedLongPolls
from wire.listeners import CLIENT, CONTROLLER, ROLES
from wire.memory import RequestMemory

# The APIs answered in the controller door's heartbeat pool.
HEARTBEAT_APIS = frozenset({"BrokerHeartbeat", "BrokerRegistration"})


@dataclasses.dataclass
class Door:
    role: str
    memory: RequestMemory
    pool: concurrent.futures.ThreadPoolExecutor
    max_connections: int
    max_connections_per_ip: int
    # The pool of HEARTBEAT_APIS (the controller door's); None: `pool` answers them too.
    heartbeats: concurrent.futures.ThreadPoolExecutor | None = None
    heartbeat_lanes: HeartbeatLanes = dataclasses.field(
        default_factory=lambda: HeartbeatLanes(0, 0)
    )
    parked: ParkedLongPolls = dataclasses.field(default_factory=lambda: ParkedLongPolls(0))
    open: int = 0
    per_ip: Tally[str] = dataclasses.field(default_factory=Tally)

    def pool_for(self, api_name: str) -> concurrent.futures.ThreadPoolExecutor:
        """The pool that runs a request of `api_name` (its handler and its encoding)."""
        if self.heartbeats is not None and api_name in HEARTBEAT_APIS:
            return self.heartbeats
        return self.pool

    def shutdown(self) -> None:
        for pool in (self.pool, self.heartbeats):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def refusal(self, host: str) -> str | None:
        """Why a new connection from `host` is refused (Kafka's max.connections and
        max.connections.per.ip, counted per door), or None."""
        if self.open >= self.max_connections:
            return "max_connections"
        if self.per_ip[host] >= self.max_connections_per_ip:
            return "max_connections_per_ip"
        return None

    def opened(self, host: str) -> None:
        self.open += 1
        self.per_ip[host] += 1

    def closed(self, host: str) -> None:
        self.open -= 1
        self.per_ip[host] -= 1
        if self.per_ip[host] <= 0:
            del self.per_ip[host]


def doors_of(
    *,
    client_memory_bytes: int,
    controller_memory_bytes: int,
    client_threads: int,
    controller_threads: int,
    heartbeat_threads: int,
    memory_wait_timeout_s: float,
    max_connections: int,
    max_connections_per_ip: int,
    heartbeat_rate: float = 0.0,
    heartbeat_burst: float = 0.0,
    max_long_polls_per_peer: int = 0,
) -> dict[str, Door]:
    sizes = {CLIENT: (client_memory_bytes, client_threads)}
    sizes[CONTROLLER] = (controller_memory_bytes, controller_threads)
    assert set(sizes) == set(ROLES)
    return {
        role: Door(
            role=role,
            memory=RequestMemory(memory, wait_timeout_s=memory_wait_timeout_s),
            pool=concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix=f"kafka-{role}"),
            max_connections=max_connections,
            max_connections_per_ip=max_connections_per_ip,
            heartbeats=_heartbeat_pool(heartbeat_threads) if role == CONTROLLER else None,
            heartbeat_lanes=HeartbeatLanes(heartbeat_rate, heartbeat_burst),
            parked=ParkedLongPolls(max_long_polls_per_peer),
        )
        for role, (memory, threads) in sizes.items()
    }


def _heartbeat_pool(threads: int) -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(
        max(1, threads), thread_name_prefix=f"kafka-{CONTROLLER}-heartbeat"
    )

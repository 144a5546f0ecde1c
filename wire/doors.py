"""The listener's two doors, each with resources of its own, as a KRaft controller has a socket
server of its own beside a broker's: controller listeners (brokers: the Raft Fetch, their
lifecycle, Envelopes) and client listeners (admin clients, ANONYMOUS among them) never share
request memory, handler threads or connection counts, so no number of client connections,
authenticated or not, can starve a broker's heartbeat or fetch."""

from __future__ import annotations

import concurrent.futures
import dataclasses
from collections import Counter as Tally

from wire.listeners import CLIENT, CONTROLLER, ROLES
from wire.memory import RequestMemory


@dataclasses.dataclass
class Door:
    role: str
    memory: RequestMemory
    pool: concurrent.futures.ThreadPoolExecutor
    max_connections: int
    max_connections_per_ip: int
    open: int = 0
    per_ip: Tally[str] = dataclasses.field(default_factory=Tally)

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
    memory_wait_timeout_s: float,
    max_connections: int,
    max_connections_per_ip: int,
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
        )
        for role, (memory, threads) in sizes.items()
    }

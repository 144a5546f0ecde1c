"""A request's way to its handler on the pool, past what one peer may hold of its door
(controlplane.server.peer_limits): a broker's heartbeats in its lane, at its rate; a peer's
long-polls parked up to the door's cap."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

from controlplane.runtime.notifier import notifier
from wire import metrics
from wire.apis.base import LongPoll, WireRequest
from wire.doors import Door

Answer = bytes | LongPoll | None
Handle = Callable[[WireRequest], Answer]  # the handler and its encoding, on a pool's thread


@dataclasses.dataclass(frozen=True, slots=True)
class Peer:
    door: Door
    principal: str  # authenticated
    host: str
    listener_name: str


async def answered(peer: Peer, request: WireRequest, handle: Handle) -> Answer:
    """The handler's answer; a LongPoll waits on the loop (holding no thread) for the log to
    move, unless its principal and address have their cap of parked long-polls: then it is
    asked again at once, and answers what there is."""
    loop = asyncio.get_running_loop()
    pool = peer.door.pool
    response = await loop.run_in_executor(pool, handle, request)
    if not isinstance(response, LongPoll):
        return response
    parked = peer.door.parked
    key = (peer.principal, peer.host)
    if parked.park(key):
        try:
            await notifier.wait_async(response.generation, response.timeout_s)
        finally:
            parked.unpark(key)
    else:
        metrics.LONG_POLLS_ANSWERED_AT_ONCE.labels(peer.listener_name).inc()
    return await loop.run_in_executor(pool, handle, dataclasses.replace(request, waited=True))


async def in_heartbeat_lane(
    peer: Peer, api_name: str, request: WireRequest, handle: Handle
) -> tuple[Answer, float]:
    """A heartbeat or registration in its broker's lane (one at a time per principal and
    broker id; the next waits on the loop), counted against the broker's rate: past it,
    applied all the same and answered with throttle_time_ms, and the connection muted for
    that long after the answer (Kafka's sendResponseMaybeThrottle). The answer and the mute
    (s)."""
    lanes = peer.door.heartbeat_lanes
    key = (peer.principal, int(request.body.broker_id))
    async with lanes.turn(key):
        throttle_ms = lanes.record(key)
        if throttle_ms:
            metrics.HEARTBEATS_THROTTLED.labels(peer.listener_name).inc()
            request = dataclasses.replace(request, throttle_time_ms=throttle_ms)
        pool = peer.door.pool_for(api_name)  # heartbeats never queue behind fetches
        response = await asyncio.get_running_loop().run_in_executor(pool, handle, request)
    return response, throttle_ms / 1000

"""What the listener holds of requests, bounded as Kafka's `queued.max.request.bytes` bounds it
(its SocketServer's MemoryPool): a frame's bytes are taken from the pool before its body is
read and given back once its answer is written. A connection that finds the pool short stays
muted (nothing more of it is read) until enough is given back; one request larger than the
whole pool is still served, alone, as Kafka's non-strict pool serves it."""

from __future__ import annotations

import asyncio

from wire import metrics


class RequestMemory:
    """On the listener's event loop only."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes  # <= 0: unbounded (Kafka's -1)
        self.used_bytes = 0
        self._changed: asyncio.Condition | None = None

    def _fits(self, size: int) -> bool:
        return (
            self.limit_bytes <= 0
            or self.used_bytes == 0
            or self.used_bytes + size <= self.limit_bytes
        )

    async def take(self, size: int, listener: str) -> None:
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            if not self._fits(size):
                metrics.MEMORY_POOL_WAITS.labels(listener).inc()
                await self._changed.wait_for(lambda: self._fits(size))
            self.used_bytes += size
        metrics.MEMORY_POOL_USED.inc(size)

    async def give_back(self, size: int) -> None:
        self.used_bytes -= size
        metrics.MEMORY_POOL_USED.dec(size)
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

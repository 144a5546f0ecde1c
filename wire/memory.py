"""What the listener holds of requests, bounded as Kafka's `queued.max.request.bytes` bounds it
(its SocketServer's MemoryPool), with two differences that keep a peer who sends nothing from
starving anyone:

- the pool is charged with the bytes of a frame as they arrive, never with the size a frame
  announces (Kafka's NetworkReceive takes the announced size from the pool at once: one
  connection announcing 100 MiB and sending nothing held the whole pool);
- a connection that waits for pool memory waits at most `wait_timeout_s`, then is closed, and
  a frame must arrive whole within `frame_timeout_s` of its size.

A connection that finds the pool short stays muted (nothing more of it is read) until enough is
given back; its bytes are given back once its answer is written. Frames before authentication
are never charged to any pool: they are bounded by themselves (`sasl.server.max.receive.size`).
"""

from __future__ import annotations

import asyncio

from wire import metrics

CHUNK_BYTES = 64 * 1024  # what one read takes at most: a slow sender holds what it sent


class MemoryWaitTimedOut(Exception):
    """The pool stayed short for longer than the wait allows: the connection is closed."""


class RequestMemory:
    """On the listener's event loop only."""

    def __init__(self, limit_bytes: int, *, wait_timeout_s: float = 10.0) -> None:
        self.limit_bytes = limit_bytes  # <= 0: unbounded (Kafka's -1)
        self.wait_timeout_s = wait_timeout_s
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
                try:
                    await asyncio.wait_for(
                        self._changed.wait_for(lambda: self._fits(size)), self.wait_timeout_s
                    )
                except TimeoutError:
                    raise MemoryWaitTimedOut(
                        f"no request memory for {self.wait_timeout_s:g} s "
                        f"({self.used_bytes} of {self.limit_bytes} bytes held)"
                    ) from None
            self.used_bytes += size
        metrics.MEMORY_POOL_USED.inc(size)

    async def give_back(self, size: int) -> None:
        if size <= 0:
            return
        self.used_bytes -= size
        metrics.MEMORY_POOL_USED.dec(size)
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()


async def read_charged(
    reader: asyncio.StreamReader,
    size: int,
    memory: RequestMemory,
    listener: str,
    *,
    timeout_s: float,
) -> tuple[bytearray, int]:
    """A frame's `size` bytes, each charged to `memory` once it has arrived, all within
    `timeout_s`; answers the frame and the bytes charged (give them back when done). On any
    failure what was charged is given back."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    frame = bytearray()
    charged = 0
    try:
        while len(frame) < size:
            remaining_s = deadline - loop.time()
            if remaining_s <= 0:
                raise TimeoutError
            chunk = await asyncio.wait_for(
                reader.read(min(CHUNK_BYTES, size - len(frame))), remaining_s
            )
            if not chunk:
                raise asyncio.IncompleteReadError(bytes(frame), size)
            await memory.take(len(chunk), listener)
            charged += len(chunk)
            frame += chunk
        return frame, charged
    except BaseException:
        await memory.give_back(charged)
        raise

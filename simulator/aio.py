"""asyncio helpers the simulator's parts share: bounded polling, and cancellation that sticks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any


async def wait_until(predicate: Callable[[], bool], timeout_s: float, poll_s: float = 0.05) -> bool:
    """Poll `predicate()` until true or `timeout_s` passed; returns its last value."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(poll_s)
    return True


async def cancel_until_done(tasks: Sequence[asyncio.Task[Any]]) -> None:
    """Cancel the tasks and wait for them, cancelling again those still running: a cancel that
    arrives while httpcore holds its connection lock (an anyio shielded checkpoint) can be lost,
    and the task then goes on with its next request as if nothing happened."""
    pending = {task for task in tasks if not task.done()}
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=0.5)
    await asyncio.gather(*tasks, return_exceptions=True)

"""A metadata long-poll that waits without a thread.

The server puts a `LongPoll` in each request's environ (`ENVIRON_KEY`). A view with nothing to
answer yet calls `defer`: it answers at once what it has now (the empty answer), and the server,
instead of sending it, waits on the event loop for the log to grow (or the wait to end), then
runs `refetch` in the pool that answered the request (the internal listener's fetch pool, never
the heartbeats') for the body to send, under the first answer's headers: `refetch` answers in
the same wire form (media type, content encoding). A principal (`owner`) and address past the
listener's cap of parked long-polls get the empty answer at once instead. Under another WSGI
server (or the test client) there is no `LongPoll` and the view waits in its thread, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

ENVIRON_KEY = "controlplane.long_poll"


@dataclasses.dataclass(slots=True)
class LongPoll:
    generation: int = -1
    timeout_s: float = 0.0
    refetch: Callable[[], bytes] | None = None
    owner: str = ""  # the principal asking: its parked long-polls per address are capped

    def defer(
        self,
        *,
        generation: int,
        timeout_s: float,
        refetch: Callable[[], bytes],
        owner: str = "",
    ) -> None:
        self.generation, self.timeout_s, self.refetch = generation, timeout_s, refetch
        self.owner = owner

    @property
    def deferred(self) -> bool:
        return self.refetch is not None

"""A standby controller's loop: follow the metadata log until the lease is this one's.

The standby keeps its image one commit behind the log (controlplane.runtime.standby), so that
taking over applies only what it has not seen, and looks for a killed holder's ended session
(controlplane.runtime.presence) so that it takes over at once instead of waiting out the lease.
"""

from __future__ import annotations

import logging
import threading
import time

from django.db import DatabaseError, close_old_connections

from controlplane.controller.errors import ApiError
from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.lease import Lease
from controlplane.runtime.notifier import notifier
from controlplane.runtime.presence import POLL_S as PRESENCE_POLL_S
from controlplane.runtime.presence import Presence
from controlplane.runtime.presence import supported as presence_supported
from controlplane.runtime.standby import FOLLOW_MAX_RECORDS

logger = logging.getLogger("controlplane.controller")


def wait_until_active(
    runtime: ControllerRuntime, stop: threading.Event, presence: Presence | None = None
) -> Lease:
    """Standby: follow the log and try to take the lease until it is ours. Each commit's notice
    (controlplane.runtime.notifier) wakes it, so its image trails the log by one commit; without
    a notice (none published, one lost, no Redis) it looks again within a quarter lease, and it
    reads on at once while a round finds more records than it replays.

    With a `presence` (controlplane.runtime.presence), it opens its own named session and looks
    for the lease holder's every `presence.POLL_S`: a holder it saw present whose session is
    gone (a controller killed outright) has its lease taken over at once, not waited out."""
    idle_s = min(1.0, runtime.lease_ms / 4000)
    watching = presence is not None and presence_supported()
    poll_s = min(idle_s, PRESENCE_POLL_S) if watching else idle_s
    next_round = 0.0
    while not stop.is_set():
        generation = notifier.generation
        behind = False
        try:
            close_old_connections()
            dead = presence.holder_gone() if presence is not None and watching else None
            if dead is not None:
                logger.warning(
                    "controller %s (epoch %d) is gone (its session ended): taking over",
                    dead[0],
                    dead[1],
                )
            if dead is not None or time.monotonic() >= next_round:
                behind = runtime.follow_log() >= FOLLOW_MAX_RECORDS
                next_round = 0.0 if behind else time.monotonic() + idle_s
                return runtime.ensure_active(take_over_from=dead)
        except ApiError:
            pass
        except DatabaseError:
            logger.warning("standby controller cannot reach the database", exc_info=True)
        if not behind and notifier.wait(generation, poll_s):
            next_round = 0.0  # the log grew: follow it now
    raise SystemExit(0)

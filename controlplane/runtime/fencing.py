"""The fencing rule's voice: what the controller decided about lapsed brokers, said loudly.

The rule itself is the core's (`controlplane.controller.brokers.fencing.fence_stale_brokers`);
the controller's timer hands each FenceStaleBrokers answer to `FencingHoldOffWatch`, which keeps
when a hold-off began (the bound counts from it), records it for the web nodes' gauge and tells
`FENCING_LISTENERS` (the audit trail registers itself).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from controlplane.runtime.plugins import add_once
from controlplane.runtime.sessions import SessionStore

logger = logging.getLogger("controlplane.controller")

Response = dict[str, Any]

# Told of the fencing rule's decisions (FencingHoldOffWatch: "FencingHeldOff", "FencingResumed",
# "FencingHoldOffExpired", "StaleBrokersFenced") with the brokers, the unfenced count and why
# (the audit trail registers itself).
FENCING_LISTENERS: list[Callable[[str, list[int], int, str], None]] = []


def register_fencing_listener(listener: Callable[[str, list[int], int, str], None]) -> None:
    add_once(FENCING_LISTENERS, listener)


class FencingHoldOffWatch:
    """Makes the fencing rule's decisions loud: a warning, the session store's record of a
    hold-off (the web nodes' `kafka_controller_fencing_held_off_brokers` gauge reads it) and an
    audit event each (`FENCING_LISTENERS`): `FencingHeldOff` when a hold-off begins (and why),
    `FencingResumed` when the controller hears again and fences who is still silent,
    `FencingHoldOffExpired` when a hold-off lasted `CP_FENCING_HOLD_OFF_MAX_MS` and the silent
    are fenced anyway, and `StaleBrokersFenced` for every other fencing of lapsed brokers.

    `since_ms` (when the hold-off under way began, 0 when none) is what the rule's bound counts
    from; the controller passes it to the core with every FenceStaleBrokers."""

    REPEAT_WARNING_MS = 10_000

    def __init__(self, sessions: SessionStore) -> None:
        self.sessions = sessions
        self.held_off: list[int] = []
        self.since_ms = 0
        self._warned_ms = 0

    def observe(self, response: Response, now: int) -> None:
        held_off = [int(b) for b in response.get("held_off") or []]
        fenced = [int(b) for b in response.get("fenced_brokers") or []]
        unfenced = int(response.get("unfenced", 0))
        reason = str(response.get("hold_off_reason") or "")
        if held_off and not self.since_ms:
            self.since_ms = self._warned_ms = now
            logger.warning(
                "not fencing %d of %d unfenced brokers whose session lapsed (brokers %s): %s",
                len(held_off),
                unfenced,
                held_off,
                reason,
            )
            self._announce("FencingHeldOff", held_off, unfenced, reason)
        elif held_off and now - self._warned_ms >= self.REPEAT_WARNING_MS:
            self._warned_ms = now
            logger.warning(
                "still holding off fencing %d of %d brokers after %d ms: %s",
                len(held_off),
                unfenced,
                now - self.since_ms,
                reason,
            )
        elif not held_off and self.since_ms:
            expired = bool(response.get("hold_off_expired"))
            what = "FencingHoldOffExpired" if expired else "FencingResumed"
            logger.warning(
                "%s after %d ms: fenced brokers %s (%s)",
                "hold-off expired" if expired else "fencing as usual again",
                now - self.since_ms,
                fenced,
                reason or "the controller hears brokers again",
            )
            self._announce(what, fenced or self.held_off, unfenced, reason)
            self.since_ms = 0
        elif fenced:
            self._announce(
                "StaleBrokersFenced", fenced, unfenced, "session lapsed; other brokers are heard"
            )
        if held_off != self.held_off:
            self.held_off = held_off
            try:
                self.sessions.set_fencing_hold_off(self.held_off, self.since_ms)
            except Exception:  # the gauge only: the decision was the controller's alone
                logger.warning("could not record the fencing hold-off", exc_info=True)

    def _announce(self, what: str, brokers: list[int], unfenced: int, reason: str) -> None:
        for listener in FENCING_LISTENERS:
            try:
                listener(what, list(brokers), unfenced, reason)
            except Exception:
                logger.exception("fencing listener failed")

"""Request ids belong to their principal.

A request id (`X-Request-ID`) makes a retry apply once: the controller remembers a write by
(principal, request id) and answers that principal's retries from it. The id is the client's
choice, so another principal may send the same one (a client library's counter, a copied or a
guessed id): that is a request of its own, applied as usual, and never answered with the other
principal's response (an HMAC withheld or not, another's token id, times and names are not
theirs to learn). For an Envelope (KIP-590) the principal is the original client's, not the
forwarding broker's: a client's retry through any broker is one write, two clients' requests
forwarded with one id are two.

Such a reuse is worth knowing about (a client that guesses ids, or two tools sharing a
generator), so the controller finds the collisions of each batch and, once the batch committed,
logs them and tells `COLLISION_LISTENERS` (the audit trail's `RequestIdCollision` event).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Sequence

from controlplane.runtime.conversation import (
    ControllerEvent,
    Forwarding,
    RequestContext,
    RequestKey,
)
from controlplane.runtime.plugins import add_once

logger = logging.getLogger("controlplane.controller")


@dataclasses.dataclass(frozen=True, slots=True)
class RequestIdCollision:
    """A principal's new request whose id other principals used before it."""

    context: RequestContext  # the request that reused the id
    api: str  # its API (the RPC the client called)
    # The principals that used the id before it: those of stored writes (by name), then those
    # earlier in the batch.
    holders: tuple[str, ...]
    # The broker that redirected the request in an Envelope, as the audit envelope names it.
    forwarding: Forwarding | None = None


# Told of each committed batch's collisions (the audit trail registers itself, audit.apps).
COLLISION_LISTENERS: list[Callable[[Sequence[RequestIdCollision]], None]] = []


def register_collision_listener(
    listener: Callable[[Sequence[RequestIdCollision]], None],
) -> None:
    add_once(COLLISION_LISTENERS, listener)


def request_id_collisions(
    events: Sequence[ControllerEvent], applied: Collection[RequestKey]
) -> list[RequestIdCollision]:
    """The batch's requests whose id another principal used first: in a write the log holds
    (`applied`, every principal's, from the batch's one lookup) or earlier in the batch. A
    principal's own retry or copy is no collision; each (principal, id) collides once a batch."""
    holders: dict[str, list[str]] = {}
    for principal, request_id in sorted(applied):
        holders.setdefault(request_id, []).append(principal)
    found: list[RequestIdCollision] = []
    for event in events:
        if not event.remembered:
            continue
        context, audit = event.context, event.audit
        used = holders.setdefault(context.request_id, [])
        if context.principal in used:
            continue  # its own retry, or a copy of its own earlier in the batch
        if used:
            found.append(
                RequestIdCollision(
                    context,
                    event.api if audit is None else audit.rpc,
                    tuple(used),
                    None if audit is None else audit.forwarding,
                )
            )
        used.append(context.principal)
    return found


def collisions_announce(collisions: Sequence[RequestIdCollision]) -> None:
    """Log the committed batch's collisions and tell the listeners (never fails the batch:
    its writes are committed and answered whatever becomes of the notice)."""
    if not collisions:
        return
    for collision in collisions:
        logger.warning(
            "request id %r of %s's %s was used before by %s: applied as a request of its own",
            collision.context.request_id,
            collision.context.principal,
            collision.api,
            ", ".join(collision.holders),
        )
    for listener in COLLISION_LISTENERS:
        try:
            listener(collisions)
        except Exception:
            logger.exception("request id collision listener failed")

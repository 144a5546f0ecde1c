"""The request channel to the active controller: a Redis list in, one reply list per request out.

Admin writes are RPCs that wait for the controller's answer. Sent as Celery tasks, each one
cost the controller's single consumer loop several Redis round trips of bookkeeping (delivery,
unacked set, ack) plus a result-backend store and publish, and reached it one at a time, so
events could not share a commit. Here a web node appends the event to one list and waits on its
own reply key; the active controller takes every waiting event at once (one BLPOP, one LPOP of
the rest), handles them as one batch with one commit, and pipelines the replies. Background
work (sweeps, beat jobs, AlterReplicaState application) stays on Celery.

Delivery is at most once, as Celery's early ack was: events taken by a controller that dies
before answering are lost, and their senders retry with the same request id, which applies once.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import redis

logger = logging.getLogger("controlplane.controller")

# Key names under the deployment's key prefix (`CP_REDIS_KEY_PREFIX`, `cp:` by default).
REQUESTS = "controller:requests"
REPLY = "controller:reply:"
REPLY_TTL_S = 60  # an answer nobody waits for any more (its sender gave up) expires
MAX_BATCH = 500
IDLE_WAIT_S = 1

Event = dict[str, Any]
Response = dict[str, Any]


def _encode(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _decode(raw: bytes) -> Event | None:
    try:
        event = json.loads(raw)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        logger.error("controller request channel: dropped an undecodable event")
        return None
    return event


class ControllerChannel:
    """The web side: send one event, wait for its answer (None when none came in time)."""

    def __init__(self, url: str, *, longest_wait_s: float, key_prefix: str) -> None:
        # BLPOP holds a connection while it waits: the pool grows with the waiting threads.
        self.redis = redis.Redis.from_url(
            url, socket_timeout=longest_wait_s + 5, health_check_interval=30
        )
        self.requests_key = key_prefix + REQUESTS
        self.reply_prefix = key_prefix + REPLY

    def request(self, event: Event, timeout_ms: int) -> Response | None:
        reply_key = self.reply_prefix + uuid.uuid4().hex
        # `queued_ms`: the controller measures how long events wait for it (its ingress lag).
        queued = {**event, "reply_to": reply_key, "queued_ms": int(time.time() * 1000)}
        self.redis.rpush(self.requests_key, _encode(queued))
        answered = self.redis.blpop([reply_key], timeout=max(timeout_ms, 1) / 1000)
        if answered is None:
            return None
        response: Response = json.loads(answered[1])
        return response


class ChannelConsumer:
    """The active controller's side: take what waits, handle it as one batch, answer each."""

    def __init__(
        self,
        url: str,
        handle_batch: Callable[[Sequence[Event]], list[Response]],
        *,
        key_prefix: str,
        on_failure: Callable[[], None] = lambda: None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        self.redis = redis.Redis.from_url(url, socket_timeout=IDLE_WAIT_S + 30)
        self.requests_key = key_prefix + REQUESTS
        self.reply_prefix = key_prefix + REPLY
        self.handle_batch = handle_batch
        self.on_failure = on_failure
        self.max_batch = max_batch
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.serve_once()
            except redis.RedisError:
                logger.warning("controller request channel: Redis unavailable", exc_info=True)
                self.stopped.wait(0.5)

    def serve_once(self, wait_s: float = IDLE_WAIT_S) -> int:
        """Handle one batch of waiting events; returns how many (0 when none came)."""
        first = self.redis.blpop([self.requests_key], timeout=wait_s)
        if first is None:
            return 0
        raw = [first[1], *(self.redis.lpop(self.requests_key, self.max_batch - 1) or [])]
        events = [event for event in map(_decode, raw) if event is not None]
        try:
            responses = self.handle_batch(events)
        except Exception:  # nothing is answered: the senders retry with their request ids
            logger.exception("controller batch of %d event(s) failed", len(events))
            self.on_failure()
            return len(events)
        replies = self.redis.pipeline(transaction=False)
        for event, response in zip(events, responses, strict=True):
            reply_key = event.get("reply_to")
            if isinstance(reply_key, str) and reply_key.startswith(self.reply_prefix):
                replies.rpush(reply_key, _encode(response))
                replies.expire(reply_key, REPLY_TTL_S)
        replies.execute()
        return len(events)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="controller-channel", daemon=True)
        thread.start()
        return thread

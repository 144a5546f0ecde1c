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
A sender does not wait out its whole attempt for an answer a dead controller took with it: each
controller that starts serving the channel writes a token of its own (`controller:serving`),
and a sender still waiting after `TAKEOVER_CHECK_S` looks at it; when another controller serves
the channel than when it sent, it gives the new one a moment to answer (the event may still have
been waiting in the list) and then gives up the attempt, so that its retry reaches the new
controller at once instead of after `ATTEMPT_TIMEOUT_MS`, as a Kafka broker resends to a new
controller once its connection to the old one broke.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent

logger = logging.getLogger("controlplane.controller")

# Key names under the deployment's key prefix (`CP_REDIS_KEY_PREFIX`, `cp:` by default).
REQUESTS = "controller:requests"
REPLY = "controller:reply:"
REPLY_TTL_S = 60  # an answer nobody waits for any more (its sender gave up) expires
SERVING = "controller:serving"  # the token of the controller serving the channel now
TAKEOVER_CHECK_S = 0.25  # how long a sender waits for its answer before it looks at the token
MAX_BATCH = 500
IDLE_WAIT_S = 1


def _encode(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _decode(raw: bytes) -> tuple[ControllerEvent, str | None] | None:
    """The event and the key its answer goes to; None (logged) for anything undecodable."""
    try:
        wire = json.loads(raw)
        if not isinstance(wire, dict):
            raise ValueError("not a JSON object")
        reply_to = wire.get("reply_to")
        return ControllerEvent.from_wire(wire), reply_to if isinstance(reply_to, str) else None
    except (ValueError, KeyError, TypeError, ArithmeticError):  # anything at all may be sent
        logger.error("controller request channel: dropped an undecodable event")
        return None


class ControllerChannel:
    """The web side: send one event, wait for its answer (None when none came in time)."""

    def __init__(self, url: str, *, longest_wait_s: float, key_prefix: str) -> None:
        # BLPOP holds a connection while it waits: the pool grows with the waiting threads.
        # No retry inside redis-py: a command it resent after a broken connection may have been
        # taken the first time, and only a first connect refused proves nothing went out (the
        # caller's own attempts retry, with the request id).
        self.redis = redis.Redis.from_url(
            url,
            socket_timeout=longest_wait_s + 5,
            health_check_interval=30,
            retry=Retry(NoBackoff(), 0),
        )
        self.requests_key = key_prefix + REQUESTS
        self.reply_prefix = key_prefix + REPLY
        self.serving_key = key_prefix + SERVING

    def request(self, event: ControllerEvent, timeout_ms: int) -> ControllerAnswer | None:
        reply_key = self.reply_prefix + uuid.uuid4().hex
        # `queued_ms`: the controller measures how long events wait for it (its ingress lag).
        queued = {**event.queued(int(time.time() * 1000)).to_wire(), "reply_to": reply_key}
        try:
            sending = self.redis.pipeline(transaction=False)
            sending.get(self.serving_key)
            sending.rpush(self.requests_key, _encode(queued))
            serving, _ = sending.execute()
            answered = self._answer(reply_key, serving, time.monotonic() + timeout_ms / 1000)
        except redis.RedisError as error:
            if never_sent(error):
                raise  # Redis refused the connection: no controller can have taken the event
            # Sent, or maybe sent (Redis took the RPUSH and the connection broke before its
            # reply, or while waiting for the answer): a controller may have applied it, so it
            # is "no answer in time", never "not applied"; the retry carries the request id.
            logger.warning(
                "controller request channel broke after sending %s: %s", event.api, error
            )
            return None
        if answered is None:
            return None
        return ControllerAnswer.from_wire(json.loads(answered[1]))

    def _answer(self, reply_key: str, serving: bytes | None, deadline: float) -> Any:
        """The reply, or None at `deadline`, or soon after another controller than `serving`
        started serving the channel (the one that took the event may have died with it)."""
        while (left := deadline - time.monotonic()) > 0:
            answered = self.redis.blpop([reply_key], timeout=_wait_s(left))
            if answered is not None:
                return answered
            if self.redis.get(self.serving_key) != serving:
                left = deadline - time.monotonic()
                return self.redis.blpop([reply_key], timeout=_wait_s(left)) if left > 0 else None
        return None


def _wait_s(left_s: float) -> float:
    """One BLPOP's timeout: at most `TAKEOVER_CHECK_S`, never 0 (which would block forever)."""
    return max(min(left_s, TAKEOVER_CHECK_S), 0.001)


def never_sent(error: redis.RedisError) -> bool:
    """Whether `error` is Redis refusing the connection itself, before any command went out
    (redis-py's message for a failed connect: "Error 111 connecting to host:port. ...")."""
    return isinstance(error, redis.ConnectionError) and " connecting to " in str(error)


class BatchHandler(Protocol):
    """The controller's batch: with `on_logged`, some answers come as soon as the log holds
    the batch, by their index in it (the rest, and those again, in the list it returns)."""

    def __call__(
        self,
        events: Sequence[ControllerEvent],
        on_logged: Callable[[Mapping[int, ControllerAnswer]], None] | None = None,
    ) -> list[ControllerAnswer]: ...


class ChannelConsumer:
    """The active controller's side: take what waits, handle it as one batch, answer each."""

    def __init__(
        self,
        url: str,
        handle_batch: BatchHandler,
        *,
        key_prefix: str,
        on_failure: Callable[[], None] = lambda: None,
        max_batch: int = MAX_BATCH,
    ) -> None:
        self.redis = redis.Redis.from_url(url, socket_timeout=IDLE_WAIT_S + 30)
        self.requests_key = key_prefix + REQUESTS
        self.reply_prefix = key_prefix + REPLY
        self.serving_key = key_prefix + SERVING
        self.handle_batch = handle_batch
        self.on_failure = on_failure
        self.max_batch = max_batch
        self.stopped = threading.Event()
        self.announced = False

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.serve_once()
            except redis.RedisError:
                logger.warning("controller request channel: Redis unavailable", exc_info=True)
                self.stopped.wait(0.5)

    def announce(self) -> None:
        """This controller serves the channel from now on: senders waiting for an answer from
        another one give up their attempt and retry (see the module's docstring)."""
        self.redis.set(self.serving_key, uuid.uuid4().hex)
        self.announced = True

    def serve_once(self, wait_s: float = IDLE_WAIT_S) -> int:
        """Handle one batch of waiting events; returns how many (0 when none came)."""
        if not self.announced:
            self.announce()
        first = self.redis.blpop([self.requests_key], timeout=wait_s)
        if first is None:
            return 0
        raw = [first[1], *(self.redis.lpop(self.requests_key, self.max_batch - 1) or [])]
        decoded = [taken for taken in map(_decode, raw) if taken is not None]
        answered: set[int] = set()

        def on_logged(early: Mapping[int, ControllerAnswer]) -> None:
            self._reply({i: (decoded[i][1], answer) for i, answer in early.items()})
            answered.update(early)

        try:
            answers = self.handle_batch([event for event, _ in decoded], on_logged)
        except Exception:  # nothing is answered: the senders retry with their request ids
            logger.exception("controller batch of %d event(s) failed", len(decoded))
            self.on_failure()
            return len(decoded)
        self._reply(
            {
                i: (reply_key, answer)
                for i, ((_, reply_key), answer) in enumerate(zip(decoded, answers, strict=True))
                if i not in answered
            }
        )
        return len(decoded)

    def _reply(self, answers: Mapping[int, tuple[str | None, ControllerAnswer]]) -> None:
        replies = self.redis.pipeline(transaction=False)
        for reply_key, answer in answers.values():
            if reply_key is not None and reply_key.startswith(self.reply_prefix):
                replies.rpush(reply_key, _encode(answer.to_wire()))
                replies.expire(reply_key, REPLY_TTL_S)
        replies.execute()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="controller-channel", daemon=True)
        thread.start()
        return thread

"""The controller conversation, typed: one `ControllerEvent` in, one `ControllerAnswer` out.

Every path to the active controller carries these two and nothing else: the embedded call, the
request channel (Redis) and the Celery queue (`to_wire` / `from_wire` give their JSON), and the
controller's own timer. What the audit trail needs travels beside them, explicitly: out, on the
event (`AuditEnvelope`, from the caller's `RequestTrail`); back, on the answer (`offsets`,
`audited`, `notes`), never mixed into the response a client gets.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from controlplane.controller.dispatch import STATE_IDEMPOTENT_APIS
from controlplane.controller.errors import ApiError, Errors

CONTROLLER_PRINCIPAL = "User:controller"
# What the controller remembers a write by: request ids belong to their principal, so another
# principal's request with the same id is a request of its own (see controlplane.runtime.
# request_ids). For an Envelope the principal is the original client's, not the broker's.
RequestKey = tuple[str, str]  # (principal, request id)
SECRET_RESPONSE_FIELDS = frozenset({"hmac"})


@dataclasses.dataclass(frozen=True, slots=True)
class RequestContext:
    """Who asked: kept on every record and audit event. `trail`, when the request is an audited
    admin RPC, is where the caller's audit facts go and come back (never compared or sent)."""

    principal: str = CONTROLLER_PRINCIPAL
    client_id: str = ""
    client_host: str = ""
    request_id: str = ""
    trail: RequestTrail | None = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def key(self) -> RequestKey:
        return (self.principal, self.request_id)


@dataclasses.dataclass(frozen=True, slots=True)
class Forwarding:
    """The broker that redirected a request in an Envelope (KIP-590)."""

    principal: str
    host: str
    broker_id: int | None = None
    # Forwarded in Kafka's protocol (a broker's Envelope on a controller listener), whose
    # client reads through the brokers; the REST Envelope's shares the REST API's tables.
    kafka_protocol: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class AuditEnvelope:
    """What the controller needs, beside the event's context, to write the request's audit row
    in the commit of its records: so a web node that dies after the commit cannot lose it."""

    rpc: str  # the RPC the client called
    started_ms: int
    forwarding: Forwarding | None = None
    # Answer items the sending node gave without the controller (refused before the call), by
    # answer key: the audit row names the whole answer the client got.
    refused: Mapping[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        forwarding = self.forwarding
        return {
            "rpc": self.rpc,
            "started_ms": self.started_ms,
            "forwarding": None if forwarding is None else dataclasses.asdict(forwarding),
            "refused": dict(self.refused),
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> AuditEnvelope:
        forwarding = wire.get("forwarding")
        refused = wire.get("refused")
        return cls(
            rpc=str(wire["rpc"]),
            started_ms=_int(wire["started_ms"]),
            forwarding=Forwarding(**forwarding) if isinstance(forwarding, dict) else None,
            refused=refused if isinstance(refused, dict) else {},
        )


@dataclasses.dataclass(slots=True)
class RequestTrail:
    """One admin request's audit facts, carried by its caller: the envelope out (with what the
    handler refused before calling the controller), the offsets and notes back."""

    rpc: str | None = None  # None: the controller is not asked to audit the request
    started_ms: int = 0
    forwarding: Forwarding | None = None
    refused: dict[str, list[dict[str, Any]]] = dataclasses.field(default_factory=dict)
    first_offset: int | None = None
    last_offset: int | None = None
    audited: bool = False  # the controller wrote the audit row in the commit of the records
    notes: dict[str, Any] = dataclasses.field(default_factory=dict)
    ahead_of_tables: bool = False  # an answer came before the tables followed the log

    def refuse(self, *, answer_key: str, items: list[dict[str, Any]]) -> None:
        """Note answer items a handler gives without the controller (refused before the call),
        so that the audit row the controller writes in its commit names them too."""
        if items:
            self.refused.setdefault(answer_key, []).extend(items)

    def envelope(self) -> AuditEnvelope | None:
        if self.rpc is None:
            return None
        return AuditEnvelope(self.rpc, self.started_ms, self.forwarding, dict(self.refused))

    def took(self, answer: ControllerAnswer) -> None:
        """What the controller answered for the request (a request may call it more than once)."""
        self.audited = self.audited or answer.audited
        self.ahead_of_tables = self.ahead_of_tables or answer.ahead_of_tables
        self.notes.update(answer.notes)
        if answer.offsets is not None:
            first, last = answer.offsets
            self.first_offset = (
                first if self.first_offset is None else min(first, self.first_offset)
            )
            self.last_offset = last if self.last_offset is None else max(last, self.last_offset)


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerEvent:
    """One request to the active controller."""

    api: str
    payload: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    context: RequestContext = RequestContext()
    deadline_ms: int | None = None  # answered REQUEST_TIMED_OUT when taken off the queue later
    sent_ms: int | None = None
    # When it was queued for the controller (channel or batcher): its ingress lag.
    queued_ms: int | None = None
    audit: AuditEnvelope | None = None  # None: not an audited admin request

    @property
    def remembered(self) -> bool:
        """Whether the controller remembers the write by its request id: not for events that
        are evaluated afresh each time (heartbeats, the controller's timer)."""
        return bool(self.context.request_id) and self.api not in STATE_IDEMPOTENT_APIS

    @property
    def answered_once_logged(self) -> bool:
        """A write a broker forwarded in Kafka's protocol (KIP-590): answered once the log
        holds it, as Kafka's controller answers once its quorum committed; its client reads
        through the brokers, which follow the log, not the state tables."""
        forwarding = None if self.audit is None else self.audit.forwarding
        return forwarding is not None and forwarding.kafka_protocol

    def queued(self, now_ms: int) -> ControllerEvent:
        return dataclasses.replace(self, queued_ms=now_ms)

    def to_wire(self) -> dict[str, Any]:
        context = self.context
        return {
            "api": self.api,
            "payload": dict(self.payload),
            "principal": context.principal,
            "client_id": context.client_id,
            "client_host": context.client_host,
            "request_id": context.request_id,
            "deadline_ms": self.deadline_ms,
            "sent_ms": self.sent_ms,
            "queued_ms": self.queued_ms,
            "audit": None if self.audit is None else self.audit.to_wire(),
        }

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> ControllerEvent:
        """The event `to_wire` made; ValueError (or KeyError, TypeError) for anything else."""
        payload, audit = wire.get("payload") or {}, wire.get("audit")
        if not isinstance(payload, dict):
            raise ValueError("payload: expected a JSON object")
        return cls(
            api=str(wire["api"]),
            payload=payload,
            context=RequestContext(
                principal=str(wire.get("principal") or CONTROLLER_PRINCIPAL),
                client_id=str(wire.get("client_id") or ""),
                client_host=str(wire.get("client_host") or ""),
                request_id=str(wire.get("request_id") or ""),
            ),
            deadline_ms=_int_or_none(wire.get("deadline_ms")),
            sent_ms=_int_or_none(wire.get("sent_ms")),
            queued_ms=_int_or_none(wire.get("queued_ms")),
            audit=AuditEnvelope.from_wire(audit) if isinstance(audit, dict) else None,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerAnswer:
    """The controller's answer to one event: the response the client gets (maybe a per-RPC
    error), and for the caller's audit trail the metadata offsets the event wrote, whether the
    controller audited it in that commit, and the core's notes."""

    response: dict[str, Any]
    offsets: tuple[int, int] | None = None
    audited: bool = False
    handled_ms: int | None = None  # when the controller took the event off its queue
    notes: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the core's, never answered
    # A stored answer's: the fingerprint of the request it answered (`request_fingerprint`),
    # None for one stored before fingerprints were kept. Never sent anywhere.
    fingerprint: str | None = dataclasses.field(default=None, compare=False)
    # Answered once the log held the write, before the state tables followed (a forwarded
    # write's answer): the relaying process holds its own table reads until they do
    # (controlplane.runtime.tables_barrier).
    ahead_of_tables: bool = False

    @classmethod
    def refusal(cls, error: ApiError) -> ControllerAnswer:
        return cls(error.as_fields())

    @property
    def error_code(self) -> int:
        return int(self.response.get("error_code") or 0)

    @property
    def not_controller(self) -> bool:
        """Nothing was applied: no active controller took the event."""
        return self.error_code == Errors.NOT_CONTROLLER

    @property
    def outcome_unknown(self) -> bool:
        """The controller may have applied the event (its commit's outcome is unknown, or the
        event outlived its deadline): a retry with the same request id finds out."""
        return self.error_code == Errors.REQUEST_TIMED_OUT

    def to_wire(self) -> dict[str, Any]:
        return {
            "response": self.response,
            "offsets": None if self.offsets is None else list(self.offsets),
            "audited": self.audited,
            "handled_ms": self.handled_ms,
            "notes": dict(self.notes),
            "ahead_of_tables": self.ahead_of_tables,
        }

    def storable_response(self) -> dict[str, Any]:
        """The response a retry may answer again: never a secret (a delegation token's HMAC
        is shown once; a retried create answers the token without it)."""
        if SECRET_RESPONSE_FIELDS.isdisjoint(self.response):
            return self.response
        return {k: (None if k in SECRET_RESPONSE_FIELDS else v) for k, v in self.response.items()}

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> ControllerAnswer:
        offsets, notes = wire.get("offsets"), wire.get("notes")
        return cls(
            response=dict(wire["response"]),
            offsets=(_int(offsets[0]), _int(offsets[1])) if offsets else None,
            audited=bool(wire.get("audited")),
            handled_ms=_int_or_none(wire.get("handled_ms")),
            notes=notes if isinstance(notes, dict) else {},
            ahead_of_tables=wire.get("ahead_of_tables") is True,
        )


@dataclasses.dataclass(frozen=True, slots=True)
class AppliedWrite:
    """One request's part of a commit: its records' offset range and its answer."""

    context: RequestContext
    api: str
    first_offset: int
    last_offset: int
    answer: ControllerAnswer
    # Kept by (principal, request id) so that a retry answers it instead of applying again; not
    # for events that are evaluated afresh each time (heartbeats, the controller's timer).
    remembered: bool = True
    event_index: int = -1  # its place in the controller's batch
    # What the sending node told the controller to audit it with; None: not an audited request.
    audit: AuditEnvelope | None = None
    payload: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the event's request


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"expected an integer, not {value!r}"[:80])


def request_fingerprint(api: str, payload: Mapping[str, Any]) -> str:
    """What a request asked, as a digest: a principal's retry with the same request id asks
    the same (its stored answer is the answer), another body with that id does not (refused:
    the Idempotency-Key draft's rule)."""
    text = json.dumps([api, payload], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


REQUEST_ID_REUSED = "request_id_reused"  # the note of a refusal of a reused request id

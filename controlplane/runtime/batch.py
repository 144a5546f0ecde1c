"""One batch of events: the records they write over the image, and an answer each.

The active controller (controlplane.runtime.controller) takes whatever events wait, runs them
here against one delta, commits that delta in one transaction and only then applies it to its
image. A request id is answered once: a copy earlier in the batch or a write the log holds
already answers what it answered (another body under the same id is refused); an event that
outlived its deadline is refused unrun; a log without metadata.version gets Kafka's bootstrap
features first, in the first commit that writes anything.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from controlplane.controller.dispatch import ReplayFailed, run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.features import bootstrap_records
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import Record
from controlplane.runtime.conversation import (
    REQUEST_ID_REUSED,
    AppliedWrite,
    ControllerAnswer,
    ControllerEvent,
    RequestKey,
    request_fingerprint,
)
from controlplane.runtime.metadata_log import COMMIT_AUDIT, DuplicateWrite

refusal = ControllerAnswer.refusal


def run_events(
    image: MetadataImage,
    events: Sequence[ControllerEvent],
    env: ControllerEnv,
    *,
    now: int,
    prior: dict[RequestKey, ControllerAnswer],
    failed: dict[int, ControllerAnswer],
) -> tuple[MetadataDelta, list[int], list[ControllerAnswer], list[AppliedWrite]]:
    """The batch's delta over `image`, the brokers it heard from, an answer per event and the
    writes to commit; the events in `failed` answer what is there and run no more."""
    bootstrap = bootstrap_records(image)
    ran = _run_events_after(
        image, bootstrap=[], events=events, env=env, now=now, prior=prior, failed=failed
    )
    if not bootstrap or not ran[0].replayed:
        return ran
    # The first commit that writes anything to a log without metadata.version starts with
    # Kafka's bootstrap features (a batch that writes nothing still writes nothing): the
    # batch runs again after them, so they take the first offsets.
    return _run_events_after(
        image, bootstrap=bootstrap, events=events, env=env, now=now, prior=prior, failed=failed
    )


def _run_events_after(
    image: MetadataImage,
    *,
    bootstrap: Sequence[Record],
    events: Sequence[ControllerEvent],
    env: ControllerEnv,
    now: int,
    prior: dict[RequestKey, ControllerAnswer],
    failed: dict[int, ControllerAnswer],
) -> tuple[MetadataDelta, list[int], list[ControllerAnswer], list[AppliedWrite]]:
    delta = MetadataDelta(image)
    for record in bootstrap:
        delta.replay(record)
    contacts: list[int] = []
    answers: list[ControllerAnswer] = []
    writes: list[AppliedWrite] = []
    # (principal, request id) -> the event of the batch that ran it. Request ids belong to their
    # principal: another principal's event with the same id is a request of its own.
    answered_by: dict[RequestKey, int] = {}
    for index, event in enumerate(events):
        key, remembered = event.context.key, event.remembered
        if index in failed:
            answers.append(failed[index])
        elif remembered and key in answered_by:
            # Another copy of a request earlier in this batch (a client's concurrent retry, a
            # resend): it answers what that one answered and writes nothing; another body with
            # the same id is refused.
            first = events[answered_by[key]]
            same = _fingerprint(first) == _fingerprint(event)
            answers.append(answers[answered_by[key]] if same else _reused(event))
        elif event.deadline_ms is not None and event.deadline_ms < now:
            answers.append(refusal(OUTLIVED_ITS_DEADLINE))
        elif remembered and key in prior:
            # This principal's own earlier write: its answer, when this asks the same.
            stored = prior[key]
            same = stored.fingerprint in (None, _fingerprint(event))
            answers.append(stored if same else _reused(event))
        else:
            answers.append(_run_event(delta, index, event, env, contacts, writes))
            if remembered:
                answered_by[key] = index
    return delta, contacts, answers, writes


NOTHING_WRITTEN = ApiError(
    Errors.UNKNOWN_SERVER_ERROR,
    "The controller could not commit this request; nothing of it was written.",
)


def _fingerprint(event: ControllerEvent) -> str:
    return request_fingerprint(event.api, event.payload)


def _reused(event: ControllerEvent) -> ControllerAnswer:
    """The refusal of a request id this principal used for another request (the IETF
    Idempotency-Key draft answers 422): never the other request's answer, nothing written."""
    error = ApiError(
        Errors.INVALID_REQUEST,
        f"Request id {event.context.request_id} was already used for another request; "
        "use a new request id for a new request.",
    )
    return ControllerAnswer(error.as_fields(), notes={REQUEST_ID_REUSED: True})


OUTLIVED_ITS_DEADLINE = ApiError(
    Errors.REQUEST_TIMED_OUT, "The request outlived its deadline in the queue."
)


def _run_event(
    delta: MetadataDelta,
    index: int,
    event: ControllerEvent,
    env: ControllerEnv,
    contacts: list[int],
    writes: list[AppliedWrite],
) -> ControllerAnswer:
    """One event's records (into `delta`) and answer; a write is noted in `writes`."""
    first_offset = delta.next_offset
    notes: dict[str, Any] = {}  # the handler's, for the caller's audit trail
    try:
        answer = ControllerAnswer(run_event(delta, event.api, event.payload, env, contacts, notes))
    except ReplayFailed as failure:
        failure.index = index
        raise
    if delta.last_offset < first_offset:
        return answer  # a no-op, a refusal, a heartbeat that changed nothing: no records
    # The caller's audit trail (and a retry's, through the stored answer) learns the offsets,
    # and whether the audit row is written in this commit.
    audit = event.audit if COMMIT_AUDIT else None
    answer = dataclasses.replace(
        answer, offsets=(first_offset, delta.last_offset), audited=audit is not None, notes=notes
    )
    writes.append(
        AppliedWrite(
            event.context,
            event.api,
            first_offset,
            delta.last_offset,
            answer,
            remembered=event.remembered,
            event_index=index,
            audit=audit,
            payload=event.payload,
        )
    )
    return answer


def second_writes(
    writes: Sequence[AppliedWrite], duplicate: DuplicateWrite
) -> dict[int, ControllerAnswer]:
    """The batch's events to refuse for `duplicate`: every write of a (principal, id) the log
    holds already, else every write of it but its first."""
    refused: dict[int, ControllerAnswer] = {}
    kept: set[RequestKey] = set()
    for write in writes:
        key = write.context.key
        if key not in duplicate.keys:
            continue
        if not duplicate.in_log and key not in kept:
            kept.add(key)
            continue
        refused[write.event_index] = refusal(duplicate)
    return refused

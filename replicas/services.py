"""Topic, partition and replica writes. Every change reaches the controller.

AlterReplicaState (KIP-589) is validated here at once and applied by the controller later: the
report waits in a table, and the controller takes all waiting reports in one batch.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import uuid
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from brokers.identity import require_speaks_for
from controlplane.controller.errors import ApiError
from controlplane.controller.replication.alter_replica_state import validate_alter_replica_state
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext, RequestTrail
from controlplane.runtime.executor import CONTROLLER_QUEUE, executor
from controlplane.runtime.lease import now_ms
from controlplane.services import broker_call, controller_call, controller_event
from replicas.models import PendingReplicaStateChange
from replicas.selectors import replica_state_view

logger = logging.getLogger(__name__)

MAX_PENDING_BATCH = 500
APPLY_TASK = "replicas.tasks.apply_replica_state_changes"


def topics_create(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return controller_call(api="CreateTopics", payload=payload, context=context)


def topics_delete(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return controller_call(api="DeleteTopics", payload=payload, context=context)


def partitions_create(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return controller_call(api="CreatePartitions", payload=payload, context=context)


def leaders_elect(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    return controller_call(api="ElectLeaders", payload=payload, context=context)


def partition_reassignments_alter(
    *, payload: dict[str, Any], context: RequestContext
) -> dict[str, Any]:
    """Move, replace or cancel partition reassignments (KIP-455) on the controller."""
    return controller_call(api="AlterPartitionReassignments", payload=payload, context=context)


def partition_alter(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    require_speaks_for(context, payload["broker_id"], "AlterPartition")
    return broker_call(api="AlterPartition", payload=payload, context=context)


def replicas_assign_to_dirs(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    """A broker's replicas placed in its log dirs (AssignReplicasToDirs, KIP-858)."""
    require_speaks_for(context, payload["broker_id"], "AssignReplicasToDirs")
    return broker_call(api="AssignReplicasToDirs", payload=payload, context=context)


def replica_state_alter(*, payload: dict[str, Any], context: RequestContext) -> dict[str, Any]:
    """Validate an AlterReplicaState now; queue what is valid for the controller."""
    try:
        require_speaks_for(context, payload["broker_id"], "AlterReplicaState")
    except ApiError as error:
        return {**error.as_fields(), "topics": []}
    view = replica_state_view(
        broker_id=payload["broker_id"], topic_names=[t["name"] for t in payload["topics"]]
    )
    try:
        response = validate_alter_replica_state(view, payload)
    except ApiError as error:
        return {**error.as_fields(), "topics": []}
    executor().require_controller()
    accepted = _accepted_partitions(response)
    if accepted:
        request_id = context.request_id or str(uuid.uuid4())
        try:
            with transaction.atomic():
                PendingReplicaStateChange.objects.create(
                    request_id=request_id,
                    broker_id=payload["broker_id"],
                    broker_epoch=payload["broker_epoch"],
                    payload={**payload, "topics": accepted},
                    principal=context.principal,
                    client_id=context.client_id,
                    client_host=context.client_host,
                    received_ms=now_ms(),
                )
        except IntegrityError:
            logger.info("AlterReplicaState %s is a retry; it is applied once", request_id)
        _schedule_apply()
    return response


def _accepted_partitions(response: dict[str, Any]) -> list[dict[str, Any]]:
    accepted = []
    for topic in response["topics"]:
        ok = [p["partition_index"] for p in topic["partitions"] if p["error_code"] == 0]
        if ok:
            accepted.append({"name": topic["name"], "partitions": ok})
    return accepted


def _schedule_apply() -> None:
    executor().send_task(APPLY_TASK, queue=CONTROLLER_QUEUE)


def replica_state_apply_pending(*, limit: int = MAX_PENDING_BATCH) -> int:
    """On the active controller: apply every waiting AlterReplicaState, in commits of at most
    `CP_MAX_PARTITION_CHANGES_PER_COMMIT` partitions. Reports stay waiting when this node is
    not the controller.

    Bounded commits, as Kafka's controller bounds what one operation writes at once
    (`max.records.per.user.op`, 10,000): one report naming 100,000 partitions held the
    controller for 4.5 s in one commit, during which its timer could not fence nor measure,
    and came back thinking itself overloaded. Between two commits the controller's other
    events and its fencing rounds get in. Each slice is a write of its own (its own request
    id, `<id>/<n>` after the first, the same slices every time): a report applied in part
    before a failover is applied in full once, never twice."""
    if not _applying.acquire(blocking=False):
        return 0  # this process applies them already (its jobs thread, a Celery thread)
    try:
        return _apply_pending(limit)
    finally:
        _applying.release()


_applying = threading.Lock()


def _apply_pending(limit: int) -> int:
    rows = list(PendingReplicaStateChange.objects.order_by("id")[:limit])
    if not rows:
        return 0
    events = [
        controller_event(
            api="AlterReplicaState",
            payload=payload,
            context=RequestContext(
                principal=row.principal,
                client_id=row.client_id,
                client_host=row.client_host,
                request_id=row.request_id if index == 0 else f"{row.request_id}/{index}",
                # Audited in the controller's commit, from when the report arrived.
                trail=RequestTrail(rpc="AlterReplicaState", started_ms=row.received_ms),
            ),
        )
        for row in rows
        for index, payload in enumerate(
            payload_slices(row.payload, settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT)
        )
    ]
    answers = []
    batches = _bounded_batches(events, settings.CP_MAX_PARTITION_CHANGES_PER_COMMIT)
    for number, batch in enumerate(batches, start=1):
        # this process is the controller; the next slice follows each but the last at once
        # its tables wait for the controller's timer while there are slices (the brokers
        # follow the log): nothing here reads them
        answered = get_runtime().handle_batch(
            _sent_now(batch),
            more_follows=number < len(batches),
            answered_from_the_log=len(batches) > 1,
        )
        if any(answer.not_controller or answer.outcome_unknown for answer in answered):
            # The reports stay waiting, whole: the next round applies what is left, and the
            # slices already applied answer from their request ids, written once.
            return 0
        answers.extend(answered)
    PendingReplicaStateChange.objects.filter(id__in=[row.id for row in rows]).delete()
    applied = sum(int(answer.response.get("offline_replicas", 0)) for answer in answers)
    logger.info(
        "applied %d AlterReplicaState report(s) in %d slice(s): %d replica(s) now offline",
        len(rows),
        len(events),
        applied,
    )
    return len(rows)


def payload_slices(payload: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """`payload` as AlterReplicaState payloads of at most `limit` partitions each, in order
    (the same slices every time); one slice when it is small enough."""
    slices: list[dict[str, Any]] = []
    topics: list[dict[str, Any]] = []
    room = limit
    for topic in payload["topics"]:
        partitions = list(topic["partitions"])
        while partitions:
            taken, partitions = partitions[:room], partitions[room:]
            topics.append({**topic, "partitions": taken})
            room -= len(taken)
            if room == 0:
                slices.append({**payload, "topics": topics})
                topics, room = [], limit
    if topics or not slices:
        slices.append({**payload, "topics": topics})
    return slices


def _partitions(event: Any) -> int:
    return sum(len(t["partitions"]) for t in event.payload["topics"])


def _sent_now(events: list[ControllerEvent]) -> list[ControllerEvent]:
    """The slices of a report as sent now, each with a whole request timeout: a report of a
    million partitions is applied over half a minute, and its last slices, made with the first,
    would otherwise outlive their deadline unapplied."""
    sent = now_ms()
    deadline = sent + settings.CP_REQUEST_TIMEOUT_MS
    return [dataclasses.replace(event, sent_ms=sent, deadline_ms=deadline) for event in events]


def _bounded_batches(events: list[Any], limit: int) -> list[list[Any]]:
    """Consecutive events in batches of at most `limit` partitions (one commit each)."""
    batches: list[list[Any]] = []
    size = limit
    for event in events:
        count = _partitions(event)
        if not batches or size + count > limit:
            batches.append([])
            size = 0
        batches[-1].append(event)
        size += count
    return batches

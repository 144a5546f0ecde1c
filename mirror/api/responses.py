"""The mirror endpoints' answers, for the OpenAPI schema (docs/reference/rest-api.md,
"MirrorMaker 2")."""

from __future__ import annotations

from controlplane.api.responses import ANY, BOOL, INT, NSTR, STR, arr, nullable, obj

NINT = nullable(INT)
TASK = obj("id", "state", id=INT, state=STR, worker_id=NSTR, trace=NSTR)
CONNECTOR = obj(
    "name",
    "state",
    "tasks",
    name=STR,
    state=STR,
    worker_id=NSTR,
    trace=NSTR,
    target_state=STR,
    tasks=arr(TASK),
)
FLOW = obj(
    "source",
    "target",
    "enabled",
    "paused",
    "nodes",
    "connectors",
    "topics",
    "lagging_topics",
    source=STR,
    target=STR,
    name=STR,
    group_id=STR,
    enabled=BOOL,
    paused=BOOL,
    generation=INT,
    group_state=STR,
    leader=NSTR,
    nodes=arr(
        obj(
            "worker_id",
            worker_id=STR,
            rest_url=STR,
            leader=BOOL,
            last_heartbeat_ms=INT,
        )
    ),
    connectors=arr(CONNECTOR),
    topics=arr(obj(source_topic=STR, remote_topic=STR, matched_filter=STR)),
    heartbeat_age_ms=NINT,
    lagging_topics=arr(ANY),
    topics_filter=ANY,
    topics_exclude=ANY,
)
FLOWS = obj(
    "count",
    "results",
    count=INT,
    next=nullable(STR),
    previous=nullable(STR),
    results=arr(FLOW),
)
GROUP_ANSWER = obj("error_code", error_code=INT, error=STR, error_message=NSTR)

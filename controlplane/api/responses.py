"""What every operation answers, for the OpenAPI schema: success bodies and the error body.

The schema is honest about errors (shell.api.schema adds them to every operation): each
answers Kafka's error body with 400, 401, 403, 404, 405, 408, 411, 413, 415, 429 (public
listener), 503 and 504 besides its success. Success bodies come from a view's serializer where
it has one; each admin RPC's spec carries its own (`register(..., response=...)` in its app's
rpcs.py, built from the shapes here), and the views answering Kafka's plain bodies name theirs
here. Objects list the fields always present and leave room for more, as Kafka's versioned
bodies do.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse

Schema = dict[str, Any]


def ok(schema: Schema | None, description: str = "Kafka's answer") -> dict[int, Any] | None:
    """`extend_schema(responses=ok(...))`: the 200 body as a raw schema."""
    if schema is None:
        return None
    return {200: OpenApiResponse(response=schema, description=description)}


INT: Schema = {"type": "integer"}
NUM: Schema = {"type": "number"}
STR: Schema = {"type": "string"}
BOOL: Schema = {"type": "boolean"}
ANY: Schema = {}


def nullable(schema: Schema) -> Schema:
    return {**schema, "nullable": True}


def arr(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def obj(*required: str, **properties: Schema) -> Schema:
    """An object with `properties`, of which `required` are always present."""
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


NSTR = nullable(STR)
# Kafka's error fields on a response or an item of it (`error` is Kafka's name of the code).
ERROR_FIELDS: dict[str, Schema] = {"error_code": INT, "error": STR, "error_message": NSTR}


def kafka(*required: str, **properties: Schema) -> Schema:
    """A Kafka response body or item: its error code (always) and message, and `properties`."""
    return obj("error_code", *required, **ERROR_FIELDS, **properties)


# The body of every whole-request error (docs/reference/conventions.md): Kafka's code, its
# name and a message.
ERROR: Schema = obj(
    "error_code",
    "error_message",
    error_code={**INT, "description": "Kafka's error code (INVALID_REQUEST 42, ...)"},
    error={**STR, "description": "Kafka's name of the code"},
    error_message=NSTR,
)

# Shapes several answers share (a config entry: CreateTopics, DescribeConfigs; a quota entity).
CONFIG_ENTRY = obj(
    "name",
    name=STR,
    value=NSTR,
    read_only=BOOL,
    config_source=STR,
    is_sensitive=BOOL,
    synonyms=arr(obj(name=STR, value=NSTR, source=STR)),
    config_type=STR,
    documentation=NSTR,
)
QUOTA_ENTITY = arr(obj(entity_type=STR, entity_name=NSTR))
TOPIC_PARTITION_ERRORS = arr(
    obj(name=STR, partitions=arr(obj(partition_index=INT, error_code=INT)))
)

# The views that answer plain bodies without a serializer.
WHOAMI = obj("principal", principal=STR, super_user=BOOL, broker=BOOL)
BROKER_SUMMARY = obj(
    "broker_id",
    broker_id=INT,
    incarnation_id=STR,
    broker_epoch=INT,
    state=STR,
    fenced=BOOL,
    in_controlled_shutdown=BOOL,
    pod=STR,
    rack=NSTR,
    listeners=arr(obj(name=STR, host=STR, port=INT, security_protocol=STR)),
    log_dirs=arr(STR),
    last_contact_ms=nullable(INT),
    metadata_offset=nullable(INT),
)
CLUSTER = obj(
    "cluster_id",
    cluster_id=STR,
    controller_id=nullable(INT),
    controller_epoch=INT,
    controller_active=BOOL,
    metadata_offset=INT,
    broker_states=obj(),
    broker_pods=obj(),
    health=obj(),
    brokers=arr(BROKER_SUMMARY),
)
LEVEL_RANGE = obj("min_version", "max_version", min_version=INT, max_version=INT)
LEVEL_RANGES: Schema = {"type": "object", "additionalProperties": LEVEL_RANGE}
FEATURES = obj(
    "finalized_features",
    "supported_features",
    finalized_features_epoch=INT,
    finalized_features={"type": "object", "additionalProperties": INT},
    metadata_version=nullable(obj(level=INT, name=STR)),
    supported_features=LEVEL_RANGES,
    voters=arr(
        obj(
            voter_id=INT,
            directory_id=STR,
            endpoints=arr(obj(name=STR, host=STR, port=INT)),
            min_kraft_version=INT,
            max_kraft_version=INT,
        )
    ),
    brokers=arr(obj(broker_id=INT, supported_features=LEVEL_RANGES)),
)
REPLICA_INCIDENTS = obj(
    "results",
    results=arr(
        obj(
            offset=INT,
            timestamp_ms=INT,
            principal=STR,
            request_id=STR,
            broker_id=nullable(INT),
            topic=STR,
            partition_index=INT,
            offline_replicas=arr(INT),
            new_leader=INT,
            new_isr=nullable(arr(INT)),
            leaderless=BOOL,
        )
    ),
)
EFFECTIVE_QUOTAS = obj(
    "user",
    "client_id",
    "values",
    user=STR,
    client_id=STR,
    values=arr(obj(key=STR, value=NUM, entity=QUOTA_ENTITY)),
)
SNAPSHOT_ID = obj("end_offset", "epoch", end_offset=INT, epoch=INT)  # Kafka's SnapshotId
METADATA_FETCH = obj(
    "cluster_id",
    "last_offset",
    "records",
    cluster_id=STR,
    controller_id=nullable(INT),
    controller_epoch=INT,
    last_offset=INT,
    log_start_offset={
        **INT,
        "description": "The first record the log holds; records before it are in a snapshot",
    },
    error_code={
        **INT,
        "description": "0; SNAPSHOT_NOT_FOUND (98) when records before the log's start were "
        "asked for and no snapshot is there yet",
    },
    snapshot_id={
        **SNAPSHOT_ID,
        "description": "Present when records before the log's start were asked for: load "
        "this snapshot (GET /internal/v1/metadata/snapshots/{end_offset}), then fetch after "
        "end_offset - 1. Kafka's FetchResponse SnapshotId",
    },
    records=arr(
        obj(
            "offset",
            "type",
            offset=INT,
            type=STR,
            controller_epoch=INT,
            timestamp_ms=INT,
            data=obj(),
        )
    ),
)
METADATA_SNAPSHOT = obj(
    "end_offset",
    "epoch",
    "size_bytes",
    "checksum",
    "created_ms",
    end_offset={**INT, "description": "Exclusive: the log goes on from this offset"},
    epoch={**INT, "description": "The controller epoch of the snapshot's last record"},
    size_bytes={**INT, "description": "Its bytes as fetched (zstd-compressed MessagePack)"},
    checksum={**STR, "description": "SHA-256 (hex) of the uncompressed bytes"},
    created_ms=INT,
)
ALTER_PARTITION = kafka(
    throttle_time_ms=INT,
    topics=arr(
        obj(
            topic_name=STR,
            partitions=arr(
                kafka(
                    partition_index=INT,
                    leader_id=INT,
                    leader_epoch=INT,
                    isr=arr(INT),
                    partition_epoch=INT,
                )
            ),
        )
    ),
)
PARTITION_REASSIGNMENTS = obj(
    "topics",
    topics=arr(
        obj(
            name=STR,
            partitions=arr(
                obj(
                    partition_index=INT,
                    replicas=arr(INT),
                    adding_replicas=arr(INT),
                    removing_replicas=arr(INT),
                )
            ),
        )
    ),
)
ALTER_REPLICA_STATE = kafka(topics=TOPIC_PARTITION_ERRORS)
ENVELOPE = kafka(
    response_header=obj(correlation_id=INT),
    response_status=INT,
    response_data=nullable(obj()),
)

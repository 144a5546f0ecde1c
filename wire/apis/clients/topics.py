"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37) and ElectLeaders (43): each
decoded request becomes the REST body of its RPC (`replicas.rpcs`), runs through
`controlplane.rpc.execute` (authorization, validation, quotas, the controller, the audit row)
and its answer becomes the response of the request's version. Nothing here decides anything.

A whole-request error (`execute` answers a status other than 200 with an error body and no
items: NOT_CONTROLLER, throttling, an invalid body, a broker principal's write) is put on every
item, as Kafka's `getErrorResponse` does.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from controlplane.rpc import REGISTRY, RpcAnswer, execute
from wire.apis.base import BOTH_ROLES, MAX_ITEMS_PER_REQUEST, WireRequest, wire_api
from wire.apis.common import CONFIG_SOURCES, kafka_code, respond, throttle_ms
from wire.convert import KAFKA_ERROR_CODES, to_data
from wire.encoding import (
    EncodedBody,
    compact_nullable_string,
    compact_string,
    uuid_bytes,
    uvarint,
)

Data = dict[str, Any]

_UNKNOWN = KAFKA_ERROR_CODES[-1]
# ElectLeaders' electionType (v1+; v0 elects preferred leaders only)
ELECTION_TYPES = {0: "PREFERRED", 1: "UNCLEAN"}


def run(name: str, body: Data, request: WireRequest) -> RpcAnswer:
    """The RPC `name` as the REST view runs it, for this request's caller."""
    return execute(REGISTRY[name], body, request.caller)


def whole_request_error(answer: RpcAnswer, items: str) -> Data | None:
    """The error of a request refused as a whole (no `items` in its answer), as item fields."""
    if answer.status == 200 or items in answer.data:
        return None
    return {
        "error_code": kafka_code(answer.data.get("error_code")),
        "error_message": answer.data.get("error_message"),
    }


def _rename_timeout(data: Data) -> Data:
    out = dict(data)
    out["timeout_ms"] = out.pop("timeout", 60_000)
    return out


def _answered(
    request: WireRequest,
    answer: RpcAnswer,
    items: str,
    refused_item: Callable[[Data], list[Data]],
    translate: Callable[[Data], Data] = lambda item: item,
) -> Any:
    refusal = whole_request_error(answer, items)
    throttle = throttle_ms(answer)  # kio's timedelta, from milliseconds by from_data
    if refusal is not None:
        results = refused_item(refusal)
    else:
        results = [translate(item) for item in answer.data[items]]
    return respond(request, {"throttle_time": throttle, items: results})


# --- CreateTopics ----------------------------------------------------------------------------
def _created(item: Data) -> Data:
    configs = item.get("configs")
    if configs is not None:
        item = {
            **item,
            "configs": [
                {**c, "config_source": CONFIG_SOURCES.get(str(c.get("config_source")), -1)}
                for c in configs
            ],
        }
    return item


@wire_api("CreateTopics", 19, (2, 7), roles=BOTH_ROLES, max_items=MAX_ITEMS_PER_REQUEST)
def create_topics(request: WireRequest) -> Any:
    body = _rename_timeout(to_data(request.body))
    answer = run("CreateTopics", body, request)
    if (
        request.api_version >= FIRST_FLEXIBLE_CREATE_TOPICS
        and whole_request_error(answer, "topics") is None
    ):
        return encoded_created_topics(
            request.api_version, throttle_ms(answer), answer.data["topics"]
        )
    return _answered(
        request,
        answer,
        "topics",
        lambda error: [{"name": t["name"], **error} for t in body["topics"]],
        _created,
    )


FIRST_FLEXIBLE_CREATE_TOPICS = 5  # v5+: flexible, with each topic's partitions and configs
FIRST_WITH_TOPIC_ID = 7
_INT16 = struct.Struct(">h").pack
_TOPIC_COUNTS = struct.Struct(">ih").pack  # num_partitions, replication_factor
_CONFIG_FLAGS = struct.Struct(">?b?B").pack  # read_only, config_source, is_sensitive, no tags
_NULL = b"\x00"  # a null compact string or array; also "no tagged fields"


def encoded_created_topics(version: int, throttle: int, topics: Iterable[Data]) -> EncodedBody:
    """CreateTopics v5+'s response body written straight from the controller's answer (topics
    as the REST API answers them, config sources by name): a creation of 500 topics
    answers 7,000 config entries, and kio's entities for them cost the Kafka protocol
    listener tens of ms on the answer's path, several times that while the brokers busy both
    cores. Each distinct config entry is written once. Fields as `from_data` reads them after
    `_created`: an error code Kafka does not define is UNKNOWN_SERVER_ERROR, a config source
    it does not name -1, a missing count -1, missing configs an empty array.
    `tests/wire/test_encoding.py` checks the bytes against kio's writer."""
    entries: dict[tuple[Any, ...], bytes] = {}
    parts = [struct.pack(">i", throttle)]
    listed = list(topics)
    errors = []
    parts.append(uvarint(len(listed) + 1))
    for topic in listed:
        code = KAFKA_ERROR_CODES.get(int(topic.get("error_code") or 0), _UNKNOWN)
        errors.append(code.name.upper())
        parts.append(compact_string(topic["name"]))
        if version >= FIRST_WITH_TOPIC_ID:
            topic_id = topic.get("topic_id")
            parts.append(uuid_bytes(uuid.UUID(str(topic_id)) if topic_id else None))
        parts.append(_INT16(code.value))
        parts.append(compact_nullable_string(topic.get("error_message")))
        parts.append(
            _TOPIC_COUNTS(topic.get("num_partitions", -1), topic.get("replication_factor", -1))
        )
        configs = topic.get("configs", ())
        if configs is None:
            parts.append(_NULL)
        else:
            parts.append(uvarint(len(configs) + 1))
            for config in configs:
                key = (
                    config["name"],
                    config.get("value"),
                    bool(config["read_only"]),
                    config.get("config_source"),
                    bool(config["is_sensitive"]),
                )
                written = entries.get(key)
                if written is None:
                    name, value, read_only, source, sensitive = key
                    flags = _CONFIG_FLAGS(
                        read_only, CONFIG_SOURCES.get(str(source), -1), sensitive, 0
                    )
                    written = compact_string(name) + compact_nullable_string(value) + flags
                    entries[key] = written
                parts.append(written)
        parts.append(_topic_tags(int(topic.get("topic_config_error_code") or 0)))
    parts.append(_NULL)
    return EncodedBody(b"".join(parts), errors)


def _topic_tags(config_error_code: int) -> bytes:
    """A topic's tagged fields: TopicConfigErrorCode (tag 0) only when it is not 0."""
    if config_error_code == 0:
        return _NULL
    return b"\x01\x00\x02" + _INT16(config_error_code)


# --- DeleteTopics ----------------------------------------------------------------------------
@wire_api("DeleteTopics", 20, (1, 6), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def delete_topics(request: WireRequest) -> Any:
    body = _rename_timeout(to_data(request.body))

    def refused(error: Data) -> list[Data]:
        by_name = [{"name": name, **error} for name in body.get("topic_names", ())]
        return by_name + [{**t, **error} for t in body.get("topics", ())]

    return _answered(request, run("DeleteTopics", body, request), "responses", refused)


# --- CreatePartitions ------------------------------------------------------------------------
@wire_api("CreatePartitions", 37, (0, 3), max_items=MAX_ITEMS_PER_REQUEST, roles=BOTH_ROLES)
def create_partitions(request: WireRequest) -> Any:
    body = _rename_timeout(to_data(request.body))
    return _answered(
        request,
        run("CreatePartitions", body, request),
        "results",
        lambda error: [{"name": t["name"], **error} for t in body["topics"]],
    )


# --- ElectLeaders ----------------------------------------------------------------------------
@wire_api("ElectLeaders", 43, (0, 2), roles=BOTH_ROLES)
def elect_leaders(request: WireRequest) -> Any:
    data = _rename_timeout(to_data(request.body))
    # v0 has no election type (preferred); an unknown one is left for validation to refuse.
    election = int(data.pop("election_type", 0))
    data["election_type"] = ELECTION_TYPES.get(election, str(election))
    answer = run("ElectLeaders", data, request)
    throttle = throttle_ms(answer)  # kio's timedelta, from milliseconds by from_data
    refusal = whole_request_error(answer, "replica_election_results")
    if refusal is None:
        return respond(
            request,
            {
                "throttle_time": throttle,
                "error_code": answer.data.get("error_code", 0),
                "replica_election_results": answer.data["replica_election_results"],
            },
        )
    # Kafka's getErrorResponse: the error on every partition asked for, and at the top (v1+).
    results = [
        {
            "topic": t["topic"],
            "partition_result": [{"partition_id": p, **refusal} for p in t["partitions"]],
        }
        for t in data.get("topic_partitions") or ()
    ]
    return respond(
        request,
        {
            "throttle_time": throttle,
            "error_code": refusal["error_code"],
            "replica_election_results": results,
        },
    )

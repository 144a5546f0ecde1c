"""What an admin request was about, for the audit trail: its resources and their error codes.

Pure functions of the API name, the request body and the answer (both as the client sent and
got them: any JSON, never trusted). They name resources only: a config value, an HMAC or a
token never enters the trail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

MAX_RESOURCES = 500  # one request may name 10,000 partitions: the trail keeps the first ones

Resource = dict[str, Any]
Namer = Callable[[dict[str, Any]], tuple[str, str]]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _code(item: dict[str, Any], default: int = 0) -> int:
    code = item.get("error_code", default)
    return code if isinstance(code, int) and not isinstance(code, bool) else default


def _topic(item: dict[str, Any]) -> tuple[str, str]:
    return "TOPIC", _text(item.get("name") or item.get("topic_id"))


def _config_resource(item: dict[str, Any]) -> tuple[str, str]:
    return _text(item.get("resource_type")), _text(item.get("resource_name"))


def _acl(item: dict[str, Any]) -> tuple[str, str]:
    suffix = "_filter" if "resource_type_filter" in item else ""
    resource_type = _text(item.get("resource_type" + suffix))
    name = _text(item.get("resource_name" + suffix)) or "*"
    pattern = _text(item.get("pattern_type" + suffix))
    principal = _text(item.get("principal" + suffix)) or "any principal"
    operation = _text(item.get("operation"))
    permission = _text(item.get("permission_type"))
    return resource_type, f"{name} ({pattern}): {permission} {operation} for {principal}"


def _quota_entity(item: dict[str, Any]) -> tuple[str, str]:
    parts = []
    for component in _dicts(item.get("entity") or item.get("components")):
        name = component.get("entity_name", component.get("match"))
        kind = _text(component.get("entity_type"))
        parts.append(f"{kind}={'<default>' if name is None else _text(name)}")
    return "CLIENT_QUOTA", ",".join(parts)


def _partitions(answer: dict[str, Any]) -> Iterable[Resource]:
    for topic in _dicts(answer.get("replica_election_results")):
        for result in _dicts(topic.get("partition_result")):
            name = f"{_text(topic.get('topic'))}-{_text(result.get('partition_id'))}"
            yield {"resource_type": "PARTITION", "resource_name": name, "error_code": _code(result)}


def _requested_partitions(body: dict[str, Any]) -> Iterable[tuple[str, str]]:
    topics = body.get("topic_partitions")
    if not isinstance(topics, list):
        return [("PARTITION", "*")]  # null: every partition
    return [
        ("PARTITION", f"{_text(t.get('topic'))}-{_text(p)}")
        for t in _dicts(topics)
        for p in _list(t.get("partitions"))
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# API -> (answer list key, body list key, how an item is named). Answers list their items in
# request order (or name them); an answer without the list (a refused request) falls back to
# the body's items, with the request's error code.
ITEMS: dict[str, tuple[str, str, Namer]] = {
    "CreateTopics": ("topics", "topics", _topic),
    "DeleteTopics": ("responses", "topics", _topic),
    "CreatePartitions": ("results", "topics", _topic),
    "AlterConfigs": ("responses", "resources", _config_resource),
    "IncrementalAlterConfigs": ("responses", "resources", _config_resource),
    "DescribeConfigs": ("results", "resources", _config_resource),
    "AlterClientQuotas": ("entries", "entries", _quota_entity),
}
# APIs whose answer codes line up with the body's list by position.
POSITIONAL: dict[str, tuple[str, str, Namer]] = {
    "CreateAcls": ("results", "creations", _acl),
    "DeleteAcls": ("filter_results", "filters", _acl),
}


def request_resources(
    api: str, body: Any, answer: Any, notes: dict[str, Any] | None = None
) -> list[Resource]:
    """The resources an admin request named, each with the error code it was answered."""
    body = body if isinstance(body, dict) else {}
    answer = answer if isinstance(answer, dict) else {}
    top = _code(answer)
    resources = list(_resources(api, body, answer, top, notes or {}))
    if len(resources) > MAX_RESOURCES:
        extra = len(resources) - MAX_RESOURCES
        resources = resources[:MAX_RESOURCES]
        resources.append(
            {"resource_type": "", "resource_name": f"(+{extra} more)", "error_code": 0}
        )
    return resources


def _resources(
    api: str, body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    def named(kind_name: tuple[str, str], code: int) -> Resource:
        return {"resource_type": kind_name[0], "resource_name": kind_name[1], "error_code": code}

    if api in ITEMS:
        answer_key, body_key, namer = ITEMS[api]
        if isinstance(answer.get(answer_key), list):
            return [named(namer(i), _code(i)) for i in _dicts(answer[answer_key])]
        items = _dicts(body.get(body_key))
        if api == "DeleteTopics":
            items += [{"name": n} for n in body.get("topic_names") or [] if isinstance(n, str)]
        return [named(namer(i), top) for i in items]
    if api in POSITIONAL:
        answer_key, body_key, namer = POSITIONAL[api]
        codes = [_code(i) for i in _dicts(answer.get(answer_key))]
        items = _dicts(body.get(body_key))
        return [
            named(namer(item), codes[index] if index < len(codes) else top)
            for index, item in enumerate(items)
        ]
    if api == "DescribeAcls":
        return [named(_acl(body), top)]
    if api == "ElectLeaders":
        elected = list(_partitions(answer))
        return elected or [named(p, top) for p in _requested_partitions(body)]
    if api == "DescribeClientQuotas":
        return [named(_quota_entity(body), top)]
    if api == "CreateDelegationToken":
        if answer.get("token_id"):
            return [named(("DELEGATION_TOKEN", _text(answer["token_id"])), top)]
        owner = body.get("owner_principal_name")
        return [named(("USER", f"User:{owner}" if owner else "(requester)"), top)]
    if api in ("RenewDelegationToken", "ExpireDelegationToken"):
        return [named(("DELEGATION_TOKEN", _text(notes.get("_token_id")) or "(unknown)"), top)]
    if api == "DescribeDelegationToken":
        owners = _dicts(body.get("owners"))
        if not owners:
            return [named(("DELEGATION_TOKEN", "*"), top)]
        return [named(("USER", f"User:{_text(o.get('principal_name'))}"), top) for o in owners]
    if api == "UnregisterBroker":
        return [named(("BROKER", _text(body.get("broker_id"))), top)]
    if api == "Envelope":
        return [named(("API", _text(notes.get("inner_api"))), top)]
    return []


def is_authorization_error(code: int) -> bool:
    return code in AUTHORIZATION_CODES


# Kafka's *_AUTHORIZATION_FAILED codes (topic, group, cluster, transactional id, token).
AUTHORIZATION_CODES = frozenset({29, 30, 31, 53, 65})


def request_outcome(http_status: int, answer: Any, resources: list[Resource]) -> tuple[str, int]:
    """(outcome, error code): the request's own error, else the first failed resource's."""
    answer = answer if isinstance(answer, dict) else {}
    top = _code(answer, default=0 if http_status < 400 else -1)
    if top:
        return ("DENIED" if is_authorization_error(top) or http_status == 403 else "FAILED"), top
    codes = [r["error_code"] for r in resources if r.get("resource_type") or r["error_code"]]
    failed = [c for c in codes if c]
    if not failed:
        return "SUCCESS", 0
    if len(failed) < len(codes):
        return "PARTIAL", failed[0]
    if all(is_authorization_error(c) for c in failed):
        return "DENIED", failed[0]
    return "FAILED", failed[0]

"""What an admin request was about, for the audit trail: its resources and their error codes.

Pure functions of the request body and the answer (both as the client sent and
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


def topic(item: dict[str, Any]) -> tuple[str, str]:
    return "TOPIC", _text(item.get("name") or item.get("topic_id"))


def config_resource(item: dict[str, Any]) -> tuple[str, str]:
    return _text(item.get("resource_type")), _text(item.get("resource_name"))


def acl(item: dict[str, Any]) -> tuple[str, str]:
    suffix = "_filter" if "resource_type_filter" in item else ""
    resource_type = _text(item.get("resource_type" + suffix))
    name = _text(item.get("resource_name" + suffix)) or "*"
    pattern = _text(item.get("pattern_type" + suffix))
    principal = _text(item.get("principal" + suffix)) or "any principal"
    operation = _text(item.get("operation"))
    permission = _text(item.get("permission_type"))
    return resource_type, f"{name} ({pattern}): {permission} {operation} for {principal}"


def feature(item: dict[str, Any]) -> tuple[str, str]:
    """A finalized feature, by name and the level asked for (UpdateFeatures)."""
    level = item.get("max_version_level")
    return "FEATURE", f"{_text(item.get('feature'))}={_text(level)}"


def quota_entity(item: dict[str, Any]) -> tuple[str, str]:
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


Namers = Callable[[dict[str, Any], dict[str, Any], int, dict[str, Any]], Iterable[Resource]]


def _named(kind_name: tuple[str, str], code: int) -> Resource:
    return {"resource_type": kind_name[0], "resource_name": kind_name[1], "error_code": code}


def listed(answer_key: str, body_key: str, namer: Namer, *, also: str = "") -> Namers:
    """Answers that list (or name) their items; an answer without the list (a refused request)
    falls back to the body's items, with the request's error code. `also`: a body list of bare
    topic names (DeleteTopics' `topic_names`)."""

    def resources(
        body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
    ) -> Iterable[Resource]:
        if isinstance(answer.get(answer_key), list):
            return [_named(namer(i), _code(i)) for i in _dicts(answer[answer_key])]
        items = _dicts(body.get(body_key))
        if also:
            items += [{"name": n} for n in _list(body.get(also)) if isinstance(n, str)]
        return [_named(namer(i), top) for i in items]

    return resources


def positional(answer_key: str, body_key: str, namer: Namer) -> Namers:
    """Answers whose codes line up with the body's list by position."""

    def resources(
        body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
    ) -> Iterable[Resource]:
        codes = [_code(i) for i in _dicts(answer.get(answer_key))]
        return [
            _named(namer(item), codes[index] if index < len(codes) else top)
            for index, item in enumerate(_dicts(body.get(body_key)))
        ]

    return resources


def whole_body(namer: Namer) -> Namers:
    """The request body names one resource (a filter, an entity)."""
    return lambda body, answer, top, notes: [_named(namer(body), top)]


def constant(resource_type: str, resource_name: str) -> Namers:
    """The request is about one fixed resource (the cluster)."""
    return lambda body, answer, top, notes: [_named((resource_type, resource_name), top)]


def elected_partitions(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    elected = list(_partitions(answer))
    return elected or [_named(p, top) for p in _requested_partitions(body)]


def reassigned_partitions(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """AlterPartitionReassignments: each partition it moved, cancelled or refused."""
    answered = [
        _named(("PARTITION", f"{_text(t.get('name'))}-{_text(p.get('partition_index'))}"), _code(p))
        for t in _dicts(answer.get("responses"))
        for p in _dicts(t.get("partitions"))
    ]
    return answered or [
        _named(("PARTITION", f"{_text(t.get('name'))}-{_text(p.get('partition_index'))}"), top)
        for t in _dicts(body.get("topics"))
        for p in _dicts(t.get("partitions"))
    ]


def created_token(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    if answer.get("token_id"):
        return [_named(("DELEGATION_TOKEN", _text(answer["token_id"])), top)]
    owner = body.get("owner_principal_name")
    return [_named(("USER", f"User:{owner}" if owner else "(requester)"), top)]


def token_of_hmac(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """Renew and expire name the token by its HMAC: the controller notes its id privately."""
    return [_named(("DELEGATION_TOKEN", _text(notes.get("token_id")) or "(unknown)"), top)]


def token_owners(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    owners = _dicts(body.get("owners"))
    if not owners:
        return [_named(("DELEGATION_TOKEN", "*"), top)]
    return [_named(("USER", f"User:{_text(o.get('principal_name'))}"), top) for o in owners]


def scram_users(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """SCRAM users by principal, each with its answer's code (Alter and Describe answer one
    result per user); a refused request names the body's users. Never a salt or a password."""
    if _dicts(answer.get("results")):
        return [
            _named(("USER", f"User:{_text(r.get('user'))}"), _code(r))
            for r in _dicts(answer["results"])
        ]
    names = [
        _text(item.get("name"))
        for kind in ("deletions", "upsertions", "users")
        for item in _dicts(body.get(kind))
    ]
    if not names and "users" in body:
        return [_named(("USER", "*"), top)]  # a description of every user
    return [_named(("USER", f"User:{name}"), top) for name in dict.fromkeys(names)]


def broker(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    return [_named(("BROKER", _text(body.get("broker_id"))), top)]


def replica_state_report(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """An AlterReplicaState report (KIP-589) as the controller applied it: the reporting broker,
    its failed log dir when the broker named it, and the partitions it named."""
    named = [
        _named(("BROKER", _text(body.get("broker_id"))), top),
        _named(("LOG_DIR", _text(body.get("log_dir")) or "(not named)"), top),
    ]
    for topic in _dicts(body.get("topics")):
        name = _text(topic.get("name"))
        named += [
            _named(("PARTITION", f"{name}-{_text(p)}"), top) for p in _list(topic.get("partitions"))
        ]
    return named


def broker_write(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """A broker's own write (its registration, a heartbeat that changed its state, an ISR
    change, producer ids, replicas placed in log dirs): the broker, and the partitions it named
    with their answers' codes."""
    named = [_named(("BROKER", _text(body.get("broker_id"))), top)]
    for topic in _dicts(answer.get("topics")):  # AlterPartition, by topic name
        name = _text(topic.get("topic_name"))
        named += [
            _named(("PARTITION", f"{name}-{_text(p.get('partition_index'))}"), _code(p))
            for p in _dicts(topic.get("partitions"))
        ]
    for directory in _dicts(answer.get("directories")):  # AssignReplicasToDirs, by topic id
        for topic in _dicts(directory.get("topics")):
            topic_id = _text(topic.get("topic_id"))
            named += [
                _named(("PARTITION", f"{topic_id}-{_text(p.get('partition_index'))}"), _code(p))
                for p in _dicts(topic.get("partitions"))
            ]
    return named[:MAX_RESOURCES]


def envelope(
    body: dict[str, Any], answer: dict[str, Any], top: int, notes: dict[str, Any]
) -> Iterable[Resource]:
    """A refused Envelope names the API it carried."""
    return [_named(("API", _text(notes.get("inner_api"))), top)]


def request_resources(
    namers: Namers, body: Any, answer: Any, notes: dict[str, Any] | None = None
) -> list[Resource]:
    """The resources an admin request named, each with the error code it was answered."""
    body = body if isinstance(body, dict) else {}
    answer = answer if isinstance(answer, dict) else {}
    resources = list(namers(body, answer, _code(answer), notes or {}))
    if len(resources) > MAX_RESOURCES:
        extra = len(resources) - MAX_RESOURCES
        resources = resources[:MAX_RESOURCES]
        resources.append(
            {"resource_type": "", "resource_name": f"(+{extra} more)", "error_code": 0}
        )
    return resources


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

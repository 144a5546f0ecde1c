"""Rows for the admin pages (configs, ACLs, client quotas, delegation tokens, the audit trail),
built from data already read, and the Kafka errors of an admin answer. No queries here."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from audit.models import AuditEvent
from audit.resources import is_authorization_error
from controlplane.controller.acls import ACL_FIELDS
from controlplane.controller.configs import DEFAULT_CONFIG, REDACTED
from controlplane.controller.errors import Errors
from controlplane.controller.records import QuotaEntity
from controlplane.forwarding import AdminAnswer
from frontend.tables import format_ms

NOT_SET = "(not set)"
DELETED = "(deleted)"


def error_name(code: int) -> str:
    """Kafka's name of an error code (a code Kafka never numbered says so)."""
    try:
        return Errors(code).name
    except ValueError:
        return f"UNKNOWN_ERROR_CODE_{code}"


# --- the errors of an admin answer --------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class KafkaProblem:
    """One error the API answered: the whole request's, or one item's."""

    error_code: int
    error: str
    message: str
    subject: str = ""  # the item it is about ("TOPIC orders"), empty for the whole request

    @property
    def is_authorization(self) -> bool:
        return is_authorization_error(self.error_code)


def _code_of(item: Mapping[str, Any]) -> int:
    code = item.get("error_code", 0)
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _problem(item: Mapping[str, Any], subject: str = "", fallback: int = 0) -> KafkaProblem:
    code = _code_of(item) or fallback
    return KafkaProblem(
        error_code=code,
        error=error_name(code),
        message=str(item.get("error_message") or ""),
        subject=subject,
    )


def answer_problems(
    answer: AdminAnswer,
    items_key: str | None = None,
    subject_of: Callable[[int, Mapping[str, Any]], str] = lambda index, item: "",
) -> list[KafkaProblem]:
    """The errors of an admin answer: the request's own (any status but 200, or a top-level
    error code), else each item of `answer.data[items_key]` answered with an error code."""
    data = answer.data
    if answer.status != 200 or _code_of(data):
        return [_problem(data, fallback=int(Errors.UNKNOWN_SERVER_ERROR))]
    if items_key is None:
        return []
    items = data.get(items_key)
    if not isinstance(items, list):
        return []
    return [
        _problem(item, subject_of(index, item))
        for index, item in enumerate(items)
        if isinstance(item, dict) and _code_of(item)
    ]


def answer_matching_acls(answer: AdminAnswer) -> list[dict[str, Any]]:
    """The ACLs DeleteAcls' (single) filter matched."""
    results = answer.data.get("filter_results")
    if not isinstance(results, list) or not results or not isinstance(results[0], dict):
        return []
    matching = results[0].get("matching_acls")
    return [m for m in matching if isinstance(m, dict)] if isinstance(matching, list) else []


def matching_acl_problems(answer: AdminAnswer) -> list[KafkaProblem]:
    """DeleteAcls answers an error per matched ACL it could not delete."""
    return [_problem(m) for m in answer_matching_acls(answer) if _code_of(m)]


def refusal_status(answer: AdminAnswer, problems: list[KafkaProblem]) -> int:
    """The UI's status for a write that failed: the API's for a whole-request error, 403 when
    every item was refused by authorization, else 200 (the form comes back with the errors)."""
    if answer.status != 200:
        return answer.status
    if problems and all(problem.is_authorization for problem in problems):
        return 403
    return 200


# --- configs ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class ConfigRow:
    """One key of a resource as DescribeConfigs answers it, for the page."""

    name: str
    value: str  # what to show: the value, "(redacted)" for a set sensitive key, "(not set)"
    source: str
    default: str
    documentation: str
    config_type: str
    read_only: bool
    sensitive: bool
    own_value: str | None  # the value set at this resource's own level (None: not set, secret)
    set_here: bool  # a dynamic value at this resource's own level
    inherited: str  # what the key falls back to without this level's value
    inherited_source: str


def config_row(entry: Mapping[str, Any], *, own_source: str, default: str | None) -> ConfigRow:
    """A row from one DescribeConfigs entry (asked with synonyms and documentation).

    `own_source` is the source of a value set at this resource's level (DYNAMIC_TOPIC_CONFIG
    for a topic...): the synonyms after it are what the key falls back to without it. A
    sensitive key's entry carries no value at all; its synonyms still say where it is set."""
    sensitive = bool(entry["is_sensitive"])
    source = str(entry["config_source"])
    synonyms = list(entry.get("synonyms") or [])
    set_here = source == own_source
    fallback = synonyms[1:] if set_here else synonyms
    if fallback:
        inherited = REDACTED if sensitive else _or_not_set(fallback[0]["value"])
        inherited_source = str(fallback[0]["source"])
    else:
        inherited, inherited_source = NOT_SET, DEFAULT_CONFIG
    return ConfigRow(
        name=str(entry["name"]),
        value=(REDACTED if synonyms else NOT_SET) if sensitive else _or_not_set(entry["value"]),
        source=source,
        default=NOT_SET if default is None or sensitive else default,
        documentation=str(entry.get("documentation") or ""),
        config_type=str(entry.get("config_type") or ""),
        read_only=bool(entry.get("read_only")),
        sensitive=sensitive,
        own_value=entry["value"] if set_here and not sensitive else None,
        set_here=set_here,
        inherited=inherited,
        inherited_source=inherited_source,
    )


def _or_not_set(value: Any) -> str:
    return NOT_SET if value is None else str(value)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigChange:
    """One IncrementalAlterConfigs operation: SET a value or DELETE the key."""

    name: str
    operation: str
    value: str | None = None

    def as_body(self) -> dict[str, Any]:
        return {"name": self.name, "config_operation": self.operation, "value": self.value}


@dataclasses.dataclass(frozen=True, slots=True)
class DiffRow:
    name: str
    operation: str
    old: str
    new: str
    fallback: str  # what a deleted key goes back to
    sensitive: bool

    @property
    def deletes(self) -> bool:
        return self.operation == "DELETE"


def config_diff(changes: Iterable[ConfigChange], rows: Mapping[str, ConfigRow]) -> list[DiffRow]:
    """Per change: the key's value at this level now → its new value (or deleted, and what it
    then falls back to). Sensitive values are never shown, neither the old nor the new one."""
    diff = []
    for change in changes:
        row = rows.get(change.name)
        sensitive = row is not None and row.sensitive
        if row is None:  # a key the registry does not know: the API will say so
            old, fallback = NOT_SET, NOT_SET
        else:
            old = (
                (REDACTED if row.set_here else NOT_SET) if sensitive else _or_not_set(row.own_value)
            )
            fallback = f"{row.inherited} ({row.inherited_source})"
        if change.operation == "DELETE":
            new = DELETED
        else:
            new = REDACTED if sensitive else _or_not_set(change.value)
        diff.append(
            DiffRow(
                name=change.name,
                operation=change.operation,
                old=old,
                new=new,
                fallback=fallback,
                sensitive=sensitive,
            )
        )
    return diff


# --- ACLs ---------------------------------------------------------------------------------
PERMISSION_BADGES = {"ALLOW": "ok", "DENY": "danger"}


@dataclasses.dataclass(frozen=True, slots=True)
class AclRow:
    id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str

    @property
    def badge(self) -> str:
        return PERMISSION_BADGES.get(self.permission_type, "muted")

    @property
    def resource(self) -> str:
        return f"{self.resource_type}:{self.resource_name} ({self.pattern_type})"


@dataclasses.dataclass(frozen=True, slots=True)
class AclGroup:
    """ACLs of one principal, or of one resource pattern."""

    title: str
    params: dict[str, str]  # the filter that shows this group alone
    rows: list[AclRow]


ACL_ROW_FIELDS = ACL_FIELDS  # the API's columns, in its order


def acl_rows(values: Iterable[tuple[Any, ...]]) -> list[AclRow]:
    """Rows from `Acl.objects.values_list(*ACL_ROW_FIELDS)`."""
    return [AclRow(*(str(v) for v in row)) for row in values]


def acl_groups(rows: Iterable[AclRow], by: str) -> list[AclGroup]:
    """Consecutive rows grouped by principal or by resource pattern (rows come ordered so)."""
    groups: list[AclGroup] = []
    for row in rows:
        if by == "principal":
            title, params = row.principal, {"principal": row.principal}
        else:
            title = row.resource
            params = {
                "resource_type": row.resource_type,
                "resource_name": row.resource_name,
                "pattern_type": row.pattern_type,
            }
        if groups and groups[-1].title == title:
            groups[-1].rows.append(row)
        else:
            groups.append(AclGroup(title=title, params=params, rows=[row]))
    return groups


# --- client quotas ------------------------------------------------------------------------
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
    "connection_creation_rate",
)
DEFAULT_ENTITY = "<default>"
# The quota form's fields naming each entity type, and whether it names the default.
ENTITY_FIELDS = {"user": "user", "client-id": "client_id", "ip": "ip"}


def format_quota(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaValue:
    key: str
    value: str
    remove_params: dict[str, str]  # the quota form's fields that remove this key


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaRow:
    entity: list[tuple[str, str]]  # (entity type, name or "<default>")
    values: list[QuotaValue]
    edit_params: dict[str, str]  # the quota form's fields naming this entity

    @property
    def label(self) -> str:
        return ", ".join(f"{kind}={name}" for kind, name in self.entity)


def entity_params(entity: QuotaEntity) -> dict[str, str]:
    params: dict[str, str] = {}
    for entity_type, name in entity:
        field = ENTITY_FIELDS.get(entity_type)
        if field is None:
            continue
        if name is None:
            params[f"{field}_default"] = "on"
        else:
            params[field] = name
    return params


def quota_rows(quotas: Iterable[tuple[QuotaEntity, str, float]]) -> list[QuotaRow]:
    """One row per entity, its keys in Kafka's order; quotas come ordered by entity."""
    by_entity: dict[QuotaEntity, dict[str, float]] = {}
    for entity, key, value in quotas:
        by_entity.setdefault(entity, {})[key] = value
    rows = []
    for entity, values in by_entity.items():
        params = entity_params(entity)
        ordered = sorted(values, key=lambda k: (QUOTA_KEYS.index(k) if k in QUOTA_KEYS else 99, k))
        rows.append(
            QuotaRow(
                entity=[(t, DEFAULT_ENTITY if n is None else n) for t, n in entity],
                values=[
                    QuotaValue(
                        key=key,
                        value=format_quota(values[key]),
                        remove_params={**params, "key": key, "action": "remove"},
                    )
                    for key in ordered
                ],
                edit_params=params,
            )
        )
    return rows


# --- delegation tokens --------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class TokenRow:
    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    issued: str
    expires: str
    max_time: str
    expired: bool


def _principal(kind: Any, name: Any) -> str:
    return f"{kind}:{name}"


def _timestamp(token: Mapping[str, Any], name: str) -> int:
    """DescribeDelegationToken says `expiry_timestamp`, CreateDelegationToken
    `expiry_timestamp_ms` (as Kafka's responses do)."""
    value = token.get(name, token.get(f"{name}_ms", -1))
    return int(value) if isinstance(value, int) else -1


def token_rows(tokens: Iterable[Mapping[str, Any]], now_ms: int) -> list[TokenRow]:
    """Rows from DescribeDelegationToken's `tokens` or a CreateDelegationToken answer; an
    HMAC is never part of a row."""
    return [
        TokenRow(
            token_id=str(token["token_id"]),
            owner=_principal(token["principal_type"], token["principal_name"]),
            requester=_principal(
                token["token_requester_principal_type"], token["token_requester_principal_name"]
            ),
            renewers=[
                _principal(r["principal_type"], r["principal_name"])
                for r in token.get("renewers") or []
            ],
            issued=format_ms(_timestamp(token, "issue_timestamp")),
            expires=format_ms(_timestamp(token, "expiry_timestamp")),
            max_time=format_ms(_timestamp(token, "max_timestamp")),
            expired=_timestamp(token, "expiry_timestamp") < now_ms,
        )
        for token in tokens
    ]


# --- the audit trail ----------------------------------------------------------------------
OUTCOME_BADGES = {"SUCCESS": "ok", "PARTIAL": "warn", "FAILED": "danger", "DENIED": "danger"}


@dataclasses.dataclass(frozen=True, slots=True)
class AuditResource:
    resource_type: str
    resource_name: str
    error_code: int

    @property
    def error(self) -> str:
        return error_name(self.error_code) if self.error_code else ""


@dataclasses.dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    time: str
    principal: str
    client_id: str
    client_host: str
    forwarding_principal: str
    forwarding_host: str
    forwarding_broker_id: int | None
    api: str
    resources: list[AuditResource]
    outcome: str
    badge: str
    error_code: int
    error: str
    http_status: int
    request_id: str
    first_offset: int | None
    last_offset: int | None
    duration_ms: float

    @property
    def forwarded(self) -> bool:
        return bool(self.forwarding_principal)


def _audit_resources(value: Any) -> list[AuditResource]:
    items = value if isinstance(value, list) else []
    return [
        AuditResource(
            resource_type=str(item.get("resource_type") or ""),
            resource_name=str(item.get("resource_name") or ""),
            error_code=_code_of(item),
        )
        for item in items
        if isinstance(item, dict)
    ]


def audit_rows(events: Iterable[AuditEvent]) -> list[AuditRow]:
    return [
        AuditRow(
            id=event.pk,
            time=format_ms(event.time_ms),
            principal=event.principal,
            client_id=event.client_id,
            client_host=event.client_host,
            forwarding_principal=event.forwarding_principal,
            forwarding_host=event.forwarding_host,
            forwarding_broker_id=event.forwarding_broker_id,
            api=event.api,
            resources=_audit_resources(event.resources),
            outcome=event.outcome,
            badge=OUTCOME_BADGES.get(event.outcome, "muted"),
            error_code=event.error_code,
            error=error_name(event.error_code) if event.error_code else "",
            http_status=event.http_status,
            request_id=event.request_id,
            first_offset=event.first_offset,
            last_offset=event.last_offset,
            duration_ms=event.duration_ms,
        )
        for event in events
    ]

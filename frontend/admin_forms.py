"""Forms of the admin pages. Each one turns what the operator typed into the body of a Kafka
admin RPC exactly as the public API takes it; Kafka's own rules (authorization, ranges, entity
combinations, principal types) are the API's and come back as Kafka errors."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django import forms

from audit.models import Outcome
from controlplane.controller.acls.bindings import CLUSTER_NAME, WILDCARD_HOST, parse_principal
from controlplane.controller.api_keys import ADMIN_APIS
from controlplane.controller.config_schema import ConfigDef
from controlplane.controller.errors import ApiError
from frontend.admin_tables import QUOTA_KEYS, ConfigChange, ConfigRow

NAME_MAX = 255  # the ACL columns; Kafka's names fit
CONFIG_NAME_MAX = 1000
CONFIG_VALUE_MAX = 100_000
MAX_CHANGES = 1000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
SET, DELETE = "SET", "DELETE"


def _choices(names: Iterable[str]) -> list[tuple[str, str]]:
    return [(name, name) for name in names]


# --- configs ------------------------------------------------------------------------------
class ConfigEditForm(forms.Form):
    """One text box per editable key (prefilled with the value set at this level) and, for a
    key set at this level, a reset box. A changed value is a SET, a reset or an emptied value
    a DELETE; a sensitive key is never prefilled, so typing a value sets it."""

    def __init__(
        self, rows: list[ConfigRow], definitions: dict[str, ConfigDef], *args: Any, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.changes: list[ConfigChange] = []  # what the form asks for, once it is valid
        self.config_rows = [row for row in rows if not row.read_only and row.name in definitions]
        self.definitions = definitions
        for row in self.config_rows:
            widget = (
                forms.PasswordInput(attrs={"autocomplete": "new-password"}, render_value=False)
                if row.sensitive
                else forms.TextInput(attrs={"placeholder": row.inherited, "spellcheck": "false"})
            )
            self.fields[self.value_field(row.name)] = forms.CharField(
                label=row.name,
                required=False,
                max_length=CONFIG_VALUE_MAX,
                initial=row.own_value or "",
                widget=widget,
            )
            self.fields[self.delete_field(row.name)] = forms.BooleanField(
                label=f"Reset {row.name}", required=False
            )

    @staticmethod
    def value_field(name: str) -> str:
        return f"value__{name}"

    @staticmethod
    def delete_field(name: str) -> str:
        return f"delete__{name}"

    def edit_rows(self) -> list[tuple[ConfigRow, forms.BoundField, forms.BoundField | None]]:
        """Each key with its value box and, when it is set at this level, its reset box."""
        return [
            (
                row,
                self[self.value_field(row.name)],
                self[self.delete_field(row.name)] if row.set_here else None,
            )
            for row in self.config_rows
        ]

    def _change_of(self, row: ConfigRow, value: str, reset: bool) -> ConfigChange | None:
        if reset:
            return ConfigChange(row.name, DELETE) if row.set_here else None
        if row.sensitive:  # never prefilled: a value typed in is a new one
            return ConfigChange(row.name, SET, value) if value else None
        if value == (row.own_value or ""):
            return None
        if not value:  # emptied: the value set here goes, the key falls back
            return ConfigChange(row.name, DELETE)
        return ConfigChange(row.name, SET, value)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        changes = []
        for row in self.config_rows:
            value = cleaned.get(self.value_field(row.name)) or ""
            change = self._change_of(row, value, bool(cleaned.get(self.delete_field(row.name))))
            if change is None:
                continue
            if change.operation == SET:
                try:
                    self.definitions[row.name].parse(value)
                except ApiError as error:  # Kafka's INVALID_CONFIG wording (secrets hidden)
                    self.add_error(self.value_field(row.name), error.message or error.error.name)
                    continue
            changes.append(change)
        if not changes and not self.errors:
            raise forms.ValidationError("Nothing to change: edit a value or reset a key.")
        self.changes = changes
        return cleaned


def encode_changes(changes: Iterable[ConfigChange]) -> str:
    return json.dumps([change.as_body() for change in changes], separators=(",", ":"))


class ConfigApplyForm(forms.Form):
    """The confirmed changes as they were shown in the diff, and a fingerprint of the configs
    the diff was computed from (a change in between is shown again before it is applied)."""

    changes = forms.CharField(widget=forms.HiddenInput, max_length=2 * MAX_CHANGES * 101_000)
    fingerprint = forms.CharField(widget=forms.HiddenInput, max_length=128, required=False)

    error_messages = {"malformed": "The confirmed changes are malformed; edit the configs again."}

    def clean_changes(self) -> list[ConfigChange]:
        try:
            items = json.loads(self.cleaned_data["changes"])
        except ValueError:
            items = None
        if not isinstance(items, list) or not 0 < len(items) <= MAX_CHANGES:
            raise forms.ValidationError(self.error_messages["malformed"], code="malformed")
        changes = [self._change(item) for item in items]
        if len({change.name for change in changes}) != len(changes):
            raise forms.ValidationError(self.error_messages["malformed"], code="malformed")
        return changes

    def _change(self, item: Any) -> ConfigChange:
        malformed = forms.ValidationError(self.error_messages["malformed"], code="malformed")
        if not isinstance(item, dict):
            raise malformed
        name, operation, value = item.get("name"), item.get("config_operation"), item.get("value")
        if not isinstance(name, str) or not 0 < len(name) <= CONFIG_NAME_MAX:
            raise malformed
        if operation == DELETE and value is None:
            return ConfigChange(name, DELETE)
        if operation == SET and isinstance(value, str) and len(value) <= CONFIG_VALUE_MAX:
            return ConfigChange(name, SET, value)
        raise malformed


# --- ACLs ---------------------------------------------------------------------------------
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
OPERATIONS = (
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
)
PERMISSION_TYPES = ("ALLOW", "DENY")


def _name_field(label: str, **kwargs: Any) -> forms.CharField:
    return forms.CharField(label=label, max_length=NAME_MAX, **kwargs)


def _principal_field() -> forms.CharField:
    return _name_field(
        "Principal", widget=forms.TextInput(attrs={"placeholder": "User:alice"}), initial="User:"
    )


def _host_field() -> forms.CharField:
    return _name_field("Host", initial=WILDCARD_HOST, help_text="* is every host")


def _clean_principal(value: str) -> str:
    try:
        parse_principal(value)
    except ValueError as error:
        raise forms.ValidationError(f"Invalid principal {value!r}: {error}") from None
    return value


class AclForm(forms.Form):
    """One ACL binding: Kafka's seven fields (CreateAcls' creation, DeleteAcls' exact filter)."""

    resource_type = forms.ChoiceField(label="Resource type", choices=_choices(RESOURCE_TYPES))
    resource_name = _name_field(
        "Resource name",
        widget=forms.TextInput(attrs={"placeholder": f"orders, * or {CLUSTER_NAME}"}),
    )
    pattern_type = forms.ChoiceField(label="Pattern type", choices=_choices(PATTERN_TYPES))
    principal = _principal_field()
    host = _host_field()
    operation = forms.ChoiceField(label="Operation", choices=_choices(OPERATIONS))
    permission_type = forms.ChoiceField(label="Permission", choices=_choices(PERMISSION_TYPES))

    def clean_principal(self) -> str:
        return _clean_principal(self.cleaned_data["principal"])

    def creation(self) -> dict[str, str]:
        return {name: self.cleaned_data[name] for name in self.fields}

    def deletion_filter(self) -> dict[str, str]:
        """The DeleteAcls filter that matches exactly this binding (LITERAL and PREFIXED
        filters match their own pattern type and name only)."""
        data = self.cleaned_data
        return {
            "resource_type_filter": data["resource_type"],
            "resource_name_filter": data["resource_name"],
            "pattern_type_filter": data["pattern_type"],
            "principal_filter": data["principal"],
            "host_filter": data["host"],
            "operation": data["operation"],
            "permission_type": data["permission_type"],
        }


PRODUCER, CONSUMER = "producer", "consumer"
# What `kafka-acls --producer` / `--consumer` grant: (resource, operation).
CLIENT_GRANTS = {
    PRODUCER: (("TOPIC", "WRITE"), ("TOPIC", "DESCRIBE"), ("TOPIC", "CREATE")),
    CONSUMER: (("TOPIC", "READ"), ("TOPIC", "DESCRIBE"), ("GROUP", "READ")),
}


class ClientAclForm(forms.Form):
    """kafka-acls' --producer / --consumer: the ALLOW ACLs a producer or a consumer needs."""

    role = forms.ChoiceField(label="Role", choices=[(PRODUCER, "producer"), (CONSUMER, "consumer")])
    principal = _principal_field()
    host = _host_field()
    topic = _name_field("Topic")
    group = _name_field("Consumer group", required=False, help_text="consumers only")
    pattern_type = forms.ChoiceField(
        label="Pattern type",
        choices=_choices(PATTERN_TYPES),
        help_text="for the topic and the group",
    )

    def clean_principal(self) -> str:
        return _clean_principal(self.cleaned_data["principal"])

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("role") == CONSUMER and not cleaned.get("group"):
            self.add_error("group", "A consumer needs its consumer group.")
        return cleaned

    def creations(self) -> list[dict[str, str]]:
        data = self.cleaned_data
        names = {"TOPIC": data["topic"], "GROUP": data["group"]}
        return [
            {
                "resource_type": resource_type,
                "resource_name": names[resource_type],
                "pattern_type": data["pattern_type"],
                "principal": data["principal"],
                "host": data["host"],
                "operation": operation,
                "permission_type": "ALLOW",
            }
            for resource_type, operation in CLIENT_GRANTS[data["role"]]
        ]


GROUP_BY = (("principal", "principal"), ("resource", "resource"))


class AclFilterForm(forms.Form):
    """The ACL list's filters and grouping (every field optional)."""

    principal = _name_field("Principal", required=False)
    resource_type = forms.ChoiceField(
        label="Resource type", required=False, choices=[("", "any"), *_choices(RESOURCE_TYPES)]
    )
    resource_name = _name_field("Resource name", required=False)
    pattern_type = forms.ChoiceField(
        label="Pattern", required=False, choices=[("", "any"), *_choices(PATTERN_TYPES)]
    )
    operation = forms.ChoiceField(
        label="Operation", required=False, choices=[("", "any"), *_choices(OPERATIONS)]
    )
    permission_type = forms.ChoiceField(
        label="Permission", required=False, choices=[("", "any"), *_choices(PERMISSION_TYPES)]
    )
    group = forms.ChoiceField(label="Group by", required=False, choices=GROUP_BY)

    EXACT = ("principal", "resource_type", "resource_name", "pattern_type", "operation")

    def filters(self) -> dict[str, str]:
        """Exact field values to filter the ACL projection by (only the valid, given ones)."""
        if not self.is_valid():
            return {}
        fields = (*self.EXACT, "permission_type")
        return {name: self.cleaned_data[name] for name in fields if self.cleaned_data.get(name)}

    def group_by(self) -> str:
        value = self.cleaned_data.get("group") if self.is_valid() else None
        return value or "principal"


# --- client quotas ------------------------------------------------------------------------
SET_QUOTA, REMOVE_QUOTA = "set", "remove"
# (entity type, the form's name field, its default box)
QUOTA_ENTITIES = (
    ("user", "user", "user_default"),
    ("client-id", "client_id", "client_id_default"),
    ("ip", "ip", "ip_default"),
)


def _entity_name_field(label: str) -> forms.CharField:
    return forms.CharField(label=label, required=False, max_length=CONFIG_NAME_MAX)


class QuotaForm(forms.Form):
    """One quota value of one entity (user, client id, both, or an ip; a name or the
    default), set or removed: AlterClientQuotas with one entry and one op."""

    user = _entity_name_field("User")
    user_default = forms.BooleanField(label="default user", required=False)
    client_id = _entity_name_field("Client id")
    client_id_default = forms.BooleanField(label="default client id", required=False)
    ip = _entity_name_field("IP")
    ip_default = forms.BooleanField(label="default ip", required=False)
    key = forms.ChoiceField(label="Quota", choices=_choices(QUOTA_KEYS))
    value = forms.FloatField(label="Value", required=False)
    action = forms.ChoiceField(
        label="Action",
        choices=[(SET_QUOTA, "set"), (REMOVE_QUOTA, "remove")],
        initial=SET_QUOTA,
        widget=forms.RadioSelect,
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for _, name_field, default_field in QUOTA_ENTITIES:
            if cleaned.get(name_field) and cleaned.get(default_field):
                self.add_error(name_field, "Give a name or tick default, not both.")
        if not self.entity():
            raise forms.ValidationError("Name a user, a client id or an IP (or their default).")
        if cleaned.get("action") == SET_QUOTA and cleaned.get("value") is None:
            self.add_error("value", "Setting a quota needs its value.")
        return cleaned

    def entity(self) -> list[dict[str, str | None]]:
        data = getattr(self, "cleaned_data", {})
        entity: list[dict[str, str | None]] = []
        for entity_type, name_field, default_field in QUOTA_ENTITIES:
            if data.get(default_field):
                entity.append({"entity_type": entity_type, "entity_name": None})
            elif data.get(name_field):
                entity.append({"entity_type": entity_type, "entity_name": data[name_field]})
        return entity

    def entry(self) -> dict[str, Any]:
        remove = self.cleaned_data["action"] == REMOVE_QUOTA
        value = 0.0 if remove else float(self.cleaned_data["value"])
        return {
            "entity": self.entity(),
            "ops": [{"key": self.cleaned_data["key"], "value": value, "remove": remove}],
        }


class QuotaFilterForm(forms.Form):
    entity_type = forms.ChoiceField(
        label="Entity",
        required=False,
        choices=[("", "any"), ("user", "user"), ("client-id", "client-id"), ("ip", "ip")],
    )

    def chosen_entity_type(self) -> str:
        return str(self.cleaned_data.get("entity_type") or "") if self.is_valid() else ""


# --- delegation tokens --------------------------------------------------------------------
def _period_field(label: str, help_text: str) -> forms.IntegerField:
    return forms.IntegerField(
        label=label,
        required=False,
        min_value=INT64_MIN,
        max_value=INT64_MAX,
        help_text=help_text,
    )


def _hmac_field() -> forms.CharField:
    # A password box: the HMAC is a secret and is never put back into a page.
    return forms.CharField(
        label="HMAC",
        max_length=1000,
        widget=forms.PasswordInput(attrs={"autocomplete": "off"}, render_value=False),
        help_text="the token's HMAC, as shown once when it was created",
    )


def _principal_parts(value: str) -> dict[str, str]:
    principal_type, name = parse_principal(value)
    return {"principal_type": principal_type, "principal_name": name}


class TokenCreateForm(forms.Form):
    owner = _name_field(
        "Owner",
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "User:alice"}),
        help_text="empty: yourself; another owner needs CREATE_TOKENS on that USER",
    )
    renewers = forms.CharField(
        label="Renewers",
        required=False,
        max_length=20_000,
        widget=forms.TextInput(attrs={"placeholder": "User:bob, User:carol"}),
        help_text="principals that may renew the token, comma-separated",
    )
    max_lifetime_ms = _period_field("Max lifetime (ms)", "empty: delegation.token.max.lifetime.ms")

    def clean_owner(self) -> dict[str, str] | None:
        owner = self.cleaned_data["owner"]
        if not owner:
            return None
        try:
            return _principal_parts(owner)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_renewers(self) -> list[dict[str, str]]:
        renewers = []
        for item in self.cleaned_data["renewers"].split(","):
            if not item.strip():
                continue
            try:
                renewers.append(_principal_parts(item.strip()))
            except ValueError as error:
                raise forms.ValidationError(str(error)) from None
        return renewers

    def body(self) -> dict[str, Any]:
        owner = self.cleaned_data["owner"]
        lifetime = self.cleaned_data["max_lifetime_ms"]
        return {
            "owner_principal_type": owner["principal_type"] if owner else None,
            "owner_principal_name": owner["principal_name"] if owner else None,
            "renewers": self.cleaned_data["renewers"],
            "max_lifetime_ms": -1 if lifetime is None else lifetime,
        }


class TokenRenewForm(forms.Form):
    hmac = _hmac_field()
    renew_period_ms = _period_field("Renew period (ms)", "empty: delegation.token.expiry.time.ms")

    def body(self) -> dict[str, Any]:
        period = self.cleaned_data["renew_period_ms"]
        return {
            "hmac": self.cleaned_data["hmac"],
            "renew_period_ms": -1 if period is None else period,
        }


class TokenExpireForm(forms.Form):
    hmac = _hmac_field()
    expiry_time_period_ms = _period_field(
        "Expire in (ms)", "empty or negative: expire it now (it is removed)"
    )

    def body(self) -> dict[str, Any]:
        period = self.cleaned_data["expiry_time_period_ms"]
        return {
            "hmac": self.cleaned_data["hmac"],
            "expiry_time_period_ms": -1 if period is None else period,
        }


# --- the audit trail's filter choices -----------------------------------------------------
AUDIT_APIS = sorted([*ADMIN_APIS, "Envelope"])
AUDIT_OUTCOMES = [value for value, _ in Outcome.choices]

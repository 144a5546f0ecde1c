"""The ACL forms: one binding, a producer's or a consumer's ACLs, and the list's filters."""

from __future__ import annotations

from typing import Any

from django import forms

from controlplane.controller.acls.bindings import CLUSTER_NAME, WILDCARD_HOST, parse_principal
from frontend.forms.fields import choices, name_field

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


def _principal_field() -> forms.CharField:
    return name_field(
        "Principal", widget=forms.TextInput(attrs={"placeholder": "User:alice"}), initial="User:"
    )


def _host_field() -> forms.CharField:
    return name_field("Host", initial=WILDCARD_HOST, help_text="* is every host")


def _clean_principal(value: str) -> str:
    """Kafka's principal format, with a name: the form starts at `User:`, and a bare `User:`
    submitted as it is would grant an empty name (Kafka allows it, no one means it)."""
    try:
        _, name = parse_principal(value)
    except ValueError as error:
        raise forms.ValidationError(f"Invalid principal {value!r}: {error}") from None
    if not name.strip():
        raise forms.ValidationError(
            f"The principal {value!r} names nobody: give a name after the colon "
            "(User:alice), or User:* for every user."
        )
    return value


class AclForm(forms.Form):
    """One ACL binding: Kafka's seven fields (CreateAcls' creation, DeleteAcls' exact filter)."""

    resource_type = forms.ChoiceField(label="Resource type", choices=choices(RESOURCE_TYPES))
    resource_name = name_field(
        "Resource name",
        widget=forms.TextInput(attrs={"placeholder": f"orders, * or {CLUSTER_NAME}"}),
    )
    pattern_type = forms.ChoiceField(label="Pattern type", choices=choices(PATTERN_TYPES))
    principal = _principal_field()
    host = _host_field()
    operation = forms.ChoiceField(label="Operation", choices=choices(OPERATIONS))
    permission_type = forms.ChoiceField(label="Permission", choices=choices(PERMISSION_TYPES))

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


class AclDeleteForm(AclForm):
    """The ACL to delete, exactly as it is: one made for an empty name can be deleted too."""

    def clean_principal(self) -> str:
        value = str(self.cleaned_data["principal"])
        try:
            parse_principal(value)
        except ValueError as error:
            raise forms.ValidationError(f"Invalid principal {value!r}: {error}") from None
        return value


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
    topic = name_field("Topic")
    group = name_field("Consumer group", required=False, help_text="consumers only")
    pattern_type = forms.ChoiceField(
        label="Pattern type",
        choices=choices(PATTERN_TYPES),
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

    principal = name_field("Principal", required=False)
    resource_type = forms.ChoiceField(
        label="Resource type", required=False, choices=[("", "any"), *choices(RESOURCE_TYPES)]
    )
    resource_name = name_field("Resource name", required=False)
    pattern_type = forms.ChoiceField(
        label="Pattern",
        required=False,
        # MATCH (Kafka's): every ACL that applies to the resource name, literal, prefixed or `*`
        choices=[("", "any"), *choices(PATTERN_TYPES), ("MATCH", "MATCH (all that apply)")],
    )
    operation = forms.ChoiceField(
        label="Operation", required=False, choices=[("", "any"), *choices(OPERATIONS)]
    )
    permission_type = forms.ChoiceField(
        label="Permission", required=False, choices=[("", "any"), *choices(PERMISSION_TYPES)]
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

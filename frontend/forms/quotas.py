"""The client quota forms: set or remove one value of one entity, and the list's filter."""

from __future__ import annotations

from typing import Any

from django import forms

from frontend.forms.fields import CONFIG_NAME_MAX, choices
from frontend.tables.quotas import QUOTA_KEYS

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
    key = forms.ChoiceField(label="Quota", choices=choices(QUOTA_KEYS))
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


class EffectiveQuotaForm(forms.Form):
    """Which quotas apply to a (user, client id) pair: what GET
    /api/v1/client-quotas/effective answers. Names are kept as typed (a user or client id may
    have spaces at its ends), as the API keeps them."""

    user = forms.CharField(label="User", max_length=CONFIG_NAME_MAX, strip=False)
    client_id = forms.CharField(label="Client id", max_length=CONFIG_NAME_MAX, strip=False)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name in ("user", "client_id"):
            if "\x00" in str(cleaned.get(name) or ""):
                self.add_error(name, "A name cannot hold a NUL character.")
        return cleaned

"""The config forms: the edit form (what to change), then the confirmed changes."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django import forms

from controlplane.controller.config_schema import ConfigDef
from controlplane.controller.errors import ApiError
from frontend.forms.fields import CONFIG_NAME_MAX
from frontend.tables.configs import ConfigChange, ConfigRow

CONFIG_VALUE_MAX = 100_000
MAX_CHANGES = 1000
SET, DELETE = "SET", "DELETE"


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
        except (ValueError, RecursionError):  # nested too deep is malformed too, never a 500
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

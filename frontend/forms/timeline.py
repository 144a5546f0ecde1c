"""The timeline's filters: kind, broker, topic (a deleted one by its name), incidents only."""

from __future__ import annotations

from typing import Any

from django import forms

from timeline.selectors import timeline_kinds

TOPIC_NAME_MAX = 249


class TimelineFilterForm(forms.Form):
    kind = forms.ChoiceField(label="Kind", required=False)
    broker = forms.IntegerField(
        label="Broker",
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        widget=forms.NumberInput(attrs={"placeholder": "any", "min": 0}),
    )
    topic = forms.CharField(
        label="Topic",
        required=False,
        max_length=TOPIC_NAME_MAX,
        widget=forms.TextInput(attrs={"placeholder": "any, deleted ones too"}),
    )
    incidents = forms.BooleanField(label="Incidents only", required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.fields["kind"]
        assert isinstance(kind, forms.ChoiceField)
        kind.choices = [("", "any"), *timeline_kinds()]

    def values(self) -> dict[str, Any]:
        """The valid filters (an invalid one is dropped, and said on the form)."""
        if not self.is_bound:
            return {}
        self.is_valid()
        data = getattr(self, "cleaned_data", {})
        return {
            "kinds": [data["kind"]] if data.get("kind") else [],
            "broker_id": data.get("broker"),
            "topic": (data.get("topic") or "").strip(),
            "incidents_only": bool(data.get("incidents")),
        }

    @property
    def active(self) -> bool:
        values = self.values()
        return bool(
            values
            and (
                values["kinds"]
                or values["broker_id"] is not None
                or values["topic"]
                or values["incidents_only"]
            )
        )

"""The filter of the replica incidents page."""

from __future__ import annotations

from django import forms


class IncidentFilterForm(forms.Form):
    """The incidents page's filter: incidents where a broker's replica went offline."""

    broker = forms.IntegerField(
        label="Broker",
        required=False,
        min_value=0,
        max_value=2**31 - 1,
        widget=forms.NumberInput(attrs={"placeholder": "any", "min": 0}),
    )

    def broker_id(self) -> int | None:
        if not self.is_valid():
            return None
        value = self.cleaned_data.get("broker")
        return int(value) if value is not None else None

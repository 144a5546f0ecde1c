"""The delegation token forms: create, renew and expire. An HMAC typed in is never put back
into a page."""

from __future__ import annotations

from typing import Any

from django import forms

from controlplane.controller.acls.bindings import parse_principal
from frontend.forms.fields import name_field

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


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
    owner = name_field(
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

"""The login form: a principal's name and its bearer token."""

from __future__ import annotations

import hmac
from typing import Any

from django import forms

from controlplane.principals import AuthenticatedPrincipal, principal_by_token

PRINCIPAL_PREFIX = "User:"


class LoginForm(forms.Form):
    name = forms.CharField(
        label="Principal",
        max_length=len(PRINCIPAL_PREFIX) + 200,
        strip=True,
        widget=forms.TextInput(
            attrs={"autocomplete": "username", "autofocus": True, "placeholder": "User:alice"}
        ),
    )
    token = forms.CharField(
        label="Token",
        max_length=512,
        strip=True,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    error_messages = {"invalid_login": "Invalid principal name or token."}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.principal: AuthenticatedPrincipal | None = None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        name, token = cleaned.get("name"), cleaned.get("token")
        if not name or not token:
            return cleaned
        name = name.removeprefix(PRINCIPAL_PREFIX)
        principal = principal_by_token(token)
        # Compare the name even when the token matched nobody, so both refusals cost the same.
        expected = principal.name if principal is not None else "\x00"
        if not hmac.compare_digest(expected.encode(), name.encode()) or principal is None:
            raise forms.ValidationError(self.error_messages["invalid_login"], code="invalid_login")
        self.principal = principal
        return cleaned

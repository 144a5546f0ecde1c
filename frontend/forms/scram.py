"""The SCRAM user forms (KIP-554): set a user's credential for one mechanism, or delete one. The
rules are the API's own (the controller core's checks of a name, a mechanism and an iteration
count), so the form refuses exactly what AlterUserScramCredentials would, with the same words.
The password is never put back into a page: the form turns it into what Kafka's admin client
sends (a fresh salt and the salted password), and nothing else of it leaves the form."""

from __future__ import annotations

import base64
import os
from typing import Any

from django import forms

from controlplane.controller.errors import ApiError
from controlplane.controller.scram.control import check_iterations, check_name_and_mechanism
from controlplane.controller.scram.formatter import MAX_ITERATIONS, MIN_ITERATIONS, salted_password
from controlplane.controller.scram_records import MECHANISMS
from frontend.forms.fields import choices, name_field

SALT_BYTES = 32  # what Kafka's admin client draws (ScramFormatter.secureRandomBytes)
PASSWORD_MAX = 1000


def _kafka_error(error: ApiError) -> forms.ValidationError:
    return forms.ValidationError(f"{error.error.name}: {error.message}")


def _password_field(label: str) -> forms.CharField:
    return forms.CharField(
        label=label,
        max_length=PASSWORD_MAX,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}, render_value=False),
    )


class ScramUserForm(forms.Form):
    name = name_field("User", help_text="the principal User:<name> logs in as")
    mechanism = forms.ChoiceField(label="Mechanism", choices=choices(MECHANISMS))
    iterations = forms.IntegerField(
        label="Iterations",
        initial=8192,
        help_text=f"{MIN_ITERATIONS} to {MAX_ITERATIONS}, as Kafka allows",
    )
    password = _password_field("Password")
    confirm_password = _password_field("Password again")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            if "name" in data and "mechanism" in data:
                check_name_and_mechanism(data["name"], data["mechanism"])
            if data.get("iterations") is not None:
                check_iterations(int(data["iterations"]))
        except ApiError as error:
            raise _kafka_error(error) from None
        if data.get("password") != data.get("confirm_password"):
            raise forms.ValidationError("The two passwords differ.")
        return data

    def body(self) -> dict[str, Any]:
        """AlterUserScramCredentials' body, as Kafka's admin client builds it for a password."""
        data = self.cleaned_data
        salt = os.urandom(SALT_BYTES)
        salted = salted_password(data["mechanism"], data["password"], salt, data["iterations"])
        upsertion = {
            "name": data["name"],
            "mechanism": data["mechanism"],
            "iterations": data["iterations"],
            "salt": base64.b64encode(salt).decode("ascii"),
            "salted_password": base64.b64encode(salted).decode("ascii"),
        }
        return {"deletions": [], "upsertions": [upsertion]}


class ScramDeleteForm(forms.Form):
    name = name_field("User")
    mechanism = forms.ChoiceField(label="Mechanism", choices=choices(MECHANISMS))

    def body(self) -> dict[str, Any]:
        deletion = {"name": self.cleaned_data["name"], "mechanism": self.cleaned_data["mechanism"]}
        return {"deletions": [deletion], "upsertions": []}

"""The one confirmation pattern of every destructive action (deleting a topic, adding partitions,
elections, unregistering a broker, deleting an ACL, removing a quota, expiring a token).

An action's link or form leads to its confirmation page, which says what will happen and what
follows from it, and carries the one button that does it. That button's form sends `confirm`:
"yes", or the typed name where the action asks for it (a topic's deletion, an unclean election).
A POST without the right `confirm` acts on nothing: it answers the confirmation page instead, so
no destructive write happens on one click, from a stale page or a hand-made request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse

from frontend.tables.common import KafkaProblem
from frontend.views.base import render_admin
from frontend.writes import RpcAnswer, refusal_status

CONFIRM_FIELD = "confirm"
CONFIRMED = "yes"


@dataclasses.dataclass(frozen=True, slots=True)
class Confirmation:
    title: str  # "Delete topic orders?"
    action: str  # where the button posts
    button: str  # "Delete the topic"
    back_url: str
    consequences: Sequence[str] = ()
    facts: Sequence[tuple[str, str]] = ()  # what it acts on: (label, value)
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # posted as they are
    typed: str = ""  # what the operator types to confirm ("" : the button is enough)
    loud: bool = False  # data may be lost: said in red
    form: forms.Form | None = None  # inputs the operator fills in on this page (an HMAC)
    # What the action would do, shown before its button (an election's plan): the template
    # is included with `preview` as its context.
    preview_template: str = ""
    preview: Any = None

    @property
    def expected(self) -> str:
        return self.typed or CONFIRMED


def is_confirmed(request: HttpRequest, confirmation: Confirmation) -> bool:
    return request.POST.get(CONFIRM_FIELD, "") == confirmation.expected


def confirm_page(
    request: HttpRequest,
    confirmation: Confirmation,
    *,
    section: str,
    problems: Sequence[KafkaProblem] = (),
    status: int = 200,
    mistyped: bool = False,
) -> HttpResponse:
    return render_admin(
        request,
        title=confirmation.title,
        section=section,
        fragment="frontend/partials/confirm.html",
        context={
            "confirmation": confirmation,
            "problems": list(problems),
            "mistyped": mistyped,
            "confirm_field": CONFIRM_FIELD,
            "confirmed_value": CONFIRMED,
        },
        status=status,
        refresh=False,
    )


def refused(
    request: HttpRequest,
    confirmation: Confirmation,
    *,
    section: str,
    answer: RpcAnswer,
    problems: Sequence[KafkaProblem],
) -> HttpResponse:
    """The confirmation again, with the errors the API answered (and its status)."""
    return confirm_page(
        request,
        confirmation,
        section=section,
        problems=problems,
        status=refusal_status(answer, list(problems)),
    )


def ask_again(request: HttpRequest, confirmation: Confirmation, *, section: str) -> HttpResponse:
    """A POST that did not confirm: the confirmation again (saying a typed name was wrong)."""
    mistyped = bool(confirmation.typed) and CONFIRM_FIELD in request.POST
    return confirm_page(request, confirmation, section=section, mistyped=mistyped)

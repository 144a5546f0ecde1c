"""Secrets on their way to the controller: never in a worker's log."""

from __future__ import annotations

import logging
import uuid

import pytest

from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent, RequestContext
from controlplane.runtime.lease import now_ms
from controlplane.tasks import controller_event

pytestmark = pytest.mark.django_db


def test_the_worker_logs_neither_a_tasks_answer_nor_its_secret(
    tokens: dict[str, str], token_secret_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    event = ControllerEvent(
        "CreateDelegationToken",
        {
            "owner_principal_type": None,
            "owner_principal_name": None,
            "renewers": [],
            "max_lifetime_ms": -1,
            "requester": "User:admin",
        },
        RequestContext(principal="User:admin", request_id=str(uuid.uuid4())),
        deadline_ms=now_ms() + 10_000,
        sent_ms=now_ms(),
    )
    # Run through Celery's tracer, which writes the worker's "succeeded" line.
    answer = ControllerAnswer.from_wire(controller_event.apply(args=[event.to_wire()]).get())
    result = answer.response
    assert result["error_code"] == 0 and result["hmac"]
    assert "succeeded in" in caplog.text
    assert result["hmac"] not in caplog.text
    assert token_secret_key not in caplog.text

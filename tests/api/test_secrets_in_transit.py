"""Secrets on their way to the controller: never in a worker's log."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent, RequestContext
from controlplane.runtime.lease import now_ms
from controlplane.tasks import controller_event

pytestmark = pytest.mark.django_db


def test_the_worker_logs_neither_a_tasks_answer_nor_its_secret(
    api: Any, tokens: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    status, answer = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {
                            "name": "delegation.token.secret.key",
                            "config_operation": "SET",
                            "value": "k" * 20,
                        }
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200 and answer["responses"][0]["error_code"] == 0
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
    assert "k" * 20 not in caplog.text

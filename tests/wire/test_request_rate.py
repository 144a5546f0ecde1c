"""Issue 34: the request rate per principal holds on the Kafka protocol's door too (1,000
denied CreateAcls from ANONYMOUS took 1.85 s and wrote 1,000 audit rows): past it the
connection waits, and past a bound per address denied requests are counted, not audited."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.errors import ErrorCode

from audit.models import AuditEvent
from audit.services import DENIALS, DENIALS_NOT_AUDITED
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import RawClient
from tests.wire.test_server import describe_acls
from wire import metrics

pytestmark = pytest.mark.django_db(transaction=True)


def create_acl() -> Any:
    return create_acls_v3.CreateAclsRequest(
        creations=(
            create_acls_v3.AclCreation(
                resource_type=2,  # TOPIC
                resource_name="t",
                resource_pattern_type=3,  # LITERAL
                principal="User:ANONYMOUS",
                host="*",
                operation=2,  # ALL
                permission_type=3,  # ALLOW
            ),
        )
    )


def test_anonymous_requests_past_the_rate_wait_and_are_all_answered(
    wire_listener: RunningListener, settings: Any
) -> None:
    settings.CP_API_RATE_LIMIT, settings.CP_API_RATE_BURST = 20.0, 5.0
    throttled = metrics.THROTTLED.labels("PLAINTEXT")
    before = throttled._value.get()
    with RawClient(wire_listener.host, wire_listener.port) as client:
        for _ in range(15):
            answer = client.request(describe_acls())
            assert answer.error_code in (ErrorCode.none, ErrorCode.cluster_authorization_failed)
    assert throttled._value.get() > before  # past the burst, the connection waited its turn


def test_denied_requests_past_a_bound_per_address_are_counted_not_audited(
    wire_listener: RunningListener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(DENIALS, "per_minute", 5)
    not_audited = DENIALS_NOT_AUDITED._value.get()
    with RawClient(wire_listener.host, wire_listener.port) as client:
        for _ in range(12):
            answer = client.request(create_acl())
            assert answer.results[0].error_code == ErrorCode.cluster_authorization_failed
    denied = AuditEvent.objects.filter(api="CreateAcls", outcome="DENIED")
    assert denied.count() == 5
    assert DENIALS_NOT_AUDITED._value.get() == not_audited + 7

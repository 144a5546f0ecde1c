"""Who may wait on the REST metadata long-poll (`GET /internal/v1/metadata?wait_ms=...`), on a
real internal listener: a caller the listener does not know (no token, a wrong one) or may not
serve (no CLUSTER_ACTION), or a fetch it cannot read, is answered at once with its error, never
parked. A broker's fetch is answered as the Raft leader answers an observer's, whatever that
broker's state: records at once, a wait for a commit at the log's end, for a fenced broker (it
catches up by fetching) and one never registered alike. Every fetch here may wait 60 s and the
client reads for 10 s at most, so a request parked where it should be answered fails the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controlplane.principals import principal_create
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.notifier import notifier
from devtools.stack import wait_for
from tests.api.live_listener import LiveListener, live_internal_listener
from tests.api.test_internal_listener_heartbeats import InFlight

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = "wait_ms=60000"


@pytest.fixture
def listener(settings: Any, transactional_db: None) -> Iterator[LiveListener]:
    with live_internal_listener(
        settings, threads=2, fetch_threads=2, heartbeat_threads=2
    ) as running:
        yield running


def long_poll(listener: LiveListener, token: str | None, query: str) -> tuple[int, Any]:
    answer = listener.request(
        "GET", f"/internal/v1/metadata?{query}&{WAIT}", token=token, timeout_s=10
    )
    assert notifier.parked == 0
    return answer


def test_callers_it_does_not_know_or_may_not_serve_are_answered_at_once(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1, unfence=True)
    head = f"after_offset={cluster_read().last_offset}"
    status, body = long_poll(listener, None, head)
    assert (status, body["error"]) == (401, "SASL_AUTHENTICATION_FAILED")
    status, body = long_poll(listener, "not-a-token", head)
    assert (status, body["error"]) == (401, "SASL_AUTHENTICATION_FAILED")
    status, body = long_poll(listener, tokens["alice"], head)  # no CLUSTER_ACTION
    assert (status, body["error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")
    for junk in ("after_offset=-2", "after_offset=x", "max_records=0", "max_bytes=0"):
        status, body = long_poll(listener, tokens["broker"], junk)
        assert (status, body["error"]) == (400, "INVALID_REQUEST"), junk


@pytest.mark.parametrize("broker", ["fenced", "never-registered"])
def test_a_brokers_long_poll_is_answered_as_an_observers_whatever_its_state(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int], broker: str
) -> None:
    register(1, unfence=True)
    register(2)  # fenced: never heartbeated
    broker_id = 2 if broker == "fenced" else 77
    name = f"kafka-broker-{broker_id}"  # a principal that speaks for that broker only
    token = principal_create(name=name, broker=True)
    end = cluster_read().last_offset
    status, behind = long_poll(listener, token, "after_offset=-1")
    assert status == 200 and len(behind["records"]) == end + 1
    # At the log's end: it waits for the next commit, as every broker's fetch does.
    polls = InFlight(
        1,
        lambda: listener.request(
            "GET", f"/internal/v1/metadata?after_offset={end}&{WAIT}", token=token
        ),
    )
    wait_for(lambda: notifier.parked == 1, 10, "the long-poll to be parked")
    register(3)
    ((status, woken),) = polls.answers()
    assert status == 200
    assert [record["type"] for record in woken["records"]] == ["RegisterBrokerRecord"]

"""One peer's flood never starves the others on the internal listener: a broker's heartbeats are
in its lane one at a time (the others of the same broker wait on the event loop, holding no
thread) and past its rate are answered 429 THROTTLING_QUOTA_EXCEEDED with Retry-After, never
applied; a principal and address past their cap of parked metadata long-polls get the empty
answer at once; a fetch naming an unknown broker or a stale epoch is refused at once, never
parked. A real listener (tests.api.live_listener) and this process's controller; no timing: a
request that waited where it must not would not be answered while the test holds the others,
and its read would time out."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from brokers import services
from brokers.models import Broker
from controlplane.runtime.fetch_cache import fetch_cache
from controlplane.runtime.lease import cluster_read
from controlplane.runtime.notifier import notifier
from controlplane.runtime.single_writer import commit_scope
from devtools.stack import wait_for
from tests.api.live_listener import LiveListener, live_internal_listener
from tests.api.test_internal_listener_heartbeats import FETCH, InFlight, heartbeat, registration
from tests.conftest import heartbeat_body

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = 2  # the heartbeat pool's
FLOOD = 3 * THREADS  # a flooding broker's heartbeats in flight, each on a connection of its own
PARKED_CAP = 2
# A burst of 3 (the other broker's three heartbeats fit in it) and a slow refill: the flood's
# first 3 are applied, the rest refused for a while.
RATE, BURST = 0.1, 3.0


@pytest.fixture
def listener(settings: Any, transactional_db: None) -> Iterator[LiveListener]:
    fetch_cache().clear()
    with live_internal_listener(
        settings,
        threads=THREADS,
        fetch_threads=THREADS,
        heartbeat_threads=THREADS,
        heartbeat_rate=RATE,
        heartbeat_burst=BURST,
        max_parked_per_peer=PARKED_CAP,
    ) as running:
        yield running


def answer_with_headers(
    listener: LiveListener, method: str, path: str, body: Any, token: str
) -> tuple[int, dict[str, str], Any]:
    connection = http.client.HTTPConnection(listener.host, listener.port, timeout=20)
    try:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        connection.request(method, path, body=json.dumps(body), headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


class HeldHeartbeats:
    """Broker `held`'s heartbeats wait in the controller until released (a heartbeat that
    moves the broker's state waits for a busy controller); the others go through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, held: int) -> None:
        self.release = threading.Event()
        self.entered = 0
        beat = services.broker_heartbeat

        def held_beat(*, payload: dict[str, Any], context: Any) -> dict[str, Any]:
            if payload["broker_id"] == held:
                self.entered += 1
                self.release.wait(timeout=30)
            return beat(payload=payload, context=context)

        monkeypatch.setattr(services, "broker_heartbeat", held_beat)


def test_a_broker_flooding_heartbeats_takes_one_thread_and_is_throttled(
    listener: LiveListener,
    tokens: dict[str, str],
    register: Callable[..., int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = tokens["broker"]
    flooder, other = register(1, unfence=True), register(2, unfence=True)
    held = HeldHeartbeats(monkeypatch, held=1)
    path = "/internal/v1/broker-heartbeat"
    body = heartbeat_body(1, flooder, cluster_read().last_offset)
    flood = InFlight(FLOOD, lambda: answer_with_headers(listener, "POST", path, body, token))
    lane = ("Bearer " + token, 1)
    wait_for(lambda: listener.app.heartbeat_lanes.waiting(lane) == FLOOD, 10, "a full lane")

    # One of the flood is in the controller, the others wait on the loop: broker 2's
    # heartbeats take the pool's other threads, and keep it unfenced.
    for _ in range(3):
        heartbeat(listener, token, 2, other)
    registration(listener, token, 3)
    assert held.entered == 1  # one heartbeat of broker 1 at a time

    held.release.set()
    answers = flood.answers()
    statuses = sorted(status for status, _, _ in answers)
    assert statuses[0] == 200 and statuses[-1] == 429, statuses  # its burst, then throttled
    for status, headers, answer in answers:
        if status == 429:
            assert answer["error"] == "THROTTLING_QUOTA_EXCEEDED" and answer["error_code"] == 89
            assert int(headers["retry-after"]) >= 1 and answer["throttle_time_ms"] > 0
        else:
            assert status == 200 and answer["error_code"] == 0, answer
    # A refused heartbeat was never applied: it never reached the controller.
    assert held.entered == statuses.count(200)
    assert listener.app.heartbeats_throttled == statuses.count(429)


def test_a_broker_within_its_rate_is_never_throttled(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    """Each broker has a rate of its own: one's flood spends no other broker's."""
    token = tokens["broker"]
    epochs = {broker_id: register(broker_id, unfence=True) for broker_id in (1, 2, 3)}
    for broker_id, epoch in epochs.items():
        heartbeat(listener, token, broker_id, epoch)  # each within its burst of one
    assert listener.app.heartbeats_throttled == 0


def test_long_polls_past_the_cap_are_answered_at_once(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    token = tokens["broker"]
    register(1)
    head = cluster_read().last_offset
    poll = f"{FETCH}?after_offset={head}&wait_ms=60000"
    parked = InFlight(PARKED_CAP, lambda: listener.request("GET", poll, token=token))
    wait_for(lambda: notifier.parked == PARKED_CAP, 10, "the cap of long-polls parked")

    # One more from the same principal and address: the empty answer, at once (parked, it
    # would wait 60 s and its read time out).
    status, answer = listener.request("GET", poll, token=token, timeout_s=10)
    assert (status, answer["records"], answer["last_offset"]) == (200, [], head)
    assert listener.app.long_polls_answered_at_once == 1
    assert notifier.parked == PARKED_CAP

    registration(listener, token, 2)  # a commit wakes the parked ones, with its record
    for status, woken in parked.answers():
        assert status == 200 and [r["type"] for r in woken["records"]] == ["RegisterBrokerRecord"]
    wait_for(lambda: notifier.parked == 0, 10, "no long-poll parked")
    poll = f"{FETCH}?after_offset={cluster_read().last_offset}&wait_ms=60000"
    parked_again = InFlight(1, lambda: listener.request("GET", poll, token=token))
    wait_for(lambda: notifier.parked == 1, 10, "a place freed by the answered ones")
    registration(listener, token, 3)
    assert parked_again.answers()[0][0] == 200


# --- a fetch naming its broker -------------------------------------------------------------


def fetch_at_the_end(listener: LiveListener, token: str, **broker: int) -> tuple[int, Any]:
    """A long-poll at the log's end (60 s; the read gives up after 10): answered at once or
    never."""
    named = "".join(f"&{name}={value}" for name, value in broker.items())
    path = f"{FETCH}?after_offset={cluster_read().last_offset}&wait_ms=60000{named}"
    return listener.request("GET", path, token=token, timeout_s=10)


def test_a_fetch_from_an_unknown_broker_is_refused_at_once(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    register(1)
    status, answer = fetch_at_the_end(listener, tokens["broker"], broker_id=7)
    assert (status, answer["error"], answer["error_code"]) == (404, "BROKER_ID_NOT_REGISTERED", 102)
    status, answer = fetch_at_the_end(listener, tokens["broker"], broker_id=7, broker_epoch=0)
    assert (status, answer["error"]) == (404, "BROKER_ID_NOT_REGISTERED")
    assert notifier.parked == 0


def test_a_fetch_with_a_stale_epoch_is_refused_at_once(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    epoch = register(1)
    stale = epoch + 1  # any epoch not its current registration's
    status, answer = fetch_at_the_end(listener, tokens["broker"], broker_id=1, broker_epoch=stale)
    assert (status, answer["error"], answer["error_code"]) == (409, "STALE_BROKER_EPOCH", 77)
    assert notifier.parked == 0


def test_a_fenced_broker_with_its_current_epoch_long_polls(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    """Kafka lets a fenced broker fetch: it catches up that way. Its fetch parks as any."""
    token = tokens["broker"]
    epoch = register(1)  # registered, fenced until it heartbeats caught up
    head = cluster_read().last_offset
    path = f"{FETCH}?after_offset={head}&wait_ms=60000&broker_id=1&broker_epoch={epoch}"
    parked = InFlight(1, lambda: listener.request("GET", path, token=token))
    wait_for(lambda: notifier.parked == 1, 10, "the fenced broker's fetch parked")
    registration(listener, token, 2)
    status, answer = parked.answers()[0]
    assert status == 200 and [r["type"] for r in answer["records"]] == ["RegisterBrokerRecord"]


def test_a_broker_epoch_without_broker_id_names_no_broker_and_is_ignored(
    listener: LiveListener, tokens: dict[str, str]
) -> None:
    path = f"{FETCH}?after_offset=-1&broker_epoch=3&wait_ms=0"
    status, answer = listener.request("GET", path, token=tokens["broker"], timeout_s=10)
    assert status == 200 and answer["error_code"] == 0, answer  # as any caller's fetch


def test_a_broker_kept_as_registered_is_refused_once_the_tables_moved_on(
    listener: LiveListener, api: Any, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    """Each process keeps the brokers' epochs between notices of the tables: a registration
    after them is heard of, and the epoch it replaced is refused from then on."""
    token = tokens["broker"]

    def fetch_now(epoch: int) -> tuple[int, Any]:
        path = f"{FETCH}?after_offset=-1&wait_ms=0&broker_id=1&broker_epoch={epoch}"
        return listener.request("GET", path, token=token, timeout_s=10)

    first = register(1)
    assert fetch_now(first)[0] == 200  # the epochs are kept now, broker 1's at `first`
    status, _ = api.post("/api/v1/unregister-broker", {"broker_id": 1}, token=tokens["admin"])
    assert status == 200
    again = register(1)
    assert again != first
    status, answer = fetch_now(first)
    assert (status, answer["error"]) == (409, "STALE_BROKER_EPOCH")
    assert fetch_now(again)[0] == 200


def test_a_broker_the_kept_epochs_miss_is_looked_up_before_it_is_refused(
    listener: LiveListener, tokens: dict[str, str], register: Callable[..., int]
) -> None:
    """A broker the kept epochs do not show (its registration's notice not heard yet) is read
    from the tables at once: refused only when they do not have it either."""
    register(1)
    path = f"{FETCH}?after_offset=-1&wait_ms=0&broker_id=1"
    assert listener.request("GET", path, token=tokens["broker"], timeout_s=10)[0] == 200
    generation = notifier.tables_generation
    with commit_scope():  # behind the controller's back: no notice, the kept epochs miss it
        Broker.objects.filter(broker_id=1).update(broker_id=6)
    assert notifier.tables_generation == generation
    path = f"{FETCH}?after_offset=-1&wait_ms=0&broker_id=6"
    status, answer = listener.request("GET", path, token=tokens["broker"], timeout_s=10)
    assert status == 200 and answer["error_code"] == 0, answer

"""A controller's presence (controlplane.runtime.presence) on the real database: a standby takes
the lease from a holder whose session it saw end, at once and under a new epoch; it waits out
the lease of a holder still present (a paused one) or never seen (the embedded controller)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import connection

from controlplane.controller.errors import ApiError, Errors
from controlplane.models import Cluster
from controlplane.runtime.controller import ControllerRuntime
from controlplane.runtime.lease import lease_acquire, now_ms
from controlplane.runtime.presence import Presence, presence_name
from controlplane.runtime.sessions import session_store
from devtools.stack import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def runtime(node_id: str, controller_id: int) -> ControllerRuntime:
    return ControllerRuntime(
        node_id=node_id,
        controller_id=controller_id,
        lease_ms=60_000,  # never lapses within a test: only a takeover moves it
        session_timeout_ms=settings.CP_BROKER_SESSION_TIMEOUT_MS,
        sessions=session_store(),
    )


@pytest.fixture
def presences() -> Iterator[list[Presence]]:
    made: list[Presence] = []
    yield made
    for presence in made:
        presence.close()


def present(node_id: str, made: list[Presence]) -> Presence:
    presence = Presence(node_id)
    made.append(presence)
    return presence


def sessions_named(node_id: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
            [presence_name(node_id)],
        )
        return [int(row[0]) for row in cursor.fetchall()]


def end(presence: Presence) -> None:
    """Close its session and wait until its server process has gone (a backend leaves
    pg_stat_activity a moment after its client hung up)."""
    presence.close()
    wait_for(lambda: not sessions_named(presence.node_id), 10, "the session to end", 0.02)


@pytest.fixture
def postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("sessions are PostgreSQL's: on SQLite a standby waits every lease out")


def test_a_standby_takes_over_at_once_from_a_holder_whose_session_ended(
    postgres: None, presences: list[Presence]
) -> None:
    active, standby = runtime("controller-a", 3000), runtime("controller-b", 3001)
    held = present("controller-a", presences)
    assert held.ensure()
    first = active.ensure_active()
    watch = present("controller-b", presences)
    assert watch.ensure()

    assert watch.holder_gone() is None  # present: a live (or paused) holder is waited out
    with pytest.raises(ApiError) as refused:
        standby.ensure_active()  # and its lease is its own for 60 s
    assert refused.value.error is Errors.NOT_CONTROLLER

    end(held)  # what the kernel does to a process killed with -9
    gone = watch.holder_gone()
    assert gone == ("controller-a", first.epoch)
    taken = standby.ensure_active(take_over_from=gone)
    assert (taken.node_id, taken.epoch) == ("controller-b", first.epoch + 1)
    assert Cluster.objects.get(pk=1).lease_expires_ms > now_ms()  # long before a lapse
    # The old holder, were it alive after all (only its session cut), is fenced by the epoch.
    active.lease = dataclasses.replace(first, expires_ms=0)  # due for renewal
    with pytest.raises(ApiError):
        active.ensure_active()
    assert active.lease is None


def test_a_holder_never_seen_present_is_waited_out(
    postgres: None, presences: list[Presence]
) -> None:
    active = runtime("embedded", 3000)
    first = active.ensure_active()  # no session of its own, as the embedded web process
    watch = present("controller-b", presences)
    assert watch.ensure()
    assert watch.holder_gone() is None
    assert watch.holder_gone() is None  # not seen present, so never "gone"
    assert Cluster.objects.get(pk=1).controller_epoch == first.epoch


def test_a_takeover_names_the_epoch_it_saw_and_nothing_later(
    postgres: None, presences: list[Presence]
) -> None:
    active = runtime("controller-a", 3000)
    first = active.ensure_active()
    # The holder came back under a new epoch meanwhile (it re-took its lapsed lease): the
    # takeover named the old one, and takes nothing.
    Cluster.objects.filter(pk=1).update(controller_epoch=first.epoch + 1)
    assert (
        lease_acquire(
            node_id="controller-b",
            controller_id=3001,
            lease_ms=60_000,
            take_over_from=("controller-a", first.epoch),
        )
        is None
    )
    assert Cluster.objects.get(pk=1).lease_holder == "controller-a"


def test_the_session_is_named_after_the_node_and_visible_to_others(
    postgres: None, presences: list[Presence]
) -> None:
    held = present("controller-a", presences)
    assert held.ensure() and held.ensure()  # opened once
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            [presence_name("controller-a")],
        )
        assert cursor.fetchone() == (1,)
    assert len(presence_name("x" * 200)) == 63  # PostgreSQL's NAMEDATALEN - 1


def test_a_restart_that_ended_every_session_takes_nothing_over(
    postgres: None, presences: list[Presence]
) -> None:
    active = runtime("controller-a", 3000)
    held, watch = present("controller-a", presences), present("controller-b", presences)
    assert held.ensure() and watch.ensure()
    first = active.ensure_active()
    assert watch.holder_gone() is None and watch.seen == ("controller-a", first.epoch)

    end(held)
    end(watch)  # PostgreSQL restarted: the standby's own session ended too
    assert watch.holder_gone() is None and watch.seen is None  # so it knows nothing
    assert watch.ensure()
    assert watch.holder_gone() is None  # the holder has not been seen since
    assert held.ensure()  # the active's keeper opens its session again
    assert watch.holder_gone() is None and watch.seen == ("controller-a", first.epoch)
    end(held)
    assert watch.holder_gone() == ("controller-a", first.epoch)


def test_the_keeper_opens_a_lost_session_again(postgres: None, presences: list[Presence]) -> None:
    held = present("controller-a", presences)
    stop = threading.Event()
    try:
        assert held.start(stop)

        def sessions() -> list[int]:
            return sessions_named("controller-a")

        (first,) = sessions()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [first])
        wait_for(lambda: sessions() not in ([], [first]), 20, "the session opened again", 0.1)
        assert len(sessions()) == 1
    finally:
        stop.set()

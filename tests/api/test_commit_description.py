"""A large commit's description (the timeline, the health figures) is written just after the
commit, in a transaction of its own (controlplane.runtime.metadata_log): the brokers hear of a
commit without waiting for it, and a controller that stops between the two leaves nothing wrong.
Here every commit is "large" (`DESCRIBED_APART_FROM_RECORDS` = 1) unless a test says otherwise.

"The controller stops between its commit and the description" is played by taking the
description away for one write (`describe_commit` does nothing, as a controller killed there
would not). The next description, by the same controller or the next one, makes up for it: an
UNDESCRIBED timeline event names the offsets, and the health tables are written whole again.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from controlplane.controller.health import HealthIndex
from controlplane.models import Cluster, MetadataRecord
from controlplane.runtime import metadata_log
from controlplane.runtime.controller import get_runtime, reset_runtime
from controlplane.runtime.projections import load_image
from replicas.health_projection import BROKER_COLUMNS, TOPIC_COLUMNS, _broker_row, _topic_row
from tests.api.test_replication_api import Kafka
from timeline.models import TimelineEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def kafka(api: Any, tokens: dict[str, str], register: Any) -> Kafka:
    cluster = Kafka(api, tokens, register)
    cluster.register(1, 2, 3)
    cluster.create_topic("orders", [[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    return cluster


def offsets() -> tuple[int, int]:
    cluster = Cluster.objects.get(pk=1)
    return cluster.last_offset, cluster.described_offset


DESCRIBE_COMMIT = metadata_log.describe_commit
DESCRIBE = metadata_log._describe


@pytest.fixture(autouse=True)
def described_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_log, "DESCRIBED_APART_FROM_RECORDS", 1)


def describe_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata_log, "describe_commit", DESCRIBE_COMMIT)
    monkeypatch.setattr(metadata_log, "_describe", DESCRIBE)


def stop_before_describing(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Commits from now on are not described (until `describe_again`); answers the
    arguments each would have been described with."""
    kept: list[tuple[Any, ...]] = []

    def stopped_before_describing(*args: Any) -> bool:
        kept.append(args)
        return False

    monkeypatch.setattr(metadata_log, "describe_commit", stopped_before_describing)
    return kept


def health_rows() -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    with connection.cursor() as cursor:
        names = ", ".join(c.name for c in TOPIC_COLUMNS)
        cursor.execute(f"SELECT {names} FROM cp_topic_health")
        topics = {tuple(row) for row in cursor.fetchall()}
        names = ", ".join(c.name for c in BROKER_COLUMNS)
        cursor.execute(f"SELECT {names} FROM cp_broker_load")
        brokers = {tuple(row) for row in cursor.fetchall()}
    return topics, brokers


def health_counted_from_the_log() -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    cluster = Cluster.objects.get(pk=1)
    image = load_image(cluster.cluster_id, cluster.last_offset)
    index = HealthIndex.build(image, settings.CP_STATIC_BROKER_CONFIGS)
    return (
        {_topic_row(t) for t in index.topics.values()},
        {_broker_row(b) for b in index.brokers.values()},
    )


def test_every_commit_is_described_and_the_marker_follows_the_log(kafka: Kafka) -> None:
    kafka.fence(3)
    last, described = offsets()
    assert described == last
    events = list(TimelineEvent.objects.order_by("offset"))
    assert [e.kind for e in events if e.kind == "FENCED"] == ["FENCED"]
    assert not [e for e in events if e.kind == "UNDESCRIBED"]
    assert health_rows() == health_counted_from_the_log()


@pytest.mark.parametrize("next_controller", [False, True], ids=["same", "next"])
def test_a_commit_never_described_is_made_up_for_by_the_next_description(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch, next_controller: bool
) -> None:
    before, _ = offsets()
    undescribed = stop_before_describing(monkeypatch)
    kafka.fence(3)  # committed, never described: the controller "stopped" in between
    describe_again(monkeypatch)
    last, described = offsets()
    assert undescribed and last > before and described == before
    assert MetadataRecord.objects.filter(offset__gt=before).count() == last - before
    assert not TimelineEvent.objects.filter(offset__gt=before).exists()
    if next_controller:
        reset_runtime()  # the next controller loads the image the commit left

    kafka.create_topic("payments", [[1, 2], [2, 1]])

    now, described = offsets()
    assert described == now
    gap = TimelineEvent.objects.get(kind="UNDESCRIBED")
    assert (gap.offset, gap.last_offset) == (before + 1, last)
    assert gap.severity == "WARNING" and gap.is_incident
    assert f"offsets {before + 1}-{last}" in gap.title
    assert TimelineEvent.objects.filter(kind="TOPIC_CREATED", offset__gt=last).exists()
    # Broker 3's fencing moved orders' figures and the brokers' loads; the create touched
    # neither: only tables written whole again agree with the figures counted from the log.
    assert health_rows() == health_counted_from_the_log()


def test_a_description_fenced_by_a_newer_controller_writes_nothing(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, _ = offsets()
    undescribed = stop_before_describing(monkeypatch)
    kafka.fence(3)
    (lease, description), *_ = undescribed
    assert description.writes  # built while the commit ran: its timeline rows, its health
    # Another controller took over meanwhile: it owns the description now.
    Cluster.objects.filter(pk=1).update(controller_epoch=lease.epoch + 1)

    assert DESCRIBE_COMMIT(lease, description) is False

    assert offsets()[1] == before
    assert not TimelineEvent.objects.filter(offset__gt=before).exists()


def test_a_failed_description_leaves_the_commit_and_is_made_up_for(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, _ = offsets()

    def broken(*args: Any) -> bool:
        raise RuntimeError("the description's statements failed")

    monkeypatch.setattr(metadata_log, "_describe", broken)
    kafka.fence(3)  # answered as applied: the commit stands
    last, described = offsets()
    assert last > before and described == before
    describe_again(monkeypatch)

    kafka.fence(2)

    gap = TimelineEvent.objects.get(kind="UNDESCRIBED")
    assert (gap.offset, gap.last_offset) == (before + 1, last)
    assert offsets()[1] == offsets()[0]
    assert health_rows() == health_counted_from_the_log()
    assert get_runtime().image is not None  # the controller stayed active


def test_the_brokers_are_told_before_the_description_is_written(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controlplane.runtime.notifier import notifier

    told_first: list[bool] = []
    generation = notifier.generation

    def describing(cursor: Any, lease: Any, description: Any) -> bool:
        told_first.append(notifier.generation > generation)
        return DESCRIBE(cursor, lease, description)

    monkeypatch.setattr(metadata_log, "_describe", describing)
    kafka.fence(3)

    assert told_first and all(told_first)
    assert TimelineEvent.objects.filter(kind="FENCED").exists()  # described before the answer


def test_a_small_commit_is_described_in_its_own_transaction(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metadata_log, "DESCRIBED_APART_FROM_RECORDS", 1000)
    apart = stop_before_describing(monkeypatch)
    before, _ = offsets()

    kafka.fence(3)

    last, described = offsets()
    assert not apart and last > before and described == last
    assert TimelineEvent.objects.filter(kind="FENCED", offset__gt=before).exists()
    assert health_rows() == health_counted_from_the_log()


def test_a_small_commit_makes_up_for_a_large_one_never_described(
    kafka: Kafka, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, _ = offsets()
    stop_before_describing(monkeypatch)
    kafka.fence(3)
    last, _ = offsets()
    describe_again(monkeypatch)
    monkeypatch.setattr(metadata_log, "DESCRIBED_APART_FROM_RECORDS", 1000)

    kafka.create_topic("payments", [[1, 2]])

    gap = TimelineEvent.objects.get(kind="UNDESCRIBED")
    assert (gap.offset, gap.last_offset) == (before + 1, last)
    assert offsets()[1] == offsets()[0]
    assert health_rows() == health_counted_from_the_log()

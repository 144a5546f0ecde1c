"""The Spark tests' fixtures: ONE local Spark session for the whole run, and a day in a
cluster's life made through the real controller (tests/audit_workload.py, plus incidents that
leave partitions without a leader), exported with export_audit.

The day is made once per run: the controller commits it for real (no wrapping transaction: the
export reads committed rows), its source rows are read back with the ORM, and the database is
flushed at once, as pytest-django's transactional tests do after each test.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.audit_workload import CANARY_BROKERS, Moment, Workload
from tests.conftest import controller_state_reset

EXPORT_WAIT_S = 60.0  # other runs' open transactions may hold audit rows back for a while


# py4j says goodbye at INFO from a finalizer, after pytest has closed the captured streams.
logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session", autouse=True)
def spark() -> Iterator[Any]:
    """The run's one Spark session: every test here (and the commands they run in-process,
    whose getOrCreate finds it) shares it."""
    from audit.spark.session import spark_session

    session = spark_session("local[2]")
    yield session
    session.stop()


@dataclasses.dataclass
class Day:
    """What the reports are checked against: the export, and the source rows as the ORM read
    them (plain dicts), with what the describe RPCs answered."""

    export: Path
    records: list[dict[str, Any]]
    events: list[dict[str, Any]]
    moment: Moment  # the describe RPCs' answers between the two phases
    now: Moment  # ... and at the end
    secrets: list[str]
    workload: Workload

    @property
    def last_ms(self) -> int:
        return max(
            max(r["timestamp_ms"] for r in self.records), max(e["time_ms"] for e in self.events)
        )


def incidents(day: Workload) -> None:
    """What the workload does not do: partitions left without a leader by AlterReplicaState
    reports, one of which gets a leader back (an unclean election when broker 4 is unfenced),
    one that stays leaderless, and one on a canary broker whose topic (and its config) is then
    deleted; and a request denied as a whole that names no resource."""
    kafka = day.kafka
    kafka.create_topic("fragile", [[1, 4]], configs={"unclean.leader.election.enable": "true"})
    kafka.create_topic("lonely", [[1]])
    day.replicas_offline(broker_id=1, topics={"fragile": [0], "lonely": [0]})
    assert kafka.partition("fragile", 0)["leader_id"] == kafka.partition("lonely", 0)["leader_id"]
    assert kafka.partition("lonely", 0)["leader_id"] == -1
    kafka.heartbeat(4, want_fence=False)  # unfenced: fragile-0's other replica leads (unclean)
    assert kafka.partition("fragile", 0)["leader_id"] == 4
    assert kafka.partition("lonely", 0)["leader_id"] == -1
    day.config_resources |= {("TOPIC", "fragile"), ("TOPIC", "lonely"), ("TOPIC", "canary-solo")}
    kafka.create_topic("canary-solo", [[CANARY_BROKERS[0]]], configs={"retention.ms": "1000"})
    day.replicas_offline(broker_id=CANARY_BROKERS[0], topics={"canary-solo": [0]})
    assert kafka.partition("canary-solo", 0)["leader_id"] == -1
    day.ok("/api/v1/delete-topics", {"topic_names": ["canary-solo"]})
    status, _ = day.api.post("/api/v1/create-acls", {"creations": []}, token=day.tokens["alice"])
    assert status == 403


def _fixtures() -> tuple[Any, dict[str, str], Any]:
    """The `api`, `tokens` and `register` fixtures of tests/conftest.py, for a run's scope."""
    from controlplane.principals import principal_create
    from controlplane.runtime.lease import cluster_get_or_create
    from tests.conftest import Api, broker_registrar, listener_client_class

    api = Api(listener_client_class()())
    tokens = {
        "admin": principal_create(name="admin", super_user=True),
        "broker": principal_create(name="broker-a", broker=True),
        "alice": principal_create(name="alice"),
    }
    return api, tokens, broker_registrar(api, tokens, cluster_get_or_create().cluster_id)


def export_everything(path: Path) -> None:
    """export_audit until the export holds every audit row (a row of a transaction older than
    one still running elsewhere on the server waits for the next run: no gap)."""
    from django.core.management import call_command

    from audit.models import AuditEvent
    from audit.spark import storage as store

    deadline = time.monotonic() + EXPORT_WAIT_S
    while True:
        call_command("export_audit", "--to", str(path), stdout=io.StringIO())
        exported = store.committed_files(store.open_storage(str(path)), "audit_events").rows
        if exported == AuditEvent.objects.count():
            return
        assert time.monotonic() < deadline, "the export never caught up with the audit trail"
        time.sleep(0.5)


def source_rows() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from audit.models import AuditEvent
    from controlplane.models import MetadataRecord

    records = list(MetadataRecord.objects.order_by("offset").values())
    events = list(AuditEvent.objects.order_by("id").values())
    return records, events


@pytest.fixture(scope="session")
def day(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Day:
    """Made once per test run: the rows are read back and the database flushed right away, so
    no other test ever sees them (the export and the snapshot are all the tests need)."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        controller_state_reset()
        try:
            api, tokens, register = _fixtures()
            workload = Workload(api, tokens, register)
            workload.phase_one()
            moment = workload.moment()
            workload.phase_two()
            incidents(workload)
            now = workload.moment()
            export = tmp_path_factory.mktemp("audit-export")
            export_everything(export)
            records, events = source_rows()
        finally:
            controller_state_reset()
            call_command("flush", verbosity=0, interactive=False)
    return Day(
        export=export,
        records=records,
        events=events,
        moment=moment,
        now=now,
        secrets=[workload.token_hmac, *tokens.values()],
        workload=workload,
    )


@pytest.fixture(scope="session")
def export(day: Day, spark: Any) -> Any:
    """The day's export, read (lazily) as the reports read it."""
    from audit.spark.reader import export_read

    return export_read(spark, str(day.export))

"""Bulk writes (controlplane.runtime.bulk) and what a commit does to the lease, on the real
database: rows copied (binary COPY, from `COPY_MIN_ROWS` rows on) land exactly as rows bound as
arrays do, every COPY is seen as one statement, and a commit renews the controller's lease."""

from __future__ import annotations

import dataclasses
import gc
import json
import time
import uuid
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from controlplane.models import Cluster, ConfigEntry, MetadataRecord
from controlplane.runtime import write_behind
from controlplane.runtime.bulk import COPY_MIN_ROWS, Column, prepared_update, prepared_upsert
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create, now_ms
from controlplane.runtime.metadata_log import LOG_COLUMNS
from controlplane.runtime.single_writer import ProjectionWriteOutsideCommit, commit_scope
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

CONFIG_COLUMNS = [
    Column(name, "text") for name in ("resource_type", "resource_name", "name", "value")
]


def log_rows(first: int, count: int) -> list[tuple[object, ...]]:
    """Log rows with what a copy must carry intact: JSON with unicode and quotes, NULLs."""
    return [
        (
            offset,
            "ConfigRecord",
            3,
            1_700_000_000_000 + offset,
            "User:alice",
            "client-ü",
            "127.0.0.1",
            f"req-{offset}" if offset % 2 else "",
            offset % 7 if offset % 3 else None,
            json.dumps({"name": f'v"{offset}', "value": "naïve ✓", "n": None}),
        )
        for offset in range(first, first + count)
    ]


@pytest.mark.parametrize("count", [3, COPY_MIN_ROWS + 7])
def test_copied_rows_read_back_as_bound_rows_do(count):
    rows = log_rows(0, count)
    write = prepared_upsert(table="cp_metadata_record", columns=LOG_COLUMNS, rows=rows)
    with pytest.raises(ProjectionWriteOutsideCommit):  # copied or bound, the log is guarded
        write()
    with commit_scope(), CaptureQueriesContext(connection) as queries:
        write()
    assert len(queries.captured_queries) == 1  # one statement, copied or bound
    stored = MetadataRecord.objects.order_by("offset").values_list(
        "offset", "record_type", "timestamp_ms", "client_id", "request_id", "broker_id", "data"
    )
    assert [tuple(r) for r in stored] == [
        (r[0], r[1], r[3], r[5], r[7], r[8], json.loads(str(r[9]))) for r in rows
    ]


@pytest.mark.parametrize("count", [5, COPY_MIN_ROWS + 3])
def test_staged_upserts_and_updates_change_exactly_their_rows(count):
    with commit_scope():
        _upsert_then_update(count)


def test_a_second_staged_write_of_the_same_shape_never_reads_the_firsts_rows():
    """Stages are per shape and per connection: one transaction's second write of a shape
    starts from an empty stage, not from the first write's rows."""
    keys = [("TOPIC", f"t{i}", "retention.ms") for i in range(COPY_MIN_ROWS + 3)]
    with commit_scope():
        prepared_upsert(
            table="cp_config",
            columns=CONFIG_COLUMNS,
            rows=[(*key, "0") for key in keys],
            conflict=["resource_type", "resource_name", "name"],
            update=["value"],
        )()
        for value in ("1", "2"):  # the same keys twice in a row: the second value wins
            prepared_update(
                table="cp_config",
                columns=CONFIG_COLUMNS,
                rows=[(*key, value) for key in keys],
                key=["resource_type", "resource_name", "name"],
            )()
    assert set(ConfigEntry.objects.values_list("value", flat=True)) == {"2"}


def _upsert_then_update(count: int) -> None:
    keys = [("TOPIC", f"t{i}", "retention.ms") for i in range(count)]
    upsert = prepared_upsert(
        table="cp_config",
        columns=CONFIG_COLUMNS,
        rows=[(*key, "1") for key in keys],
        conflict=["resource_type", "resource_name", "name"],
        update=["value"],
    )
    upsert()
    prepared_upsert(  # the same keys again: the conflict updates, nothing is duplicated
        table="cp_config",
        columns=CONFIG_COLUMNS,
        rows=[(*key, "2") for key in keys[::2]],
        conflict=["resource_type", "resource_name", "name"],
        update=["value"],
    )()
    prepared_update(
        table="cp_config",
        columns=CONFIG_COLUMNS,
        rows=[(*key, "3") for key in keys[1::2]],
        key=["resource_type", "resource_name", "name"],
    )()
    values = dict(ConfigEntry.objects.values_list("resource_name", "value"))
    assert len(values) == count
    assert values == {key[1]: "2" if i % 2 == 0 else "3" for i, key in enumerate(keys)}


def test_a_staged_update_looks_its_rows_up_by_the_key_index_for_that_statement_only():
    """A large update joins its staged rows to the table through the key's index, never by
    hashing or sorting the whole table (its cost is its rows', not the table's: a controlled
    shutdown at a million partitions), and the planner's join settings are back right after."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's planner (make test runs it there; make test-fast is SQLite)")
    count = COPY_MIN_ROWS + 3
    plans: list[str] = []

    def explained(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        # The UPDATE goes in one query with the settings before and after it: explained
        # under the settings before it, as it runs.
        statements = sql.split("; ")
        updates = [i for i, s in enumerate(statements) if s.startswith("UPDATE cp_config")]
        if updates:
            with connection.cursor() as cursor:
                for before in statements[: updates[0]]:
                    cursor.execute(before)
                cursor.execute("EXPLAIN " + statements[updates[0]], params)
                plans.append("\n".join(row[0] for row in cursor.fetchall()))
        return execute(sql, params, many, context)

    with commit_scope(), transaction.atomic():
        ConfigEntry.objects.bulk_create(  # not staged: a stage's rows last until the commit
            ConfigEntry(
                resource_type="TOPIC", resource_name=f"t{i}", name="retention.ms", value="1"
            )
            for i in range(4 * count)
        )
        with connection.execute_wrapper(explained):
            prepared_update(
                table="cp_config",
                columns=CONFIG_COLUMNS,
                rows=[("TOPIC", f"t{i}", "retention.ms", "2") for i in range(0, 4 * count, 4)],
                key=["resource_type", "resource_name", "name"],
            )()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin')"
            )
            assert cursor.fetchone() == ("on", "on")
    assert len(plans) == 1
    assert "Hash Join" not in plans[0] and "Merge Join" not in plans[0], plans[0]
    assert "Index" in plans[0], plans[0]
    updated = ConfigEntry.objects.filter(value="2").count()
    assert updated == count


def test_a_large_commit_counts_each_copy_as_one_statement_whatever_its_size():
    """The statements of a commit do not grow with its size: 600 and 1,200 partitions."""
    if connection.vendor != "postgresql":
        pytest.skip("binary COPY is PostgreSQL's (make test runs it there)")
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    for broker_id in range(3):
        epoch = runtime.handle(
            ControllerEvent("BrokerRegistration", registration_body(broker_id, cluster_id))
        ).response["broker_epoch"]
        heartbeat = {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": 99}
        runtime.handle(ControllerEvent("BrokerHeartbeat", heartbeat))
    counts = []
    for size in (COPY_MIN_ROWS + 100, 2 * COPY_MIN_ROWS + 200):
        with CaptureQueriesContext(connection) as queries:
            answer = runtime.handle(
                ControllerEvent(
                    "CreateTopics",
                    {
                        "topics": [
                            {
                                "name": f"t-{size}",
                                "num_partitions": size,
                                "replication_factor": 3,
                            }
                        ]
                    },
                    RequestContext(principal="User:admin", request_id=str(uuid.uuid4())),
                )
            ).response
        assert answer["topics"][0]["error_code"] == 0
        counts.append(sum(1 for q in queries.captured_queries if "COPY" in q["sql"]))
        assert MetadataRecord.objects.filter(record_type="PartitionRecord").count() >= size
    assert counts[0] == counts[1] > 0


def test_a_commit_renews_the_lease_and_leaves_the_collector_on():
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    runtime.handle(ControllerEvent("BrokerRegistration", registration_body(1, cluster_id)))
    assert runtime.lease is not None
    # The lease nearly lapsed, yet still more than half of it left for ensure_active to keep.
    soon = now_ms() + runtime.lease_ms // 2 + 500
    Cluster.objects.filter(pk=1).update(lease_expires_ms=soon)
    runtime.lease = dataclasses.replace(runtime.lease, expires_ms=soon)
    before = now_ms()
    answer = runtime.handle(ControllerEvent("BrokerRegistration", registration_body(2, cluster_id)))
    assert answer.response["error_code"] == 0
    stored = Cluster.objects.get(pk=1).lease_expires_ms
    assert stored >= before + runtime.lease_ms > soon
    assert runtime.lease.expires_ms == stored
    assert gc.isenabled()


def test_a_long_commit_leaves_its_controller_a_whole_lease(monkeypatch):
    """The lease is renewed by the transaction's last statement: a commit whose statements run
    for long (100,000 partitions on a loaded machine) must not spend the lease it leaves."""
    runtime = get_runtime()
    cluster_id = cluster_get_or_create().cluster_id
    runtime.handle(ControllerEvent("BrokerRegistration", registration_body(1, cluster_id)))
    finished: list[int] = []
    real_exit = write_behind.WriteBehind.__exit__

    def slow_statements(self: Any, *exc: Any) -> Any:
        outcome = real_exit(self, *exc)
        time.sleep(0.3)  # what a slow statement would have taken
        finished.append(now_ms())
        return outcome

    monkeypatch.setattr(write_behind.WriteBehind, "__exit__", slow_statements)
    answer = runtime.handle(ControllerEvent("BrokerRegistration", registration_body(2, cluster_id)))
    assert answer.response["error_code"] == 0
    assert len(finished) == 2  # the log's statements, then the tables'
    stored = Cluster.objects.get(pk=1).lease_expires_ms
    assert stored >= finished[0] + runtime.lease_ms
    assert runtime.lease is not None and runtime.lease.expires_ms == stored

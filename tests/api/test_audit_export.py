"""The Parquet export of the metadata log and the audit trail (issue 10, point 2), on the real
database with data made through the real controller; read back with pyarrow (no Spark)."""

from __future__ import annotations

import datetime
import io
import json
import os
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from audit.spark import storage as store
from audit.spark.schema import AUDIT_EVENTS, METADATA_LOG, SCHEMA_VERSION
from controlplane.models import MetadataRecord
from tests.audit_files import committed_rows, every_string
from tests.audit_workload import SECRET_KEY_VALUE, Workload
from tests.legacy_token_key import older_version_sets_the_key

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def workload(api: Any, tokens: dict[str, str], register: Any) -> Workload:
    day = Workload(api, tokens, register)
    day.phase_one()
    day.phase_two()
    return day


def export(path: Path, *args: str) -> str:
    out = io.StringIO()
    call_command("export_audit", "--to", str(path), *args, stdout=out)
    return out.getvalue()


def test_an_export_holds_every_record_and_event_once_with_the_schema(
    workload: Workload, tmp_path: Path
) -> None:
    output = export(tmp_path)
    assert "committed export 1" in output
    records = committed_rows(tmp_path, "metadata_log")
    offsets = [r["offset"] for r in records]
    assert sorted(offsets) == list(range(MetadataRecord.objects.count()))
    events = committed_rows(tmp_path, "audit_events")
    assert sorted(e["id"] for e in events) == sorted(
        AuditEvent.objects.values_list("id", flat=True)
    )

    # The columns are the schema's, typed as it says.
    file = next((tmp_path / "metadata_log").rglob("*.parquet"))
    schema = pq.read_schema(file)
    assert schema.names == METADATA_LOG.names
    assert str(schema.field("offset").type) == "int64" and not schema.field("offset").nullable
    assert str(schema.field("time").type) == "timestamp[ms, tz=UTC]"
    assert (
        pq.read_schema(next((tmp_path / "audit_events").rglob("*.parquet"))).names
        == AUDIT_EVENTS.names
    )

    # Each row matches its source, and lies in the directory of its day.
    by_offset = {r["offset"]: r for r in records}
    for source in MetadataRecord.objects.all():
        row = by_offset[source.offset]
        assert (row["record_type"], row["principal"], row["request_id"]) == (
            source.record_type,
            source.principal,
            source.request_id,
        )
        day = datetime.datetime.fromtimestamp(source.timestamp_ms / 1000, datetime.UTC)
        assert row["date"] == day.strftime("%Y-%m-%d")
        if source.record_type != "ConfigRecord":
            assert json.loads(row["data"]) == source.data
    names = {r["topic_id"]: r["topic"] for r in records if r["record_type"] == "TopicRecord"}
    partitions = [r for r in records if r["record_type"] == "PartitionRecord"]
    assert {r["topic"] for r in partitions} == {"orders", "payments", "scratch"}  # deleted too
    assert all(
        r["topic"] == names[r["topic_id"]] and r["partition"] is not None for r in partitions
    )
    registered = [r for r in records if r["record_type"] == "RegisterBrokerRecord"]
    assert sorted(r["broker_id"] for r in registered) == [1, 2, 3, 4, 5, 6]
    quota_rows = [r for r in records if r["record_type"] == "ClientQuotaRecord"]
    assert "client-id=app,user=bob" in {r["resource_name"] for r in quota_rows}
    denied = [e for e in events if e["outcome"] == "DENIED"]
    assert denied and all(e["principal"] == "User:alice" for e in denied)
    forwarded = [e for e in events if e["forwarding_broker_id"] is not None]
    assert sorted(e["forwarding_broker_id"] for e in forwarded) == [2, 2, 3]
    reports = [e for e in events if e["api"] == "AlterReplicaState"]
    assert sorted(e["broker_id"] for e in reports) == [2, 5]

    commit = json.loads((tmp_path / "_export/commits/0000000001.json").read_text())
    assert commit["schema_version"] == SCHEMA_VERSION
    assert commit["watermark"]["metadata_log"]["offset"] == max(offsets)
    assert not (tmp_path / "_export/LOCK").exists() and not (tmp_path / "_temporary").exists()


def test_no_secret_reaches_the_exported_files(
    workload: Workload, tokens: dict[str, str], tmp_path: Path
) -> None:
    export(tmp_path)
    strings = every_string(tmp_path)
    secrets = [SECRET_KEY_VALUE, workload.token_hmac, *tokens.values()]
    leaked = [s for s in strings for secret in secrets if secret in s]
    assert leaked == []
    configs = [
        json.loads(r["data"])
        for r in committed_rows(tmp_path, "metadata_log")
        if r["record_type"] == "ConfigRecord"
    ]
    assert "delegation.token.secret.key" not in {c["name"] for c in configs}  # a setting
    assert {"retention.ms", "cleanup.policy"} & {
        c["name"] for c in configs if c["value"] not in (None, "(redacted)")
    }


def test_a_sensitive_value_an_older_log_holds_is_exported_redacted(
    register: Any, tmp_path: Path
) -> None:
    """An older version wrote the token key as a record (migration 0013 makes it a deletion):
    until then the export never carries its value."""
    register(1)
    older_version_sets_the_key("older-key-in-the-log-5e")
    export(tmp_path)
    assert not [s for s in every_string(tmp_path) if "older-key-in-the-log-5e" in s]
    (record,) = [
        json.loads(r["data"])
        for r in committed_rows(tmp_path, "metadata_log")
        if r["record_type"] == "ConfigRecord"
    ]
    assert (record["name"], record["value"]) == ("delegation.token.secret.key", "(redacted)")


def test_runs_are_incremental_and_a_run_with_nothing_new_commits_nothing(
    workload: Workload, tmp_path: Path
) -> None:
    export(tmp_path)
    assert "Nothing new" in export(tmp_path)
    assert sorted(p.name for p in (tmp_path / "_export/commits").iterdir()) == ["0000000001.json"]
    workload.configs("TOPIC", "payments", retention_ms="123456")
    output = export(tmp_path)
    assert "committed export 2" in output
    second = json.loads((tmp_path / "_export/commits/0000000002.json").read_text())
    assert second["datasets"]["metadata_log"]["rows"] == 1
    assert second["datasets"]["metadata_log"]["from_offset"] == MetadataRecord.objects.count() - 1
    records = committed_rows(tmp_path, "metadata_log")
    assert sorted(r["offset"] for r in records) == list(range(MetadataRecord.objects.count()))
    events = committed_rows(tmp_path, "audit_events")
    assert len(events) == len({e["id"] for e in events}) == AuditEvent.objects.count()


def test_a_new_path_gets_everything_from_the_start(workload: Workload, tmp_path: Path) -> None:
    export(tmp_path / "one")
    workload.configs("TOPIC", "payments", retention_ms="99")
    export(tmp_path / "one")
    export(tmp_path / "two")
    one = committed_rows(tmp_path / "one", "metadata_log")
    two = committed_rows(tmp_path / "two", "metadata_log")
    assert sorted(r["offset"] for r in one) == sorted(r["offset"] for r in two)


def test_leftovers_of_a_run_that_died_are_removed_and_never_read(
    workload: Workload, tmp_path: Path
) -> None:
    export(tmp_path)
    first = committed_rows(tmp_path, "metadata_log")
    # A run that died after moving its files, before its commit: the files are not committed.
    orphan = tmp_path / "metadata_log/date=2026-01-01/part-0000000002-00000.parquet"
    orphan.parent.mkdir(parents=True)
    pq.write_table(
        pq.read_table(next((tmp_path / "metadata_log").rglob("part-0000000001-*.parquet"))), orphan
    )
    (tmp_path / "_temporary/0000000002/audit_events").mkdir(parents=True)
    (tmp_path / "_export/LOCK").write_text(
        json.dumps({"host": os.uname().nodename, "pid": 999_999_999, "since_ms": 0})
    )
    assert committed_rows(tmp_path, "metadata_log") == first  # readers never see it
    workload.configs("TOPIC", "payments", retention_ms="77")
    assert "committed export 2" in export(tmp_path)
    assert not orphan.exists() and not (tmp_path / "_temporary").exists()
    rows = committed_rows(tmp_path, "metadata_log")
    assert sorted(r["offset"] for r in rows) == list(range(MetadataRecord.objects.count()))


def test_a_lock_held_by_a_live_export_refuses_a_second_one(
    workload: Workload, tmp_path: Path
) -> None:
    (tmp_path / "_export").mkdir(parents=True)
    live = {
        "host": os.uname().nodename,
        "pid": os.getpid(),
        "since_ms": store._now_ms(),
        "owner": "ui",
    }
    (tmp_path / "_export/LOCK").write_text(json.dumps(live))
    with pytest.raises(CommandError, match="Another export is writing"):
        export(tmp_path)
    assert not (tmp_path / "metadata_log").exists()


def test_a_damaged_file_is_named_not_read(workload: Workload, tmp_path: Path) -> None:
    export(tmp_path)
    file = next((tmp_path / "audit_events").rglob("*.parquet"))
    file.write_bytes(file.read_bytes()[:100])
    with pytest.raises(store.ExportError, match=f"{file.name} is damaged"):
        committed_rows(tmp_path, "audit_events")


def test_a_path_under_a_file_is_a_clear_error(workload: Workload, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(CommandError, match="Cannot write to the export path"):
        export(tmp_path / "file" / "audit")


def test_an_unreachable_master_is_a_clear_error(workload: Workload, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"Cannot reach the Spark master spark://127\.0\.0\.1:1"):
        export(tmp_path, "--master", "spark://127.0.0.1:1")
    with pytest.raises(CommandError, match="Unknown Spark master"):
        export(tmp_path, "--master", "carrier-pigeon")


def test_an_audit_row_committed_late_is_not_skipped(workload: Workload, tmp_path: Path) -> None:
    """PostgreSQL: a transaction that wrote an audit row earlier but commits after a newer one
    is not left behind the watermark: rows of transactions still running, and every newer
    one, wait for the next run."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: ids are in commit order")
    import psycopg

    settings_db = connection.settings_dict
    slow = psycopg.connect(
        host=settings_db["HOST"] or "127.0.0.1",
        port=settings_db["PORT"] or 5432,
        user=settings_db["USER"] or "postgres",
        dbname=settings_db["NAME"],
    )
    try:
        slow.execute(
            "INSERT INTO cp_audit_event (time_ms, principal, client_id, client_host,"
            " forwarding_principal, forwarding_host, api, resources, outcome, error_code,"
            " http_status, request_id, duration_ms)"
            " VALUES (1, 'User:slow', '', '', '', '', 'CreateAcls', '[]', 'DENIED', 31, 403,"
            " 'slow', 0)"
        )  # its transaction stays open
        workload.configs("TOPIC", "payments", retention_ms="4242")  # a newer row, committed
        newer = AuditEvent.objects.order_by("-id").values_list("id", flat=True)[0]
        export(tmp_path)
        exported = {e["id"] for e in committed_rows(tmp_path, "audit_events")}
        assert newer not in exported  # behind the open transaction: it waits too
        slow.commit()
    finally:
        slow.close()
    export(tmp_path)
    ids = [e["id"] for e in committed_rows(tmp_path, "audit_events")]
    assert sorted(ids) == sorted(AuditEvent.objects.values_list("id", flat=True))
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("resource_type", ["TOPIC", "BROKER", "BROKER_LOGGER"])
def test_the_database_redacts_exactly_what_redact_record_data_does(resource_type: str) -> None:
    """The export redacts in SQL; its rule is the config schema's, key by key (and an unknown
    key is sensitive), on this database's own JSON functions."""
    from django.db import connection

    from audit import export as exporter
    from controlplane.controller.config_schema import redact_record_data, registry_of

    dialect = exporter._PG if connection.vendor == "postgresql" else exporter._SQLITE
    expression, params = exporter.exported_data_sql(dialect)
    keys = [*(registry_of(resource_type) or {}), "not.a.known.key", "kafka.controller"]
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    for key in keys:
        for value in ("s3cr3t-value", None):
            data = {
                "resource_type": resource_type,
                "resource_name": "x",
                "name": key,
                "value": value,
            }
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT {expression} FROM (SELECT 'ConfigRecord' AS record_type,"
                    f" %s{cast} AS data) AS r",
                    [*params, json.dumps(data)],
                )
                exported = json.loads(cursor.fetchone()[0])
            assert exported == redact_record_data("ConfigRecord", data), (resource_type, key)


def test_an_unreachable_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {
        **os.environ,
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
        "CP_LOG_LEVEL": "ERROR",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "export_audit", "--to", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Cannot read the metadata store" in done.stderr and "Traceback" not in done.stderr

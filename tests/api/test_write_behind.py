"""The commit's writer thread (controlplane.runtime.write_behind) on the real database: the
statements run in order, on the committing thread's connection and transaction, while the
committing thread goes on; the first error stops the rest and rolls the commit back."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction

from controlplane.models import ConfigEntry
from controlplane.runtime.single_writer import ProjectionWriteOutsideCommit, commit_scope
from controlplane.runtime.write_behind import WriteBehind

pytestmark = [
    pytest.mark.django_db(transaction=True),
    # The writer thread runs on PostgreSQL only (inline elsewhere): make test, not test-fast.
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's writer thread"),
]


def insert(name: str, ran: list[tuple[str, int]]) -> None:
    ran.append((name, threading.get_ident()))
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO cp_config (resource_type, resource_name, name, value)"
            " VALUES ('TOPIC', %s, 'retention.ms', '1')",
            [name],
        )


def test_writes_run_in_order_in_another_thread_inside_the_commit():
    ran: list[tuple[str, int]] = []
    built = threading.Event()
    waited: list[bool] = []

    def first() -> None:
        insert("a", ran)
        waited.append(built.wait(timeout=10))  # the committer goes on meanwhile

    with commit_scope(), transaction.atomic(), WriteBehind() as writer:
        writer.submit(first)
        built.set()  # had the write run inline, it would still be waiting here
        writer.submit(lambda: insert("b", ran))
    assert waited == [True]
    assert [name for name, _ in ran] == ["a", "b"]
    assert {ident for _, ident in ran} != {threading.get_ident()}
    assert sorted(ConfigEntry.objects.values_list("resource_name", flat=True)) == ["a", "b"]


def test_the_first_error_stops_the_rest_and_rolls_the_commit_back():
    ran: list[tuple[str, int]] = []

    def fails() -> None:
        insert("a", ran)  # a duplicate key: the transaction is lost

    with (
        pytest.raises(IntegrityError) as raised,
        commit_scope(),
        transaction.atomic(),
        WriteBehind() as writer,
    ):
        writer.submit(lambda: insert("a", ran))
        writer.submit(fails)
        writer.submit(lambda: insert("c", ran))
    assert "duplicate key" in str(raised.value)
    assert [name for name, _ in ran] == ["a", "a"]  # "c" never ran
    assert not ConfigEntry.objects.exists()


def test_the_single_writer_guard_holds_in_the_writer_thread():
    ran: list[tuple[str, int]] = []
    with (
        pytest.raises(ProjectionWriteOutsideCommit),
        transaction.atomic(),
        WriteBehind() as writer,  # no commit_scope
    ):
        writer.submit(lambda: insert("a", ran))
    assert not ConfigEntry.objects.exists()


def test_the_session_never_idles_in_its_transaction_while_the_committer_builds():
    """run_controller ends a session idle in its transaction for half a lease (a paused
    controller's): a commit whose thread builds longer than that must still hold, because the
    writer asks the server something meanwhile."""
    ran: list[tuple[str, int]] = []
    with commit_scope(), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL idle_in_transaction_session_timeout = 300")
        with WriteBehind(keepalive_s=0.05) as writer:
            writer.submit(lambda: insert("a", ran))
            time.sleep(0.8)  # the committer building the next projection's rows
            writer.submit(lambda: insert("b", ran))
        assert writer.keepalives >= 5
    assert sorted(ConfigEntry.objects.values_list("resource_name", flat=True)) == ["a", "b"]


def test_without_the_writer_such_a_gap_ends_the_session():
    """The same gap with nobody asking: PostgreSQL ends the session (what the keepalive
    prevents, and what still frees a paused controller's lock)."""
    try:
        with pytest.raises(DatabaseError) as ended, commit_scope(), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL idle_in_transaction_session_timeout = 300")
            time.sleep(0.8)
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
        assert "idle-in-transaction timeout" in str(ended.value)
    finally:
        connection.close()  # the server ended it: the next test gets a new one

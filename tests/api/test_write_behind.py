"""The commit's writer thread (controlplane.runtime.write_behind) on the real database: the
statements run in order, on the committing thread's connection and transaction, while the
committing thread goes on; the first error stops the rest and rolls the commit back."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, transaction

from controlplane.models import ConfigEntry
from controlplane.runtime.single_writer import ProjectionWriteOutsideCommit, commit_scope
from controlplane.runtime.write_behind import WriteBehind

pytestmark = pytest.mark.django_db(transaction=True)


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

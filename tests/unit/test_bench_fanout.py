"""The fan-out benchmark's post-check: when a follower had a new leader for every partition."""

from __future__ import annotations

import gzip
import json
from typing import Any

import msgspec
import pytest
import zstandard

from bench.fanout.wire import Answer, completion, read_head

TOPIC, OTHER = "t-failed", "t-other"
FAILED = 7


def change(offset: int, partition: int, leader: int, topic: str = TOPIC) -> dict[str, Any]:
    return {
        "offset": offset,
        "type": "PartitionChangeRecord",
        "controller_epoch": 1,
        "timestamp_ms": 0,
        "data": {"partition_id": partition, "topic_id": topic, "isr": [1, 2], "leader": leader},
    }


def fetch(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cluster_id": "c", "controller_id": 3000, "controller_epoch": 1, "records": records}


def answer(arrival: float, records: list[dict[str, Any]], wire: str = "json") -> Answer:
    """An answer as the server would send it in `wire`: json, msgpack+zstd or msgpack+gzip."""
    if wire == "json":
        return Answer(arrival, json.dumps(fetch(records)).encode())
    plain = msgspec.msgpack.encode(fetch(records))
    if wire == "msgpack+zstd":
        return Answer(arrival, zstandard.compress(plain), "application/msgpack", "zstd")
    return Answer(arrival, gzip.compress(plain), "application/msgpack", "gzip")


WIRES = ["json", "msgpack+zstd", "msgpack+gzip"]


@pytest.mark.parametrize("wire", WIRES)
def test_the_answer_that_completes_the_set_is_the_followers_time(wire: str) -> None:
    answers = [
        answer(1.0, [], wire),  # a long-poll that ended empty
        answer(
            2.0,
            [
                {
                    "offset": 10,
                    "type": "TopicRecord",
                    "controller_epoch": 1,
                    "timestamp_ms": 0,
                    "data": {"name": "x", "topic_id": "t-x"},
                },  # another record type: skipped
                change(11, 0, leader=3),
                change(12, 1, leader=FAILED),  # still the failed broker: not a new leader
                change(13, 2, leader=-1),  # no leader
                change(14, 1, leader=-2, topic=TOPIC),  # leader unchanged
                change(15, 1, leader=5, topic=OTHER),  # another topic's partition 1
            ],
            wire,
        ),
        answer(3.0, [change(16, 1, leader=4)], wire),
        answer(4.0, [change(17, 2, leader=9)], wire),  # completes 0, 1, 2
        answer(5.0, [change(18, 0, leader=8)], wire),
    ]
    done = completion(answers, topic_ids=frozenset({TOPIC}), failed_broker=FAILED, partitions=3)
    assert (done.completed_at, done.partitions_moved, done.answers) == (4.0, 3, 4)


@pytest.mark.parametrize("wire", WIRES)
def test_a_follower_missing_a_partition_never_completes(wire: str) -> None:
    answers = [
        answer(1.0, [change(1, 0, leader=3), change(2, 1, leader=FAILED)], wire),
        answer(2.0, [change(3, 2, leader=4)], wire),
    ]
    done = completion(answers, topic_ids=frozenset({TOPIC}), failed_broker=FAILED, partitions=3)
    assert (done.completed_at, done.partitions_moved, done.answers) == (None, 2, 2)


@pytest.mark.parametrize("wire", WIRES)
def test_the_hot_path_reads_the_last_offset_only(wire: str) -> None:
    head = read_head(answer(1.0, [change(41, 0, leader=3), change(42, 1, leader=4)], wire))
    assert [r.offset for r in head.records] == [41, 42]
    assert read_head(answer(1.0, [], wire)).records == []

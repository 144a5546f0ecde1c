"""A request that announces more items or bytes than it carries is refused before it is decoded:
kio's native reader reserves an array's announced items first, and a failed allocation there
aborts the process, so one frame of a few bytes announcing 2^32 items would take the listener
down with every broker's and client's connection on it."""

from __future__ import annotations

import io
import json
import os
import pathlib
import socket
import struct
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_writer

from tests.wire.conftest import RunningListener
from tests.wire.rawclient import api_versions_error
from wire.apis import load_all
from wire.apis.base import WIRE_APIS
from wire.lengths import LengthPastEnd, check_lengths


def _header(api_key: int, version: int, flexible: bool) -> bytes:
    header = struct.pack(">hhi", api_key, version, 7) + struct.pack(">h", 1) + b"c"
    return header + b"\x00" if flexible else header  # header v2: no tagged fields


HUGE_UVARINT = b"\xff\xff\xff\xff\x0f"  # 2^32 - 1: a compact array of 2^32 - 2 items
PADDING = b"\x00" * 8
CRAFTED = {
    # Metadata v12's topics: a compact array
    "compact array": _header(3, 12, True) + HUGE_UVARINT + PADDING,
    # Metadata v4's topics: an int32 count
    "legacy array": _header(3, 4, False) + struct.pack(">i", 2**31 - 1) + PADDING,
    # CreateTopics v7, one topic whose assignments (a nested array) announce 2^32 - 2 items
    "nested array": _header(19, 7, True)
    + b"\x02"  # one topic
    + b"\x02t"  # its name
    + struct.pack(">ih", 1, 1)
    + HUGE_UVARINT
    + PADDING,
    # Metadata v12, one topic whose name announces 2^32 - 2 bytes
    "string": _header(3, 12, True) + b"\x02" + b"\x00" * 16 + HUGE_UVARINT + PADDING,
    # BrokerHeartbeat v1's OfflineLogDirs, a tagged field of 6 bytes whose array announces
    # 2^32 - 2 uuids
    "array in a tagged field": _header(63, 1, True)
    + struct.pack(">iqq??", 1, 2, 3, False, False)
    + b"\x01\x00\x06"
    + HUGE_UVARINT
    + b"\x00",
    # Metadata v12 with a tagged field announcing more bytes than follow
    "tagged field": _header(3, 12, True) + b"\x01" + b"\x00\x00" + b"\x01\x00\x07\xff\x0f",
}

_DECODE_ALL = """
import json, sys
import django
django.setup()
from wire.apis import load_all
from wire.protocol import InvalidRequest, read_body, read_header
load_all()
answers = {}
for name, frame in json.load(sys.stdin).items():
    frame = bytes.fromhex(frame)
    try:
        read_body(read_header(frame), frame)
        answers[name] = "decoded"
    except InvalidRequest as error:
        answers[name] = str(error)
print(json.dumps(answers))
"""


def test_the_decoder_refuses_lengths_past_the_frame_and_the_process_lives() -> None:
    # In a process of its own: were the check missing, the allocation would abort it.
    done = subprocess.run(
        [sys.executable, "-c", _DECODE_ALL],
        input=json.dumps({name: frame.hex() for name, frame in CRAFTED.items()}),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "controlplane.settings"},
        cwd=pathlib.Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = json.loads(done.stdout)
    assert set(answers) == set(CRAFTED)
    for name, answer in answers.items():
        assert answer.startswith("Malformed request body: "), (name, answer)
        assert "bytes" in answer or "varint" in answer, (name, answer)


def _served_request_classes() -> list[type]:
    load_all()
    return [
        load_request_schema(key, version)
        for key, api in sorted(WIRE_APIS.items())
        for version in range(api.min_version, api.max_version + 1)
    ]


SERVED_REQUESTS: st.SearchStrategy[Any] = st.sampled_from(_served_request_classes()).flatmap(
    st.from_type
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SERVED_REQUESTS, st.data())
def test_the_walk_reads_every_served_request_as_kio_writes_it(
    request: Any, data: st.DataObject
) -> None:
    """Any request of any API version the listener serves, as kio encodes it: the walk ends
    exactly at its end (it lays the request out as kio does), and refuses it cut anywhere."""
    buffer = io.BytesIO()
    entity_writer(type(request))(buffer, request)
    body = buffer.getvalue()
    assert check_lengths(type(request), body, 0) == len(body)
    if not body:  # a version without fields (ApiVersions v0)
        return
    cut = data.draw(st.integers(0, len(body) - 1))
    with pytest.raises(LengthPastEnd):
        check_lengths(type(request), body[:cut], 0)


def test_the_listener_closes_such_a_connection_and_serves_the_next(
    wire_listener: RunningListener,
) -> None:
    for frame in CRAFTED.values():
        with socket.create_connection((wire_listener.host, wire_listener.port), timeout=10) as s:
            s.sendall(struct.pack(">i", len(frame)) + frame)
            while s.recv(65536):  # an answer or none, then the close: never a hang
                pass
    assert api_versions_error(wire_listener.host, wire_listener.port) == 0

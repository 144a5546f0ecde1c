"""Hypothesis over frames: the decoder raises only InvalidRequest on any bytes, and the listener
answers or closes every random or mutated frame, keeps serving, and writes nothing."""

from __future__ import annotations

import datetime
import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v3 import request as api_versions_v3
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.describe_configs.v4 import request as describe_configs_v4
from kio.schema.metadata.v12 import request as metadata_v12

from controlplane.models import MetadataRecord
from tests.wire.conftest import RunningListener
from tests.wire.rawclient import api_versions_error, encode_request
from wire.apis import load_all
from wire.apis.base import WIRE_APIS
from wire.protocol import InvalidRequest, read_body, read_header

SEED_API_VERSIONS = api_versions_v3.ApiVersionsRequest(
    client_software_name="f", client_software_version="1"
)
SEEDS = [
    encode_request(SEED_API_VERSIONS)[4:],
    encode_request(
        metadata_v12.MetadataRequest(topics=None, include_topic_authorized_operations=False)
    )[4:],
    encode_request(
        describe_configs_v4.DescribeConfigsRequest(
            resources=(
                describe_configs_v4.DescribeConfigsResource(
                    resource_type=2, resource_name="orders", configuration_keys=None
                ),
            )
        )
    )[4:],
    encode_request(
        create_topics_v7.CreateTopicsRequest(
            topics=(
                create_topics_v7.CreatableTopic(
                    name="fuzzed",
                    num_partitions=1,
                    replication_factor=1,
                    assignments=(),
                    configs=(),
                ),
            ),
            validate_only=True,
            timeout=datetime.timedelta(seconds=5),
        )
    )[4:],
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid frame with bytes flipped, cut or appended: near misses reach the body readers."""
    frame = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        index = draw(st.integers(0, len(frame) - 1))
        frame[index] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        frame = frame[: draw(st.integers(8, len(frame)))]
    return bytes(frame) + draw(st.binary(max_size=8))


FRAMES = st.one_of(st.binary(min_size=8, max_size=300), mutated())


@settings(max_examples=400, deadline=None)
@given(FRAMES)
def test_the_decoder_raises_only_invalid_request(frame: bytes) -> None:
    load_all()
    try:
        header = read_header(frame)
    except InvalidRequest:
        return
    if header.api_key not in WIRE_APIS and header.api_key not in (17, 18, 36):
        return
    try:
        read_body(header, frame)
    except InvalidRequest:
        pass
    except Exception as error:  # an unknown version of a known API: the server closes first
        api = WIRE_APIS.get(header.api_key)
        assert api is None or not api.min_version <= header.api_version <= api.max_version, error


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(frames=st.lists(FRAMES, min_size=1, max_size=3))
def test_the_listener_survives_random_and_mutated_frames(
    wire_listener: RunningListener, frames: list[bytes]
) -> None:
    offset_before = _metadata_offset()
    with socket.create_connection((wire_listener.host, wire_listener.port), timeout=10) as s:
        s.sendall(b"".join(struct.pack(">i", len(frame)) + frame for frame in frames))
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):  # answers, then the close: never a hang (the timeout fails it)
            pass
    assert api_versions_error(wire_listener.host, wire_listener.port) == 0
    # Anonymous holds no ACL: whatever decoded as a write was refused, and nothing was written.
    assert _metadata_offset() == offset_before


def _metadata_offset() -> int:
    return MetadataRecord.objects.count()

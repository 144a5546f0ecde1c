"""Kafka's framing and headers, as Kafka's `NetworkReceive`, `RequestHeader` and `RequestContext`
read them: no Django, no I/O.

A frame is a 4-byte big-endian size and that many bytes. A request starts with its header
(v1, or v2 with tagged fields where the API's version is flexible); the body follows. A
response is the correlation id (header v0) plus tagged fields where flexible (header v1),
except ApiVersions, whose response header is always v0 so that a client that does not yet
know our versions can read it (KIP-511).
"""

from __future__ import annotations

import dataclasses
import re
import struct
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0 import response as api_versions_v0
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader
from kio.static.primitive import i16

from wire.encoding import encode
from wire.lengths import LengthPastEnd, check_lengths

SIZE = struct.Struct(">i")
KEY_VERSION_CORRELATION = struct.Struct(">hhi")
API_VERSIONS_KEY = 18
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024  # Kafka's socket.request.max.bytes


class InvalidRequest(Exception):
    """A frame Kafka would not parse (InvalidRequestException): the connection is closed."""


@dataclasses.dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str
    body_offset: int  # where the body starts in the frame


def frame_size(prefix: bytes, max_frame_bytes: int) -> int:
    """The size a frame's 4-byte prefix announces; InvalidRequest when out of bounds (Kafka's
    InvalidReceiveException closes the connection)."""
    size: int = SIZE.unpack(prefix)[0]
    if size < KEY_VERSION_CORRELATION.size:
        raise InvalidRequest(f"Invalid frame size {size}")
    if size > max_frame_bytes:
        raise InvalidRequest(f"Frame of {size} bytes is larger than {max_frame_bytes}")
    return size


def peek_header(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id): the fields every header version starts with."""
    if len(frame) < KEY_VERSION_CORRELATION.size:
        raise InvalidRequest("Truncated request header")
    api_key, api_version, correlation_id = KEY_VERSION_CORRELATION.unpack_from(frame)
    return api_key, api_version, correlation_id


def read_header(frame: bytes) -> RequestHeader:
    """The whole request header, in the version the API's request version calls for.

    An API or version kio does not know still has a readable v1 header (ApiVersions must be
    answered whatever version it asks, KIP-511)."""
    api_key, api_version, correlation_id = peek_header(frame)
    try:
        header_class = load_request_schema(api_key, api_version).__header_schema__
    except Exception:  # unknown API or version: its header is read as v1
        from kio.schema.request_header.v1.header import RequestHeader as HeaderV1

        header_class = HeaderV1
    try:
        header, size = entity_reader(header_class)(frame, 0)
    except Exception as error:
        raise InvalidRequest(f"Malformed request header: {error}") from error
    return RequestHeader(api_key, api_version, correlation_id, header.client_id or "", size)


def read_body(header: RequestHeader, frame: bytes) -> Any:
    """The request body as kio's entity of its version. Trailing bytes after the body are
    tolerated, as Kafka tolerates them (librdkafka's all-topics Metadata carries three)."""
    request_class = load_request_schema(header.api_key, header.api_version)
    try:
        check_lengths(request_class, frame, header.body_offset)  # before kio reserves them
    except LengthPastEnd as error:
        raise InvalidRequest(f"Malformed request body: {error}") from None
    try:
        body, _size = entity_reader(request_class)(frame, header.body_offset)
    except Exception as error:
        raise InvalidRequest(f"Malformed request body: {error}") from error
    return body


def encode_body(entity: Any) -> bytes:
    """The entity in Kafka's wire format (wire.encoding: kio's bytes, written faster)."""
    return encode(entity)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: bytes) -> bytes:
    """A whole response frame: size, the header its version calls for, the encoded body."""
    header = SIZE.pack(correlation_id)
    if api_key != API_VERSIONS_KEY and load_response_schema(api_key, api_version).__flexible__:
        header += b"\x00"  # header v1: no tagged fields
    return SIZE.pack(len(header) + len(body)) + header + body


def unsupported_api_versions(correlation_id: int, served: dict[int, tuple[int, int]]) -> bytes:
    """KIP-511: an ApiVersions request newer than served is answered in v0, UNSUPPORTED_VERSION
    with the versions we serve, so the client retries with one of them."""
    response = api_versions_v0.ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(
            api_versions_v0.ApiVersion(
                api_key=i16(key), min_version=i16(low), max_version=i16(high)
            )
            for key, (low, high) in sorted(served.items())
        ),
    )
    return encode_response(API_VERSIONS_KEY, 0, correlation_id, encode_body(response))


def leading_items(header: RequestHeader, frame: bytes) -> int:
    """How many items the body's first field, a list, announces, read from its length alone
    (nothing of the items is decoded): a compact array's unsigned varint N+1 where the version
    is flexible, else an int32; null is 0. InvalidRequest when the frame ends before it."""
    offset = header.body_offset
    if not load_request_schema(header.api_key, header.api_version).__flexible__:
        if len(frame) < offset + 4:
            raise InvalidRequest("Truncated request body")
        return max(int(SIZE.unpack_from(frame, offset)[0]), 0)
    value = shift = 0
    for position in range(offset, min(offset + 5, len(frame))):
        byte = frame[position]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return max(value - 1, 0)
        shift += 7
    raise InvalidRequest("Truncated or malformed request body")


# Kafka's rule for ApiVersions' ClientSoftwareName and ClientSoftwareVersion (KIP-511).
SOFTWARE_FIELD = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def software_version_of(body: Any) -> str:
    """An ApiVersions request's ClientSoftwareVersion (v3+) when Kafka would take it, else ""."""
    version = str(getattr(body, "client_software_version", "") or "")
    return version if len(version) <= 128 and SOFTWARE_FIELD.fullmatch(version) else ""

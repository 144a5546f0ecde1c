"""A bare Kafka protocol client for the listener's own tests: kio entities over a socket."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

SIZE = struct.Struct(">i")


def encode_request(body: Any, *, correlation_id: int = 1, client_id: str | None = "raw") -> bytes:
    """A whole request frame for kio's request entity `body` (its header as its version needs)."""
    header_class = body.__header_schema__
    header = header_class(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buffer = io.BytesIO()
    entity_writer(header_class)(buffer, header)
    entity_writer(type(body))(buffer, body)
    data = buffer.getvalue()
    return SIZE.pack(len(data)) + data


class RawClient:
    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, body: Any) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(body, correlation_id=self.correlation_id))
        return self.correlation_id

    def read_frame(self) -> bytes | None:
        """The next response frame, or None when the server closed the connection."""
        prefix = self._exactly(4)
        if prefix is None:
            return None
        (size,) = SIZE.unpack(prefix)
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes | None:
        data = b""
        while len(data) < size:
            try:
                chunk = self.sock.recv(size - len(data))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            data += chunk
        return data

    def request(self, body: Any) -> Any:
        """Send `body`, read its answer as the response entity of the same version."""
        correlation_id = self.send(body)
        return self.read_response(body, correlation_id)

    def read_response(self, body: Any, correlation_id: int) -> Any:
        frame = self.read_frame()
        assert frame is not None, "the listener closed the connection"
        (answered,) = struct.unpack_from(">i", frame)
        assert answered == correlation_id
        response_class = load_response_schema(body.__api_key__, body.__version__)
        offset = 4 + (1 if response_class.__flexible__ and body.__api_key__ != 18 else 0)
        response, _size = entity_reader(response_class)(frame, offset)
        return response

    def closed_by_server(self) -> bool:
        """Whether the server closed the connection (reads EOF)."""
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False


def api_versions_error(host: str, port: int) -> int:
    """A fresh connection's ApiVersions v3 answer's error code: 0 while the listener serves."""
    from kio.schema.api_versions.v3 import request as api_versions_v3

    with RawClient(host, port) as client:
        answer = client.request(
            api_versions_v3.ApiVersionsRequest(
                client_software_name="f", client_software_version="1"
            )
        )
    return int(answer.error_code)

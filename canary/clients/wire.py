"""Canary partitions learnt over Kafka's own protocol (KIP-1095): Metadata's `Pod`.

KIP-1095 puts the broker's pod on MetadataResponse's brokers (v12+), so a producer finds canary
partitions in the metadata it already fetches: a partition whose leader is on a broker of pod
`canary-broker` is a canary partition. Stock Apache Kafka clients do not know that field, so
the control plane's Kafka listener (`manage.py serve_kafka`) serves it as a tagged field,
`POD_TAG`, that stock clients skip; `WireCanaryDirectory` asks for it with a small Metadata v12
exchange of its own (kio encodes and decodes; SASL/PLAIN when given a principal and its token)
and answers as `CanaryDirectory` does, with its cache and refresh rules. The REST directory
stays for control planes without the listener.

Pure client side: kio, kafka-python and the standard library, nothing of the control plane's
server. The listener's Metadata handler reads `POD_TAG` and the Pod classes from here, so both
ends share one definition.

    directory = WireCanaryDirectory("controlplane:9092", sasl_plain=("billing", token))
    producer = KafkaProducer(partitioner=CanaryPartitioner(directory, canary=True), ...)
"""

# No `from __future__ import annotations`: kio reads the Pod subclasses' field types, which
# must be types, not strings.
import dataclasses
import io
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

import kio.schema.metadata.v12.request as metadata_request
import kio.schema.metadata.v12.response as metadata_response
import kio.schema.sasl_authenticate.v2.request as sasl_authenticate_request
import kio.schema.sasl_authenticate.v2.response as sasl_authenticate_response
import kio.schema.sasl_handshake.v1.request as sasl_handshake_request
import kio.schema.sasl_handshake.v1.response as sasl_handshake_response
from kio.schema.errors import ErrorCode
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer

from canary.clients.directory import CanaryDirectory

# KIP-1095's Pod as a tagged field. Kafka numbers its own tags from 0 in each struct (the
# highest in use today is single digits): a tag this far above them (the KIP's number) cannot
# collide with one Kafka adds later, and a client that does not know it skips it, as flexible
# versions require of every client.
POD_TAG = 10950
CANARY_BROKER_POD = "canary-broker"
METADATA_VERSION = 12
SIZE = struct.Struct(">i")
MAX_FRAME_BYTES = 100 * 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodMetadataBroker(metadata_response.MetadataResponseBroker):
    """MetadataResponse v12's broker with KIP-1095's Pod (None when the listener sent none)."""

    pod: str | None = dataclasses.field(
        metadata={"kafka_type": "string", "tag": POD_TAG}, default=None
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PodMetadataResponse(metadata_response.MetadataResponse):
    """MetadataResponse v12 whose brokers carry their Pod."""

    brokers: tuple[PodMetadataBroker, ...]


class WireError(Exception):
    """The listener answered an error (or nothing sensible)."""


def canary_partitions_of(response: PodMetadataResponse, topic: str) -> dict[str, Any] | None:
    """The topic's entry as GET /api/v1/canary answers it (name, partition count, canary
    partitions: those led by a canary broker), or None when the topic does not exist."""
    canary_brokers = {b.node_id for b in response.brokers if b.pod == CANARY_BROKER_POD}
    for entry in response.topics:
        if entry.name != topic:
            continue
        if entry.error_code == ErrorCode.unknown_topic_or_partition:
            return None
        if entry.error_code != ErrorCode.none:
            raise WireError(f"Metadata for {topic}: {entry.error_code.name}")
        return {
            "name": topic,
            "partition_count": len(entry.partitions),
            "canary_partitions": sorted(
                p.partition_index for p in entry.partitions if p.leader_id in canary_brokers
            ),
        }
    return None


class WireConnection:
    """One connection to the listener: framed kio requests and their responses."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_s: float = 5.0,
        client_id: str = "canary-directory",
        connect: Callable[..., socket.socket] = socket.create_connection,
    ) -> None:
        self.sock = connect((host, port), timeout=timeout_s)
        self.client_id = client_id
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "WireConnection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, body: Any, response_class: type) -> Any:
        """Send kio's request entity `body`; the answer as `response_class`."""
        self.correlation_id += 1
        header_class = body.__header_schema__
        header = header_class(
            request_api_key=body.__api_key__,
            request_api_version=body.__version__,
            correlation_id=self.correlation_id,
            client_id=self.client_id,
        )
        buffer = io.BytesIO()
        entity_writer(header_class)(buffer, header)
        entity_writer(type(body))(buffer, body)
        data = buffer.getvalue()
        self.sock.sendall(SIZE.pack(len(data)) + data)
        frame = self._frame()
        (correlation_id,) = SIZE.unpack_from(frame)
        if correlation_id != self.correlation_id:
            raise WireError(f"answer to request {correlation_id}, not {self.correlation_id}")
        # Response header v1 (flexible) ends with its tagged fields: none are sent to us.
        offset = 4 + (1 if getattr(response_class, "__flexible__", False) else 0)
        response, _ = entity_reader(response_class)(frame, offset)  # type: ignore[var-annotated]
        return response

    def sasl_plain(self, user: str, password: str) -> None:
        """SASL/PLAIN (SaslHandshake v1, SaslAuthenticate v2) as `user`."""
        handshake = self.request(
            sasl_handshake_request.SaslHandshakeRequest(mechanism="PLAIN"),
            sasl_handshake_response.SaslHandshakeResponse,
        )
        if handshake.error_code != ErrorCode.none:
            raise WireError(f"SASL handshake: {handshake.error_code.name}")
        answer = self.request(
            sasl_authenticate_request.SaslAuthenticateRequest(
                auth_bytes=b"\0" + user.encode() + b"\0" + password.encode()
            ),
            sasl_authenticate_response.SaslAuthenticateResponse,
        )
        if answer.error_code != ErrorCode.none:
            raise WireError(f"SASL authentication: {answer.error_message or answer.error_code}")

    def metadata(self, topics: list[str]) -> PodMetadataResponse:
        """Metadata v12 for `topics`, brokers with their Pod."""
        request = metadata_request.MetadataRequest(
            topics=tuple(
                metadata_request.MetadataRequestTopic(name=TopicName(t), topic_id=None)
                for t in topics
            ),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        response: PodMetadataResponse = self.request(request, PodMetadataResponse)
        return response

    def _frame(self) -> bytes:
        (size,) = SIZE.unpack(self._exactly(4))
        if not 4 <= size <= MAX_FRAME_BYTES:
            raise WireError(f"frame of {size} bytes")
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise WireError("the listener closed the connection")
            data += chunk
        return bytes(data)


class WireCanaryDirectory(CanaryDirectory):
    """Canary partitions by topic, from the Kafka listener's Metadata (the leader's Pod),
    cached and refreshed as `CanaryDirectory` does. `bootstrap` is "host:port";
    `sasl_plain` is (principal name, token) on a SASL_PLAINTEXT listener, None on PLAINTEXT."""

    def __init__(
        self,
        bootstrap: str,
        *,
        sasl_plain: tuple[str, str] | None = None,
        ttl_s: float = 30.0,
        min_refresh_s: float = 1.0,
        timeout_s: float = 5.0,
        client_id: str = "canary-directory",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        host, _, port = bootstrap.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bootstrap must be host:port, not {bootstrap!r}")
        self.host, self.port = host.strip("[]"), int(port)
        self._sasl_plain = sasl_plain
        self.client_id = client_id
        super().__init__(
            bootstrap,
            "",
            ttl_s=ttl_s,
            min_refresh_s=min_refresh_s,
            timeout_s=timeout_s,
            fetch=self._wire_fetch,
            clock=clock,
        )

    def _wire_fetch(self, topic: str) -> dict[str, Any]:
        """The topic's canary partitions in GET /api/v1/canary's shape, over one connection."""
        with WireConnection(
            self.host, self.port, timeout_s=self.timeout_s, client_id=self.client_id
        ) as connection:
            if self._sasl_plain is not None:
                connection.sasl_plain(*self._sasl_plain)
            entry = canary_partitions_of(connection.metadata([topic]), topic)
        if entry is None or not entry["canary_partitions"]:
            return {"topics": []}  # as the REST answer: only topics with canary partitions
        return {"topics": [entry]}

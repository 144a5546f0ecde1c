"""Stock Kafka clients' view of real brokers, for the tests, the campaign and the benchmarks:
a producer that keeps sending (what was acknowledged, when, and what failed), a broker's own
Metadata asked of it alone (of a topic, or of every topic), and a broker's log dirs by
directory id."""

from __future__ import annotations

import base64
import contextlib
import io
import socket
import struct
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from stock_kafka.broker import KafkaBroker


class Producing:
    """A kafka-python producer (acks=all, idempotent: its producer id comes from the controller
    through AllocateProducerIds) sending numbered messages `PREFIX-NNNNNN` until stopped, each
    acknowledgement's and error's time kept. A context manager: started on entry, stopped on
    exit (every send answered or failed)."""

    def __init__(
        self, bootstrap: str, prefix: str, topic: str, *, client_id: str = "producing"
    ) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=client_id,
            acks="all",
            enable_idempotence=True,
            retries=2**31 - 1,
            delivery_timeout_ms=120_000,
            request_timeout_ms=10_000,
            linger_ms=5,
        )
        self.topic = topic
        self.prefix = prefix
        self.sent = 0
        self._acks: dict[str, float] = {}  # key -> when acknowledged
        self._errors: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{client_id}", daemon=True)
        self.stopped = False

    def __enter__(self) -> Producing:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            key = f"{self.prefix}-{self.sent:06d}"
            self.sent += 1
            try:
                future = self.producer.send(self.topic, key=key.encode(), value=key.encode())
            except Exception as error:  # not sent (no metadata in time): counted as failed
                self._failed(key, error)
            else:
                future.add_callback(self._acked, key).add_errback(self._failed, key)
            time.sleep(0.02)

    def _acked(self, key: str, _metadata: Any) -> None:
        with self._lock:
            self._acks[key] = time.monotonic()

    def _failed(self, key: str, error: Exception) -> None:
        with self._lock:
            self._errors.append((time.monotonic(), f"{key}: {error!r}"))

    @property
    def acknowledged(self) -> set[str]:
        """The keys acknowledged so far."""
        with self._lock:
            return set(self._acks)

    @property
    def errors(self) -> list[str]:
        with self._lock:
            return [error for _, error in self._errors]

    def ack_times(self) -> list[float]:
        with self._lock:
            return sorted(self._acks.values())

    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self._acks)

    def acknowledged_between(self, began: float, ended: float) -> int:
        with self._lock:
            return sum(1 for at in self._acks.values() if began <= at <= ended)

    def errors_between(self, began: float, ended: float) -> int:
        with self._lock:
            return sum(1 for at, _ in self._errors if began <= at <= ended)

    def stop(self, flush_s: float = 120) -> None:
        """No new send; every one sent answered (or failed) within `flush_s`."""
        if self.stopped:
            return
        self.stopped = True
        self._stop.set()
        self._thread.join(timeout=30)
        with contextlib.suppress(Exception):
            self.producer.flush(timeout=flush_s)
        with contextlib.suppress(Exception):
            self.producer.close(timeout=30)


def broker_metadata(broker: KafkaBroker, topic: str, timeout_s: float = 5) -> dict[int, Any]:
    """The topic's partitions as this broker's own Metadata says (v12, asked of it alone: a
    client library would ask any broker it knows, the simulated ones included)."""
    (found,) = _metadata(broker, (topic,), timeout_s).topics
    if found.error_code.value != 0:
        raise RuntimeError(f"broker {broker.node_id}: {topic} {found.error_code.name}")
    return {int(p.partition_index): p for p in found.partitions}


def cluster_metadata(broker: KafkaBroker, timeout_s: float = 5) -> Any:
    """This broker's own Metadata of every topic (kio's MetadataResponse v12): the brokers it
    lists and every partition, as its image has them."""
    return _metadata(broker, None, timeout_s)


def _metadata(broker: KafkaBroker, topics: tuple[str, ...] | None, timeout_s: float) -> Any:
    from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
    from kio.schema.metadata.v12.response import MetadataResponse
    from kio.schema.request_header.v2.header import RequestHeader
    from kio.schema.types import TopicName
    from kio.serial import entity_reader, entity_writer
    from kio.static.primitive import i16, i32

    request = MetadataRequest(
        topics=(
            None
            if topics is None
            else tuple(MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics)
        ),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    header = RequestHeader(
        request_api_key=i16(3),
        request_api_version=i16(12),
        correlation_id=i32(1),
        client_id="campaign-metadata",
    )
    buffer = io.BytesIO()
    entity_writer(RequestHeader)(buffer, header)
    entity_writer(MetadataRequest)(buffer, request)
    frame = buffer.getvalue()
    with socket.create_connection((broker.host, broker.port), timeout=timeout_s) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        answer = _exactly(sock, size)
    # The correlation id (4 bytes), the flexible header's tagged fields (1), then the body.
    response, _ = entity_reader(MetadataResponse)(answer, 5)
    return response


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return data


def directory_ids(broker: KafkaBroker) -> dict[str, Path]:
    """The broker's log dirs by directory id, as the controller stores it (a UUID string; each
    dir's meta.properties names its own in Kafka's base64 form)."""
    found = {}
    for path in broker.data_dirs:
        for line in (path / "meta.properties").read_text().splitlines():
            if line.startswith("directory.id="):
                raw = base64.urlsafe_b64decode(line.split("=", 1)[1].strip() + "==")
                found[str(uuid.UUID(bytes=raw))] = path
    return found

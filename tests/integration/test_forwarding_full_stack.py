"""KIP-590 forwarding on real parts: two web nodes, two controllers, brokers' Envelopes.

Two gunicorn processes (`web-a`, `web-b`, each with its own multi-process metrics directory) send
admin writes over the Celery queue `controller` to the active `run_controller` worker; a second
worker stands by. Covered: writes sent to either node are applied once and audited as the client;
a write a broker redirects in an Envelope is audited as the client and the broker; kill -9 of
the active controller in the middle of a stream of writes loses nothing silently and applies
nothing twice; an Envelope from a principal without CLUSTER_ACTION and a broker principal on the
public API are refused, write nothing, are audited DENIED (and counted).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from devtools.stack import Http, Stack, running_stack, wait_for
from tests.conftest import need_postgres, need_redis
from tests.integration.test_controller_full_stack import (
    beat_until,
    log_end,
    register,
    verify,
)

pytestmark = pytest.mark.integration

SETTINGS = {
    "CP_CONTROLLER_LEASE_MS": "2000",  # the standby takes over ~2 s after a kill -9
    "CP_REQUEST_TIMEOUT_MS": "10000",  # long enough to wait through a failover
    "CP_BROKER_SESSION_TIMEOUT_MS": "600000",  # no fencing record in the middle of a test
}
NODES = ("web-a", "web-b")
TOPIC = "orders"
CLIENT_ID = "it-forwarding"
ENVELOPE = "/internal/v1/envelope"
AUDIT = "/api/v1/audit-events"
BROKER_PRINCIPAL = "User:broker"
REQUEST_TIMED_OUT, CLUSTER_AUTHORIZATION_FAILED, NOT_CONTROLLER = 7, 31, 41
SEQ = itertools.count(1)  # unique values, so that every write changes something

# --- the admin writes ----------------------------------------------------------------------


def set_retention(n: int) -> dict[str, Any]:
    config = {"name": "retention.ms", "config_operation": "SET", "value": retention(n)}
    return {"resources": [{"resource_type": "TOPIC", "resource_name": TOPIC, "configs": [config]}]}


def retention(n: int) -> str:
    return str(60_000 + n)


def allow_read(n: int) -> dict[str, Any]:
    acl = {
        "resource_type": "TOPIC",
        "resource_name": TOPIC,
        "pattern_type": "LITERAL",
        "principal": f"User:reader-{n}",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    return {"creations": [acl]}


def set_quota(n: int) -> dict[str, Any]:
    entity = [{"entity_type": "user", "entity_name": f"user-{n}"}]
    return {"entries": [{"entity": entity, "ops": [{"key": "producer_byte_rate", "value": n}]}]}


@dataclasses.dataclass(frozen=True)
class Write:
    """One kind of admin write; each writes exactly one record."""

    api: str  # Kafka's RPC name, as audited
    api_key: int  # for the Envelope
    path: str
    items: str  # the answer's per-item list
    record_type: str
    body: Callable[[int], dict[str, Any]]


CONFIGS = Write(
    "IncrementalAlterConfigs",
    44,
    "/api/v1/incremental-alter-configs",
    "responses",
    "ConfigRecord",
    set_retention,
)
ACLS = Write(
    "CreateAcls", 30, "/api/v1/create-acls", "results", "AccessControlEntryRecord", allow_read
)
QUOTAS = Write(
    "AlterClientQuotas",
    49,
    "/api/v1/alter-client-quotas",
    "entries",
    "ClientQuotaRecord",
    set_quota,
)
WRITES = (CONFIGS, ACLS, QUOTAS)


def acknowledged(write: Write, status: int, answer: Any) -> bool:
    """HTTP 200 and every item answered error_code 0."""
    if status != 200 or not isinstance(answer, dict) or not answer.get(write.items):
        return False
    return all(item["error_code"] == 0 for item in answer[write.items])


def send(
    http: Http, write: Write, n: int, *, token: str, request_id: str, timeout: float = 60
) -> tuple[int, Any]:
    headers = {"X-Request-ID": request_id, "X-Client-ID": CLIENT_ID}
    return http.post(write.path, write.body(n), token, headers=headers, timeout=timeout)


def envelope(write: Write, n: int, *, principal: str, broker_id: int) -> dict[str, Any]:
    return {
        "request_header": {
            "request_api_key": write.api_key,
            "request_api_version": 1,
            "client_id": "legacy-admin",
            "correlation_id": n,
        },
        "request_data": write.body(n),
        "request_principal": {"type": "User", "name": principal},
        "client_host_address": "10.1.2.3",
        "forwarding_broker_id": broker_id,
    }


def new_request_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# --- what the cluster holds ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Record:
    offset: int
    record_type: str
    controller_epoch: int
    principal: str
    client_id: str
    client_host: str


def records_of(stack: Stack, request_id: str) -> list[Record]:
    rows = stack.sql(
        'SELECT "offset", record_type, controller_epoch, principal, client_id, client_host'
        ' FROM cp_metadata_record WHERE request_id = %s ORDER BY "offset"',
        request_id,
    )
    return [Record(*row) for row in rows]


def audit_events(http: Http, token: str, **filters: Any) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({**filters, "page_size": 100})
    status, page = http.get(f"{AUDIT}?{query}", token)
    assert status == 200, page
    assert page["count"] == len(page["results"]), page  # one page holds them all
    return list(page["results"])


def topic_retention(http: Http, token: str) -> str | None:
    body = {
        "resources": [
            {"resource_type": "TOPIC", "resource_name": TOPIC, "configuration_keys": None}
        ]
    }
    status, answer = http.post("/api/v1/describe-configs", body, token)
    assert status == 200, answer
    (result,) = answer["results"]
    return next((c["value"] for c in result["configs"] if c["name"] == "retention.ms"), None)


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(http: Http) -> Samples:
    with urllib.request.urlopen(http.base + "/metrics", timeout=30) as response:
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def metric(samples: Samples, name: str, **labels: str) -> float:
    wanted = set(labels.items())
    return sum(value for (n, got), value in samples.items() if n == name and wanted <= got)


def increase(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return metric(after, name, **labels) - metric(before, name, **labels)


FORWARDED = "kafka_server_forwarding_num_client_forwarding_to_controller_total"
REDIRECTED = "kafka_server_forwarding_num_messages_redirected_total"
AUTHORIZATION_FAILED = (
    "kafka_server_forwarding_request_forwarding_to_controller_authorization_fail_count_total"
)
QUEUE_TIME = "kafka_server_forwardingmanager_queue_time_seconds_count"
REMOTE_TIME = "kafka_server_forwardingmanager_remote_time_seconds_count"

# --- the stack -------------------------------------------------------------------------------


@dataclasses.dataclass
class Cluster:
    stack: Stack
    nodes: dict[str, Http]
    epoch: int  # controller-a's

    @property
    def admin(self) -> str:
        return self.stack.tokens["admin"]

    @property
    def broker(self) -> str:
        return self.stack.tokens["broker"]

    def other(self, node: str) -> Http:
        """The node that did not take the request: audit and state are the cluster's, not a
        node's."""
        return self.nodes[NODES[1 - NODES.index(node)]]


def start_web_node(stack: Stack, name: str, metrics_root: Path) -> Http:
    """A gunicorn node whose workers' counters add up (PROMETHEUS_MULTIPROC_DIR of its own)."""
    metrics_dir = metrics_root / name
    metrics_dir.mkdir(parents=True)
    return stack.start_web(name, extra_env={"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)})


def create_topic(stack: Stack, http: Http) -> None:
    epoch = register(stack, 1)
    beat_until(stack, 1, epoch, log_end(stack), {"is_fenced": False})
    body = {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}]}
    status, answer = http.post("/api/v1/create-topics", body, stack.tokens["admin"])
    assert status == 200 and answer["topics"][0]["error_code"] == 0, answer


@contextlib.contextmanager
def two_node_cluster(root: Path) -> Iterator[Cluster]:
    # The module's shared stack and the failover test's stack are alive at the same time: each
    # has its own Redis key prefix, so neither controller takes the other's events.
    need_postgres()
    need_redis()
    with running_stack(root / "logs", settings=SETTINGS) as stack:
        stack.start_controller("controller-a", 3000)
        epoch = stack.wait_active("controller-a")
        stack.start_controller("controller-b", 3001)  # the standby
        nodes = {name: start_web_node(stack, name, root / "metrics") for name in NODES}
        create_topic(stack, nodes["web-a"])
        yield Cluster(stack, nodes, epoch)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Shared by the tests that kill nothing (unique request ids, metrics by difference)."""
    with two_node_cluster(tmp_path_factory.mktemp("forwarding")) as built:
        yield built


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    with two_node_cluster(tmp_path) as built:
        yield built


# --- writes through either node --------------------------------------------------------------


def assert_applied_once_and_audited(
    cluster: Cluster,
    node: str,
    write: Write,
    request_id: str,
    *,
    principal: str,
    client_id: str,
    client_host: str,
    forwarding_broker_id: int | None = None,
) -> None:
    (record,) = records_of(cluster.stack, request_id)  # exactly once
    assert record.record_type == write.record_type
    assert (record.principal, record.client_id, record.client_host) == (
        principal,
        client_id,
        client_host,
    )
    (event,) = audit_events(cluster.other(node), cluster.admin, request_id=request_id)
    assert event["api"] == write.api
    assert (event["principal"], event["client_id"], event["client_host"]) == (
        principal,
        client_id,
        client_host,
    )
    assert (event["outcome"], event["error_code"], event["http_status"]) == ("SUCCESS", 0, 200)
    assert (event["first_offset"], event["last_offset"]) == (record.offset, record.offset)
    forwarded_by = (BROKER_PRINCIPAL, forwarding_broker_id) if forwarding_broker_id else ("", None)
    assert (event["forwarding_principal"], event["forwarding_broker_id"]) == forwarded_by


def test_admin_writes_to_either_node_are_applied_once_and_audited_as_the_client(
    cluster: Cluster,
) -> None:
    before = {name: scrape(http) for name, http in cluster.nodes.items()}
    for node, http in cluster.nodes.items():
        for write in WRITES:
            n, request_id = next(SEQ), new_request_id(f"direct-{node}")
            status, answer = send(http, write, n, token=cluster.admin, request_id=request_id)
            assert acknowledged(write, status, answer), (status, answer)
            assert_applied_once_and_audited(
                cluster,
                node,
                write,
                request_id,
                principal="User:admin",
                client_id=CLIENT_ID,
                client_host="127.0.0.1",
            )
            if write is CONFIGS:  # the other node reads what this one wrote
                assert topic_retention(cluster.other(node), cluster.admin) == retention(n)

    after = {name: scrape(http) for name, http in cluster.nodes.items()}
    for node in NODES:
        for write in WRITES:
            sent = increase(before[node], after[node], FORWARDED, api=write.api)
            assert sent == 1, (node, write.api)
            assert increase(before[node], after[node], QUEUE_TIME, api=write.api) == 1
            assert increase(before[node], after[node], REMOTE_TIME, api=write.api) >= 1


def test_a_late_retry_with_the_same_request_id_is_not_applied_again(cluster: Cluster) -> None:
    a, b = cluster.nodes["web-a"], cluster.nodes["web-b"]
    first, second = next(SEQ), next(SEQ)
    retried = new_request_id("retried")
    status, answer = send(a, CONFIGS, first, token=cluster.admin, request_id=retried)
    assert acknowledged(CONFIGS, status, answer), answer
    status, newer = send(b, CONFIGS, second, token=cluster.admin, request_id=new_request_id("new"))
    assert acknowledged(CONFIGS, status, newer), newer

    # The client never saw the first answer and sends it again, to the other node.
    status, again = send(b, CONFIGS, first, token=cluster.admin, request_id=retried)
    assert (status, again) == (200, answer)
    assert len(records_of(cluster.stack, retried)) == 1
    assert topic_retention(a, cluster.admin) == retention(second)  # not set back
    # Audited once: the retry answered the write the first attempt made (one row per write).
    events = audit_events(a, cluster.admin, request_id=retried)
    assert [(e["outcome"], e["first_offset"]) for e in events] == [
        ("SUCCESS", records_of(cluster.stack, retried)[0].offset)
    ]


# --- the Envelope ----------------------------------------------------------------------------


def test_a_write_a_broker_forwards_is_applied_and_audited_as_the_client_and_the_broker(
    cluster: Cluster,
) -> None:
    cluster.stack.manage("create_principal", "ops", "--super-user")
    before = {name: scrape(http) for name, http in cluster.nodes.items()}
    sent: set[str] = set()
    for node, http in cluster.nodes.items():
        for write in WRITES:
            n, request_id = next(SEQ), new_request_id(f"envelope-{node}")
            status, answer = http.post(
                ENVELOPE,
                envelope(write, n, principal="ops", broker_id=1),
                cluster.broker,
                headers={"X-Request-ID": request_id},
            )
            assert status == 200 and answer["error_code"] == 0, answer
            assert answer["response_header"] == {"correlation_id": n}
            assert answer["response_status"] == 200
            assert acknowledged(write, 200, answer["response_data"]), answer
            assert_applied_once_and_audited(
                cluster,
                node,
                write,
                request_id,
                principal="User:ops",
                client_id="legacy-admin",
                client_host="10.1.2.3",
                forwarding_broker_id=1,
            )
            sent.add(request_id)
    # An envelope that ran is audited as its inner request only.
    assert (
        audit_events(cluster.nodes["web-a"], cluster.admin, api="Envelope", outcome="SUCCESS") == []
    )
    forwarded = audit_events(
        cluster.nodes["web-b"],
        cluster.admin,
        forwarded="true",
        forwarding_principal=BROKER_PRINCIPAL,
        forwarding_broker_id=1,
    )
    assert {e["request_id"] for e in forwarded} == sent
    assert {e["principal"] for e in forwarded} == {"User:ops"}

    after = {name: scrape(http) for name, http in cluster.nodes.items()}
    for node in NODES:
        # No principal label on /metrics (issue 34): the audit rows above name the broker.
        assert increase(before[node], after[node], REDIRECTED) == 3
        assert increase(before[node], after[node], AUTHORIZATION_FAILED) == 0
        for write in WRITES:
            assert increase(before[node], after[node], FORWARDED, api=write.api) == 1
            assert increase(before[node], after[node], QUEUE_TIME, api=write.api) == 1


def test_an_envelope_from_a_principal_without_cluster_action_is_refused_counted_and_audited(
    cluster: Cluster,
) -> None:
    mallory = cluster.stack.manage("create_principal", "mallory").stdout.split()[-1]
    for node, http in cluster.nodes.items():
        before = {name: scrape(h) for name, h in cluster.nodes.items()}
        end, value = log_end(cluster.stack), topic_retention(http, cluster.admin)
        request_id = new_request_id(f"mallory-{node}")
        status, answer = http.post(
            ENVELOPE,
            envelope(CONFIGS, next(SEQ), principal="admin", broker_id=1),
            mallory,
            headers={"X-Request-ID": request_id},
        )
        assert status == 403, answer
        assert (answer["error"], answer["error_code"]) == (
            "CLUSTER_AUTHORIZATION_FAILED",
            CLUSTER_AUTHORIZATION_FAILED,
        )
        assert answer["response_data"] is None

        assert log_end(cluster.stack) == end and records_of(cluster.stack, request_id) == []
        assert topic_retention(http, cluster.admin) == value
        (event,) = audit_events(cluster.other(node), cluster.admin, request_id=request_id)
        assert (event["api"], event["principal"]) == ("Envelope", "User:mallory")
        assert (event["outcome"], event["error_code"], event["http_status"]) == (
            "DENIED",
            CLUSTER_AUTHORIZATION_FAILED,
            403,
        )
        assert event["resources"] == [
            {
                "resource_type": "API",
                "resource_name": CONFIGS.api,
                "error_code": CLUSTER_AUTHORIZATION_FAILED,
            }
        ]
        assert (event["first_offset"], event["forwarding_principal"]) == (None, "")

        after = {name: scrape(h) for name, h in cluster.nodes.items()}
        assert increase(before[node], after[node], AUTHORIZATION_FAILED) == 1
        other = NODES[1 - NODES.index(node)]
        assert increase(before[other], after[other], AUTHORIZATION_FAILED) == 0
        assert increase(before[node], after[node], REDIRECTED) == 0


def test_a_broker_principal_on_the_public_admin_api_is_refused_and_audited(
    cluster: Cluster,
) -> None:
    for node, http in cluster.nodes.items():
        for write in WRITES:
            before, end = scrape(http), log_end(cluster.stack)
            request_id = new_request_id(f"broker-{node}")
            status, answer = send(
                http, write, next(SEQ), token=cluster.broker, request_id=request_id
            )
            assert status == 403, answer
            assert answer["error"] == "CLUSTER_AUTHORIZATION_FAILED", answer
            assert log_end(cluster.stack) == end and records_of(cluster.stack, request_id) == []
            (event,) = audit_events(cluster.other(node), cluster.admin, request_id=request_id)
            assert (event["api"], event["principal"]) == (write.api, BROKER_PRINCIPAL)
            assert (event["outcome"], event["error_code"], event["http_status"]) == (
                "DENIED",
                CLUSTER_AUTHORIZATION_FAILED,
                403,
            )
            assert event["first_offset"] is None
            assert increase(before, scrape(http), FORWARDED, api=write.api) == 0


# --- kill -9 of the active controller in the middle of a stream of writes -------------------


@dataclasses.dataclass(frozen=True)
class Sent:
    request_id: str
    write: Write
    node: str
    started: float
    finished: float
    status: int  # -1: no HTTP answer at all
    answer: Any

    @property
    def acknowledged(self) -> bool:
        return acknowledged(self.write, self.status, self.answer)

    @property
    def refused_in_time(self) -> bool:
        """Answered that the controller did not answer, or that there was none."""
        code = self.answer.get("error_code") if isinstance(self.answer, dict) else None
        return (self.status, code) in ((504, REQUEST_TIMED_OUT), (503, NOT_CONTROLLER))


class WriteStream:
    """Client threads sending admin writes with unique request ids to both nodes, until told
    to stop; every request and its answer is kept."""

    def __init__(self, cluster: Cluster, clients: int) -> None:
        self.cluster = cluster
        self.sent: list[Sent] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._client, args=(index,), daemon=True)
            for index in range(clients)
        ]

    def __enter__(self) -> WriteStream:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in self.threads), "a client never got an answer"

    def acknowledged_after(self, moment: float) -> int:
        return sum(1 for s in list(self.sent) if s.acknowledged and s.started > moment)

    def _client(self, index: int) -> None:
        for i in itertools.count():
            if self.stop.is_set():
                return
            node, write = NODES[(index + i) % len(NODES)], WRITES[i % len(WRITES)]
            request_id = f"stream-{index}-{i}"
            started = time.monotonic()
            try:
                status, answer = send(
                    self.cluster.nodes[node],
                    write,
                    next(SEQ),
                    token=self.cluster.admin,
                    request_id=request_id,
                )
            except Exception as error:  # a 500's HTML page, a reset connection...
                status, answer = -1, repr(error)
            self.sent.append(
                Sent(request_id, write, node, started, time.monotonic(), status, answer)
            )


def applied_by_request(stack: Stack) -> dict[str, list[Record]]:
    rows = stack.sql(
        'SELECT request_id, "offset", record_type, controller_epoch, principal, client_id,'
        " client_host FROM cp_metadata_record WHERE request_id LIKE 'stream-%%'"
        ' ORDER BY "offset"'
    )
    applied: dict[str, list[Record]] = {}
    for request_id, *record in rows:
        applied.setdefault(request_id, []).append(Record(*record))
    return applied


def audited_by_request(stack: Stack) -> dict[str, list[tuple[Any, ...]]]:
    rows = stack.sql(
        "SELECT request_id, outcome, error_code, first_offset, last_offset, principal"
        " FROM cp_audit_event WHERE request_id LIKE 'stream-%%'"
    )
    audited: dict[str, list[tuple[Any, ...]]] = {}
    for request_id, *event in rows:
        audited.setdefault(request_id, []).append(tuple(event))
    return audited


def test_kill_9_of_the_active_controller_mid_stream_loses_nothing_and_applies_nothing_twice(
    own_cluster: Cluster,
) -> None:
    stack, epoch = own_cluster.stack, own_cluster.epoch
    assert stack.lease()[:2] == ("controller-a", epoch)
    with WriteStream(own_cluster, clients=4) as stream:
        wait_for(lambda: stream.acknowledged_after(0) >= 12, 30, "writes through controller-a")
        killed_at = time.monotonic()
        stack.kill("controller-a")
        assert stack.wait_active("controller-b", timeout=30) == epoch + 1
        took_over = time.monotonic()
        wait_for(lambda: stream.acknowledged_after(took_over) >= 12, 30, "writes after failover")
    assert stack.procs["controller-a"].wait(timeout=10) == -9
    sent = {s.request_id: s for s in stream.sent}
    assert len(sent) == len(stream.sent)

    # Every request was answered: acknowledged, or refused for want of a controller in time.
    unexpected = [s for s in stream.sent if not (s.acknowledged or s.refused_in_time)]
    assert unexpected == []

    # Every acknowledged write is in the log exactly once; no other was applied twice.
    applied = applied_by_request(stack)
    assert set(applied) <= set(sent)
    acknowledged_ids = [s.request_id for s in stream.sent if s.acknowledged]
    assert all(len(applied.get(r, [])) == 1 for r in acknowledged_ids), {
        r: applied.get(r) for r in acknowledged_ids if len(applied.get(r, [])) != 1
    }
    assert all(len(records) == 1 for records in applied.values())
    for request_id in acknowledged_ids:
        (record,) = applied[request_id]
        assert record.record_type == sent[request_id].write.record_type
        assert (record.principal, record.client_id) == ("User:admin", CLIENT_ID)

    # Both controllers applied some, and writes were waiting while there was no controller
    # (sent to the one killed, or sent before the standby took over): they were answered by
    # the new one, applied once (retried ones the old one had committed are not applied again).
    epochs = {applied[r][0].controller_epoch for r in acknowledged_ids}
    assert epochs == {epoch, epoch + 1}
    waited = [s for s in stream.sent if s.acknowledged and s.started < took_over < s.finished]
    assert waited, "no write waited through the failover"
    assert all(
        applied[s.request_id][0].controller_epoch == epoch + 1
        for s in stream.sent
        if s.acknowledged and s.started > killed_at
    )

    # Each request audited once, with what it wrote.
    audited = audited_by_request(stack)
    assert set(audited) == set(sent)
    for request_id, s in sent.items():
        (event,) = audited[request_id]
        if s.acknowledged:
            offset = applied[request_id][0].offset
            assert event == ("SUCCESS", 0, offset, offset, "User:admin")
        else:
            assert event[:2] == ("FAILED", s.answer["error_code"])

    records, first, last = stack.sql(
        'SELECT count(*), min("offset"), max("offset") FROM cp_metadata_record'
    )[0]
    assert records == last - first + 1  # gap-free
    verify(stack)

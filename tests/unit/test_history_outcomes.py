"""The history recorder's outcomes (devtools.history), against scripted web nodes: what an answer
says about a write (ok, failed, unknown), retries with the same request id on the other node,
reads as one attempt each, and the outputs read from Kafka's answers."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from devtools import history
from devtools.history import (
    ACL_KEY,
    QUOTA_KEY,
    HistoryClients,
    Verdict,
    acl_add,
    acl_read,
    config_read,
    config_write,
    quota_change,
    quota_read,
    verdict,
)
from devtools.linearizability import FAILED, OK, UNKNOWN


class Scripted:
    """A web node answering from a shared script; a `None` entry is a connection reset."""

    def __init__(self, name: str, script: list[tuple[int, Any] | None], seen: list[Any]) -> None:
        self.name = name
        self.script = script
        self.seen = seen

    def post(self, path: str, body: Any, token: str, **kw: Any) -> tuple[int, Any]:
        self.seen.append((self.name, path, kw.get("headers", {}).get("X-Request-ID")))
        answer = self.script.pop(0) if self.script else (503, {"error_code": 41})
        if answer is None:
            raise ConnectionResetError("reset by peer")
        return answer


def clients_with(
    script: list[tuple[int, Any] | None], give_up_s: float = 0.5
) -> tuple[HistoryClients, list[Any]]:
    seen: list[Any] = []
    nodes = [Scripted("a", script, seen), Scripted("b", script, seen)]
    return HistoryClients(lambda: nodes, "token", give_up_s=give_up_s), seen


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(history.time, "sleep", lambda _s: None)
    yield


WRITE_OK = (200, {"responses": [{"error_code": 0}]})


def test_a_write_retried_on_the_other_node_with_the_same_request_id() -> None:
    clients, seen = clients_with([(503, {"error_code": 41}), None, WRITE_OK])
    op = clients.perform(config_write("t", "segment.ms", "7"), client=0, sequence=0)
    assert (op.outcome, op.kind, op.input) == (OK, "write", "7")
    assert [node for node, _, _ in seen] == ["a", "b", "a"]
    assert len({request_id for _, _, request_id in seen}) == 1
    assert op.invoked <= op.completed < math.inf


def test_a_definite_refusal_is_failed_unless_an_earlier_attempt_may_have_applied() -> None:
    refused = (200, {"responses": [{"error_code": 40, "error_message": "bad"}]})
    clients, _ = clients_with([refused])
    assert clients.perform(config_write("t", "segment.ms", "7")).outcome == FAILED
    clients, _ = clients_with([(400, {"error_code": 42})])
    assert clients.perform(config_write("t", "segment.ms", "7")).outcome == FAILED
    clients, _ = clients_with([(504, {"error_code": 7}), (400, {"error_code": 42})])
    assert clients.perform(config_write("t", "segment.ms", "7")).outcome == UNKNOWN


def test_a_write_given_up_is_unknown_unless_it_was_never_processed() -> None:
    clients, _ = clients_with([], give_up_s=0.05)  # 503 NOT_CONTROLLER until it gives up
    assert clients.perform(acl_add("User:x")).outcome == UNKNOWN
    clients, _ = clients_with([(429, {"error_code": 89})] * 10_000, give_up_s=0.05)
    assert clients.perform(acl_add("User:x")).outcome == FAILED


def test_a_read_is_one_attempt() -> None:
    clients, seen = clients_with([None])
    op = clients.perform(acl_read())
    assert op.outcome == UNKNOWN and len(seen) == 1
    clients, seen = clients_with([(403, {"error_code": 31})])
    assert clients.perform(quota_read()).outcome == FAILED
    assert all(request_id is None for _, _, request_id in seen)


def test_outputs_read_from_kafka_answers() -> None:
    def configs(source: str) -> tuple[int, Any]:
        entry = {"name": "segment.ms", "value": "9", "config_source": source}
        return 200, {"results": [{"error_code": 0, "configs": [entry]}]}

    clients, _ = clients_with([configs("DYNAMIC_TOPIC_CONFIG"), configs("DEFAULT_CONFIG")])
    assert clients.perform(config_read("t", "segment.ms")).output == "9"
    assert clients.perform(config_read("t", "segment.ms")).output is None  # not set
    acl = {"host": "*", "operation": "READ", "permission_type": "ALLOW"}
    resources = [
        {
            "resource_name": "history-acls",
            "pattern_type": "LITERAL",
            "acls": [{**acl, "principal": "User:a"}, {**acl, "principal": "User:b"}],
        }
    ]
    quotas = [{"entity": [], "values": [{"key": "producer_byte_rate", "value": 1.0}]}]
    clients, _ = clients_with(
        [
            (200, {"error_code": 0, "resources": resources}),
            (200, {"error_code": 0, "entries": quotas}),
        ]
    )
    read_acls = clients.perform(acl_read())
    assert (read_acls.key, read_acls.output) == (ACL_KEY, frozenset({"User:a", "User:b"}))
    read_quotas = clients.perform(quota_read())
    assert (read_quotas.key, read_quotas.output) == (QUOTA_KEY, frozenset({"producer_byte_rate"}))
    change = quota_change("request_percentage", remove=True)
    assert (change.kind, change.input) == ("remove", "request_percentage")


@pytest.mark.parametrize(
    ("status", "answer", "expected"),
    [
        (200, {"responses": [{"error_code": 0}]}, Verdict.OK),
        (200, {"responses": [{"error_code": 40}]}, Verdict.REFUSED),
        (200, {"responses": [{"error_code": 7}]}, Verdict.UNSURE),
        (200, {"responses": []}, Verdict.UNSURE),
        (0, None, Verdict.UNSURE),
        (500, None, Verdict.UNSURE),
        (503, {"error_code": 41}, Verdict.UNSURE),
        (400, {"error_code": -1}, Verdict.UNSURE),
        (408, {"error_code": 7}, Verdict.NOT_PROCESSED),  # the server's own: never ran
        (429, {"error_code": 89}, Verdict.NOT_PROCESSED),
        (403, {"error_code": 31}, Verdict.REFUSED),
    ],
)
def test_verdicts(status: int, answer: Any, expected: Verdict) -> None:
    assert verdict(status, answer, lambda a: a["responses"][0]) is expected

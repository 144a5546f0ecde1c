"""The fault campaign's history recorder: clients whose every admin write, and every
read of the same keys, becomes an `Operation` for the linearizability checker
(`devtools.linearizability`).

`HistoryClients` runs a few client threads; each performs random operations on a small set of
keys, sending each one to one web node and the next one to the other, and records when it was
invoked, when its answer came and what it was. The keys:

- **Topic configs, as registers** (`config:<topic>:<name>`): IncrementalAlterConfigs SETs
  `retention.bytes` or `segment.ms` of one of a few topics to a value no other write uses;
  DescribeConfigs reads the topic's own value (`config_source` DYNAMIC_TOPIC_CONFIG), None when
  it has none (the default shows through).
- **ACLs, as a set** (`acls:TOPIC:<topic>`): CreateAcls adds, DeleteAcls (an exact filter)
  removes the binding "<principal> may READ topic <topic> (LITERAL, host *, ALLOW)" for one of a
  few principals; DescribeAcls of that resource reads which principals have it.
- **Client quotas, as a set** (`quotas:user:<user>`): AlterClientQuotas sets one of three quota
  keys of one user entity (each key always to the same value) or removes it;
  DescribeClientQuotas (EXACT, strict) reads which keys the entity has. A set of keys rather
  than a register per key: the values never change, so the set sees every lost, doubled or
  resurrected write, and one key per entity keeps the histories long.

`prepare()` (which `start()` calls) creates the topics and empties every key, retrying until
acknowledged, so every key starts from a known state (None, the empty set) before anything is
recorded.

Outcomes, as the checker needs them:

- A write keeps one `X-Request-ID` across its attempts (what makes a retry apply once) and is
  retried, on the other web node, until acknowledged or `give_up_s` after it was invoked. It is
  `ok` when acknowledged (the item's `error_code` 0); `failed` on a definite refusal that
  guarantees no effect (an item error such as INVALID_CONFIG, an HTTP 4xx other than 408 and
  429) when no earlier attempt could have applied it; `unknown` when given up, or refused after
  an attempt whose fate is unknown (no answer, a 5xx, NOT_CONTROLLER, REQUEST_TIMED_OUT,
  UNKNOWN_SERVER_ERROR). 408 and 429 mean "not processed": retried, and they leave a write
  `failed`, not `unknown`, if nothing else happened before the give-up.
- A read is one attempt, invoked when sent and completed when answered; a read that fails is
  recorded `failed` (or `unknown` when it had no answer) and the checker leaves it out.

Invocation and completion are `time.monotonic()` in this process, for every thread.

    clients = HistoryClients(lambda: [web_a, web_b], admin_token)
    clients.start()
    ...  # faults
    clients.stop()
    result = clients.check()  # a devtools.linearizability.CheckResult
    print(result.describe())
"""

from __future__ import annotations

import dataclasses
import enum
import http.client
import itertools
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from devtools.linearizability import (
    FAILED,
    OK,
    UNKNOWN,
    CheckResult,
    Model,
    Operation,
    Outcome,
    check,
    register,
    set_model,
)
from devtools.stack import Http

TOPICS = ("history-0", "history-1")
CONFIGS = ("retention.bytes", "segment.ms")
ACL_TOPIC = "history-acls"
PRINCIPALS = tuple(f"User:history-{n}" for n in range(4))
QUOTA_USER = "history-quota-user"
QUOTA_VALUES = {
    "producer_byte_rate": 1048576.0,
    "consumer_byte_rate": 2097152.0,
    "request_percentage": 50.0,
}
ACL_KEY = f"acls:TOPIC:{ACL_TOPIC}"
QUOTA_KEY = f"quotas:user:{QUOTA_USER}"
FAMILIES = ("config", "acls", "quotas")  # the first part of their keys

# Kafka's codes that say nothing of whether a write applied: it may have, or may still.
UNSURE_CODES = frozenset({-1, 7, 41})  # UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT, NOT_CONTROLLER
TOPIC_ALREADY_EXISTS = 36
# The server's answers to a request it never ran (a slow client's 408, the API rate limit's 429).
NOT_PROCESSED = frozenset({408, 429})
DYNAMIC_TOPIC_CONFIG = "DYNAMIC_TOPIC_CONFIG"

REGISTER = register(None, name="config register")
SET = set_model(frozenset(), name="set")


def config_key(topic: str, name: str) -> str:
    return f"config:{topic}:{name}"


def model_for(op: Operation) -> Model:
    """The model of the key an operation is on: configs are registers, the rest sets."""
    return REGISTER if op.key.startswith("config:") else SET


class Verdict(enum.Enum):
    OK = "ok"
    REFUSED = "refused"  # definitely not applied, and it will not be
    NOT_PROCESSED = "not processed"  # definitely not applied: retry
    UNSURE = "unsure"  # may have been applied, or may still be: retry with the same id


@dataclasses.dataclass(frozen=True)
class Call:
    """One operation: the request, and where its answer says whether it worked."""

    key: str
    kind: str
    path: str
    body: dict[str, Any]
    input: Hashable = None
    item: Callable[[Any], Any] = lambda answer: answer  # what carries the error code
    read: Callable[[Any], Hashable] | None = None  # a read's output, from its answer


def _first(field: str) -> Callable[[Any], Any]:
    def item(answer: Any) -> Any:
        return answer[field][0]

    return item


def _error_code(answer: Any, item: Callable[[Any], Any]) -> int | None:
    try:
        return int(item(answer)["error_code"])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def verdict(status: int, answer: Any, item: Callable[[Any], Any]) -> Verdict:
    """What one HTTP answer says about a call (status 0: no answer at all)."""
    if status == 0:
        return Verdict.UNSURE
    if status == 200:
        code = _error_code(answer, item)
        if code is None:
            return Verdict.UNSURE  # half an answer
        if code == 0:
            return Verdict.OK
        return Verdict.UNSURE if code in UNSURE_CODES else Verdict.REFUSED
    if status in NOT_PROCESSED:  # the server's own 408 carries REQUEST_TIMED_OUT: not run
        return Verdict.NOT_PROCESSED
    code = answer.get("error_code") if isinstance(answer, dict) else None
    if status >= 500 or code in UNSURE_CODES:
        return Verdict.UNSURE
    return Verdict.REFUSED


# --- the calls -------------------------------------------------------------------------------


def config_write(topic: str, name: str, value: str) -> Call:
    config = {"name": name, "config_operation": "SET", "value": value}
    resource = {"resource_type": "TOPIC", "resource_name": topic, "configs": [config]}
    return Call(
        key=config_key(topic, name),
        kind="write",
        path="/api/v1/incremental-alter-configs",
        body={"resources": [resource]},
        input=value,
        item=_first("responses"),
    )


def config_read(topic: str, name: str) -> Call:
    def value(answer: Any) -> Hashable:
        for entry in answer["results"][0]["configs"]:
            if entry["name"] == name:
                return entry["value"] if entry["config_source"] == DYNAMIC_TOPIC_CONFIG else None
        return None

    resource = {"resource_type": "TOPIC", "resource_name": topic, "configuration_keys": [name]}
    return Call(
        key=config_key(topic, name),
        kind="read",
        path="/api/v1/describe-configs",
        body={"resources": [resource]},
        item=_first("results"),
        read=value,
    )


def _binding(principal: str) -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": ACL_TOPIC,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }


def _acl_filter(principal: str | None) -> dict[str, str | None]:
    return {
        "resource_type_filter": "TOPIC",
        "resource_name_filter": ACL_TOPIC,
        "pattern_type_filter": "LITERAL",
        "principal_filter": principal,
        "host_filter": None if principal is None else "*",
        "operation": "ANY" if principal is None else "READ",
        "permission_type": "ANY" if principal is None else "ALLOW",
    }


def acl_add(principal: str) -> Call:
    return Call(
        key=ACL_KEY,
        kind="add",
        path="/api/v1/create-acls",
        body={"creations": [_binding(principal)]},
        input=principal,
        item=_first("results"),
    )


def acl_remove(principal: str) -> Call:
    return Call(
        key=ACL_KEY,
        kind="remove",
        path="/api/v1/delete-acls",
        body={"filters": [_acl_filter(principal)]},
        input=principal,
        item=_first("filter_results"),
    )


def acl_read() -> Call:
    def principals(answer: Any) -> Hashable:
        return frozenset(
            acl["principal"]
            for resource in answer["resources"]
            if resource["resource_name"] == ACL_TOPIC and resource["pattern_type"] == "LITERAL"
            for acl in resource["acls"]
            if (acl["operation"], acl["permission_type"], acl["host"]) == ("READ", "ALLOW", "*")
        )

    body = {
        "resource_type": "TOPIC",
        "resource_name": ACL_TOPIC,
        "pattern_type": "LITERAL",
        "operation": "ANY",
        "permission_type": "ANY",
    }
    return Call(key=ACL_KEY, kind="read", path="/api/v1/describe-acls", body=body, read=principals)


def _quota_entity() -> list[dict[str, str]]:
    return [{"entity_type": "user", "entity_name": QUOTA_USER}]


def quota_change(name: str, *, remove: bool) -> Call:
    op = {"key": name, "value": QUOTA_VALUES[name], "remove": remove}
    return Call(
        key=QUOTA_KEY,
        kind="remove" if remove else "add",
        path="/api/v1/alter-client-quotas",
        body={"entries": [{"entity": _quota_entity(), "ops": [op]}]},
        input=name,
        item=_first("entries"),
    )


def quota_read() -> Call:
    def names(answer: Any) -> Hashable:
        return frozenset(value["key"] for entry in answer["entries"] for value in entry["values"])

    component = {"entity_type": "user", "match_type": "EXACT", "match": QUOTA_USER}
    return Call(
        key=QUOTA_KEY,
        kind="read",
        path="/api/v1/describe-client-quotas",
        body={"components": [component], "strict": True},
        read=names,
    )


def _span(history: Sequence[Operation]) -> float:
    """From the first invocation to the last answer."""
    if not history:
        return 0.0
    answered = [op.completed for op in history if op.outcome != UNKNOWN] or [history[0].invoked]
    return max(answered) - min(op.invoked for op in history)


# --- the clients -----------------------------------------------------------------------------


class HistoryClients:
    """Client threads recording a history of admin writes and reads (see the module's
    docstring). `nodes` answers the web nodes to use now (a node restarted by a fault is a new
    `Http`); `token` is a super user's."""

    def __init__(
        self,
        nodes: Callable[[], list[Http]],
        token: str,
        *,
        threads: int = 4,
        give_up_s: float = 60.0,
        attempt_timeout_s: float = 35.0,
        topics: Sequence[str] = TOPICS,
        replication_factor: int = 1,
        read_share: float = 0.5,
        think_s: float = 0.02,
        seed: int | None = None,
    ) -> None:
        self.nodes = nodes
        self.token = token
        self.threads = threads
        self.give_up_s = give_up_s
        self.attempt_timeout_s = attempt_timeout_s
        self.topics = tuple(topics)
        self.replication_factor = replication_factor
        self.read_share = read_share
        self.think_s = think_s
        self.seed = random.randrange(2**32) if seed is None else seed
        # Request ids of this run only: the controller answers an id it applied from memory.
        self.run_id = uuid.uuid4().hex[:8]
        self.statuses: Counter[str] = Counter()  # HTTP statuses (or connection errors) seen
        self._operations: list[Operation] = []
        self._values = itertools.count(1_000_000)  # a new config value for every write
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._stop = threading.Event()
        self._go = threading.Event()
        self._go.set()
        self._workers: list[threading.Thread] = []

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Create the topics and empty every key, then start the client threads."""
        self.prepare()
        for client in range(self.threads):
            worker = threading.Thread(
                target=self._run, args=(client,), name=f"history-{client}", daemon=True
            )
            worker.start()
            self._workers.append(worker)

    def pause(self) -> None:
        """No new operation starts; returns once those in flight are answered (or given up)."""
        self._go.clear()
        with self._idle:
            self._idle.wait_for(
                lambda: self._in_flight == 0, timeout=self.give_up_s + self.attempt_timeout_s + 5
            )

    def resume(self) -> None:
        self._go.set()

    def stop(self) -> None:
        """Every thread finishes the operation it is in (answered or given up) and ends."""
        self._stop.set()
        self._go.set()
        for worker in self._workers:
            worker.join(timeout=self.give_up_s + self.attempt_timeout_s + 5)

    # --- what was recorded -------------------------------------------------------------------
    def history(self) -> list[Operation]:
        """Every operation recorded so far, by invocation time."""
        with self._lock:
            return sorted(self._operations, key=lambda op: (op.invoked, op.completed))

    def check(self) -> CheckResult:
        """The history checked for linearizability, each key against its model."""
        return check(self.history(), model_for)

    def counts(self) -> dict[str, dict[str, int]]:
        """Operations by family (config, acls, quotas) and kind, then by outcome."""
        counted: dict[str, Counter[str]] = {}
        for op in self.history():
            family = op.key.split(":", 1)[0]
            counted.setdefault(f"{family} {op.kind}", Counter())[op.outcome] += 1
        return {name: dict(outcomes) for name, outcomes in sorted(counted.items())}

    def report(self) -> dict[str, Any]:
        """For the campaign's JSON report: what was recorded and what the checker found."""
        result = self.check()
        history = self.history()
        return {
            "clients": self.threads,
            "operations": len(history),
            "by_kind": self.counts(),
            "seconds": round(_span(history), 1),
            "http": dict(self.statuses),
            "check": result.summary(),
        }

    # --- setting the keys up -----------------------------------------------------------------
    def prepare(self) -> None:
        """The topics exist and every key is empty: known initial states for the checker."""
        for topic in self.topics:
            new = {
                "name": topic,
                "num_partitions": 1,
                "replication_factor": self.replication_factor,
            }
            self._until_acknowledged(
                "/api/v1/create-topics",
                {"topics": [new]},
                _first("topics"),
                also_fine={TOPIC_ALREADY_EXISTS},
            )
            unset = [{"name": n, "config_operation": "DELETE", "value": None} for n in CONFIGS]
            resource = {"resource_type": "TOPIC", "resource_name": topic, "configs": unset}
            self._until_acknowledged(
                "/api/v1/incremental-alter-configs",
                {"resources": [resource]},
                _first("responses"),
            )
        self._until_acknowledged(
            "/api/v1/delete-acls", {"filters": [_acl_filter(None)]}, _first("filter_results")
        )
        removals = [{"key": name, "value": 0.0, "remove": True} for name in QUOTA_VALUES]
        self._until_acknowledged(
            "/api/v1/alter-client-quotas",
            {"entries": [{"entity": _quota_entity(), "ops": removals}]},
            _first("entries"),
        )

    def _until_acknowledged(
        self,
        path: str,
        body: dict[str, Any],
        item: Callable[[Any], Any],
        also_fine: frozenset[int] | set[int] = frozenset(),
    ) -> None:
        request_id = f"history-{self.run_id}-prepare-{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + self.give_up_s
        for attempt in itertools.count():
            nodes = self.nodes()
            status, answer = self._send(nodes[attempt % len(nodes)], path, body, request_id)
            found = verdict(status, answer, item)
            if found is Verdict.OK or (status == 200 and _error_code(answer, item) in also_fine):
                return
            if found is Verdict.REFUSED or time.monotonic() > deadline:
                raise RuntimeError(f"history clients: {path} answered {status}: {answer!r}")
            time.sleep(0.2)

    # --- one client --------------------------------------------------------------------------
    def _run(self, client: int) -> None:
        rng = random.Random(f"{self.seed}-{client}")
        for sequence in itertools.count():
            self._go.wait()
            with self._lock:
                if self._stop.is_set():
                    return
                if not self._go.is_set():  # paused since: wait again
                    continue
                self._in_flight += 1
            try:
                op = self.perform(self._choose(rng), client, sequence)
                with self._lock:
                    self._operations.append(op)
            finally:
                with self._idle:
                    self._in_flight -= 1
                    self._idle.notify_all()
            time.sleep(rng.random() * self.think_s)

    def _choose(self, rng: random.Random) -> Call:
        family = rng.choice(FAMILIES)
        reading = rng.random() < self.read_share
        if family == "config":
            topic, name = rng.choice(self.topics), rng.choice(CONFIGS)
            if reading:
                return config_read(topic, name)
            return config_write(topic, name, str(next(self._values)))
        adding = rng.random() < 0.5
        if family == "acls":
            if reading:
                return acl_read()
            principal = rng.choice(PRINCIPALS)
            return acl_add(principal) if adding else acl_remove(principal)
        if reading:
            return quota_read()
        return quota_change(rng.choice(tuple(QUOTA_VALUES)), remove=not adding)

    def perform(self, call: Call, client: int = 0, sequence: int = 0) -> Operation:
        """Run one call as client `client`'s `sequence`th operation (not recorded)."""
        first_node = client + sequence  # alternate between the web nodes
        if call.read is not None:
            return self._read(call, client, first_node)
        return self._write(call, client, first_node, f"history-{self.run_id}-{client}-{sequence}")

    def _read(self, call: Call, client: int, node_index: int) -> Operation:
        nodes = self.nodes()
        invoked = time.monotonic()
        status, answer = self._send(nodes[node_index % len(nodes)], call.path, call.body, None)
        completed = time.monotonic()
        found = verdict(status, answer, call.item)
        output: Hashable = None
        outcome: Outcome = FAILED
        if found is Verdict.OK and call.read is not None:
            try:
                output, outcome = call.read(answer), OK
            except (KeyError, IndexError, TypeError):
                outcome = UNKNOWN  # an answer we cannot read says nothing
        elif found is Verdict.UNSURE:
            outcome = UNKNOWN
        return self._operation(call, client, invoked, completed, outcome, output)

    def _write(self, call: Call, client: int, node_index: int, request_id: str) -> Operation:
        invoked = time.monotonic()
        deadline = invoked + self.give_up_s
        unsure = False  # an attempt may have applied it: it can no longer be `failed`
        for attempt in itertools.count(node_index):
            nodes = self.nodes()
            timeout = max(1.0, min(self.attempt_timeout_s, deadline - time.monotonic()))
            status, answer = self._send(
                nodes[attempt % len(nodes)], call.path, call.body, request_id, timeout
            )
            found = verdict(status, answer, call.item)
            if found is Verdict.OK:
                return self._operation(call, client, invoked, time.monotonic(), OK)
            unsure = unsure or found is Verdict.UNSURE
            if found is Verdict.REFUSED or time.monotonic() + 0.2 >= deadline:
                outcome: Outcome = UNKNOWN if unsure else FAILED
                return self._operation(call, client, invoked, time.monotonic(), outcome)
            time.sleep(0.2 if status in (429, 503, 504) else 0.5)
        raise AssertionError("unreachable")

    def _operation(
        self,
        call: Call,
        client: int,
        invoked: float,
        completed: float,
        outcome: Outcome,
        output: Hashable = None,
    ) -> Operation:
        return Operation(
            client=str(client),
            key=call.key,
            kind=call.kind,
            input=call.input,
            output=output,
            invoked=invoked,
            completed=completed,
            outcome=outcome,
        )

    def _send(
        self,
        node: Http,
        path: str,
        body: dict[str, Any],
        request_id: str | None,
        timeout: float | None = None,
    ) -> tuple[int, Any]:
        """One attempt: (HTTP status, answer), or (0, None) when there was no answer."""
        headers = {} if request_id is None else {"X-Request-ID": request_id}
        try:
            status, answer = node.post(
                path,
                body,
                self.token,
                headers=headers,
                timeout=timeout or self.attempt_timeout_s,
            )
        except (OSError, ValueError, http.client.HTTPException) as error:
            self._count(f"connection: {type(error).__name__}")
            return 0, None
        self._count(str(status))
        return status, answer

    def _count(self, what: str) -> None:
        with self._lock:
            self.statuses[what] += 1

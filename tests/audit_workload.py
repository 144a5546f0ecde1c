"""A day in a cluster's life, made through the real controller (the API, the Envelope, the
brokers' internal API and the controller's own timer): what the export and the Spark reports
are tested on (issue 10).

Two phases with a recorded moment between them: what describe-configs, describe-acls and
describe-client-quotas answered at that moment is kept, so `state-at` can be checked against
it later.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from typing import Any

from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent
from controlplane.runtime.lease import now_ms
from controlplane.runtime.sessions import session_store
from replicas.services import replica_state_apply_pending
from tests.api.test_replication_api import Kafka, log_end
from tests.conftest import with_token_secret_key

# The node's delegation-token key while the workload runs (a setting, never a record): never
# exported, never in a report.
SECRET_KEY_VALUE = "audit-secret-key-value-7f3a"
CANARY_BROKERS = (5, 6)
LOG_DIR = "a6e3c8f0-53a4-4c1f-9f0e-2b6f7f0d4c11"


def with_node_token_key(phase: Callable[..., None]) -> Callable[..., None]:
    """The phase runs with the node's token key set (read when it runs, over whatever static
    configs the test set)."""

    @functools.wraps(phase)
    def run(*args: Any, **kwargs: Any) -> None:
        from django.conf import settings
        from django.test import override_settings

        static = with_token_secret_key(settings.CP_STATIC_BROKER_CONFIGS, SECRET_KEY_VALUE)
        with override_settings(CP_STATIC_BROKER_CONFIGS=static):
            phase(*args, **kwargs)

    return run


def acl(
    resource: str, principal: str, operation: str, permission: str = "ALLOW", **kw: Any
) -> dict[str, Any]:
    return {
        "resource_type": kw.get("resource_type", "TOPIC"),
        "resource_name": resource,
        "pattern_type": kw.get("pattern_type", "LITERAL"),
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission_type": permission,
    }


def config_set(resource_type: str, name: str, **values: str | None) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [
                    {
                        "name": key.replace("_", "."),
                        "config_operation": "DELETE" if value is None else "SET",
                        "value": value,
                    }
                    for key, value in values.items()
                ],
            }
        ]
    }


def quota(entity: dict[str, str | None], **ops: float | None) -> dict[str, Any]:
    return {
        "entries": [
            {
                "entity": [
                    {"entity_type": k.replace("_", "-"), "entity_name": v}
                    for k, v in entity.items()
                ],
                "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops.items()],
            }
        ]
    }


@dataclasses.dataclass
class Moment:
    """What the describe RPCs answered at `at_ms`."""

    at_ms: int
    configs: dict[tuple[str, str], dict[str, str | None]]
    acls: set[tuple[str, ...]]
    quotas: dict[str, dict[str, float]]


class Workload:
    def __init__(self, api: Any, tokens: dict[str, str], register: Any) -> None:
        self.api = api
        self.tokens = tokens
        self.kafka = Kafka(api, tokens, register)
        self.config_resources: set[tuple[str, str]] = {("BROKER", "")}

    def ok(
        self, path: str, body: dict[str, Any], token: str = "admin", **kw: Any
    ) -> dict[str, Any]:
        status, answer = self.api.post(path, body, token=self.tokens[token], **kw)
        assert status == 200, answer
        return dict(answer)

    # --- the two phases -------------------------------------------------------------------
    @with_node_token_key
    def phase_one(self) -> None:
        kafka = self.kafka
        kafka.register(1, 2, 3, 4)
        kafka.register(*CANARY_BROKERS, pod="canary-broker")
        kafka.create_topic("orders", [[1, 2, 3], [2, 3, 4], [5, 6, 1], [3, 4, 1]])
        kafka.create_topic("payments", [[4, 1, 2], [6, 5, 2]], configs={"retention.ms": "86400000"})
        kafka.create_topic("scratch", [[1, 2]])
        self.configs("TOPIC", "orders", cleanup_policy="compact", retention_ms="3600000")
        self.configs("BROKER", "", log_retention_ms="7200000")
        self.configs("BROKER", "1", log_segment_bytes="536870912")
        self.config_resources.add(("TOPIC", "payments"))
        self.ok(
            "/api/v1/create-acls",
            {
                "creations": [
                    acl("orders", "User:alice", "READ"),
                    acl("orders", "User:alice", "WRITE"),
                    acl("pay", "User:bob", "ALL", pattern_type="PREFIXED"),
                    acl("orders", "User:mallory", "READ", "DENY"),
                ]
            },
        )
        self.ok(
            "/api/v1/alter-client-quotas", quota({"user": "alice"}, producer_byte_rate=1048576.0)
        )
        self.ok(
            "/api/v1/alter-client-quotas", quota({"client_id": None}, consumer_byte_rate=2097152.0)
        )
        self.ok(
            "/api/v1/alter-client-quotas",
            quota({"user": "bob", "client_id": "app"}, request_percentage=50.0),
        )
        created = self.ok("/api/v1/create-delegation-token", {}, token="alice")
        assert created["error_code"] == 0 and created["hmac"], created
        self.token_hmac = created["hmac"]
        self.denied()
        self.forwarded(broker_id=2, value="1800000")

    @with_node_token_key
    def phase_two(self) -> None:
        kafka = self.kafka
        self.configs("TOPIC", "orders", cleanup_policy=None, retention_ms="600000")
        self.configs("BROKER", "", log_retention_ms=None)
        self.ok(
            "/api/v1/delete-acls",
            {
                "filters": [
                    {
                        "resource_type_filter": "TOPIC",
                        "resource_name_filter": "orders",
                        "pattern_type_filter": "LITERAL",
                        "principal_filter": "User:alice",
                        "host_filter": "*",
                        "operation": "WRITE",
                        "permission_type": "ALLOW",
                    }
                ]
            },
        )
        self.ok("/api/v1/create-acls", {"creations": [acl("payments", "User:carol", "DESCRIBE")]})
        self.ok("/api/v1/alter-client-quotas", quota({"user": "alice"}, producer_byte_rate=None))
        self.ok("/api/v1/alter-client-quotas", quota({"user": "carol"}, consumer_byte_rate=10.0))
        self.ok(
            "/api/v1/renew-delegation-token",
            {"hmac": self.token_hmac, "renew_period_ms": 3_600_000},
            token="alice",
        )
        self.ok("/api/v1/delete-topics", {"topic_names": ["scratch"]})
        self.denied()
        self.forwarded(broker_id=3, value="900000")
        self.forwarded(broker_id=2, value="450000")
        self.replicas_offline(broker_id=2, topics={"orders": [0, 1], "payments": [0, 1]})
        self.replicas_offline(broker_id=5, topics={"orders": [2]})
        kafka.fence(4)  # the broker asks to be fenced
        self.session_expires(6)
        kafka.heartbeat(3, want_shut_down=True)  # controlled shutdown
        self.ok("/api/v1/elect-leaders", {"election_type": "PREFERRED", "topic_partitions": None})

    # --- pieces -------------------------------------------------------------------------
    def configs(self, resource_type: str, name: str, **values: str | None) -> None:
        answer = self.ok(
            "/api/v1/incremental-alter-configs", config_set(resource_type, name, **values)
        )
        assert answer["responses"][0]["error_code"] == 0, answer
        self.config_resources.add((resource_type, name))

    def denied(self) -> None:
        """Requests refused for authorization: whole (403) and per item."""
        status, _ = self.api.post(
            "/api/v1/create-acls",
            {"creations": [acl("x", "User:eve", "READ")]},
            token=self.tokens["alice"],
        )
        assert status == 403
        answer = self.ok(
            "/api/v1/create-topics",
            {"topics": [{"name": "not-hers", "num_partitions": 1, "replication_factor": 1}]},
            token="alice",
        )
        assert answer["topics"][0]["error_code"] == 29
        answer = self.ok(
            "/api/v1/incremental-alter-configs",
            config_set("TOPIC", "orders", retention_ms="1"),
            token="alice",
        )
        assert answer["responses"][0]["error_code"] == 29

    def forwarded(self, *, broker_id: int, value: str) -> None:
        envelope = {
            "request_header": {
                "request_api_key": 44,
                "request_api_version": 1,
                "client_id": "legacy-admin",
                "correlation_id": 1,
            },
            "request_data": config_set("TOPIC", "payments", retention_ms=value),
            "request_principal": {"type": "User", "name": "admin"},
            "client_host_address": "10.1.2.3",
            "forwarding_broker_id": broker_id,
        }
        answer = self.ok("/internal/v1/envelope", envelope, token="broker")
        assert answer["response_data"]["responses"][0]["error_code"] == 0, answer

    def replicas_offline(self, *, broker_id: int, topics: dict[str, list[int]]) -> None:
        answer = self.ok(
            "/internal/v1/alter-replica-state",
            {
                "broker_id": broker_id,
                "broker_epoch": self.kafka.epochs[broker_id],
                "new_state": 1,
                "reason": f"log dir {LOG_DIR} failed",
                "log_dir": LOG_DIR,
                "topics": [{"name": n, "partitions": p} for n, p in topics.items()],
            },
            token="broker",
        )
        assert answer["error_code"] == 0, answer
        replica_state_apply_pending()

    def session_expires(self, broker_id: int) -> None:
        session_store().touch(broker_id, now_ms=now_ms() - 60_000, metadata_offset=log_end())
        fenced = (
            get_runtime().handle(ControllerEvent("FenceStaleBrokers")).response["fenced_brokers"]
        )
        assert broker_id in fenced

    # --- what the describe RPCs answer now ----------------------------------------------------
    def moment(self) -> Moment:
        time.sleep(0.01)  # the moment lies strictly between two commits' timestamps
        at = now_ms()
        time.sleep(0.01)
        return Moment(at, self.described_configs(), self.described_acls(), self.described_quotas())

    def described_configs(self) -> dict[tuple[str, str], dict[str, str | None]]:
        resources = [
            {"resource_type": t, "resource_name": n, "configuration_keys": None}
            for t, n in sorted(self.config_resources)
        ]
        answer = self.ok("/api/v1/describe-configs", {"resources": resources})
        found: dict[tuple[str, str], dict[str, str | None]] = {}
        for result in answer["results"]:
            if result["error_code"]:
                continue  # a deleted topic
            dynamic = {
                c["name"]: ("(redacted)" if c["is_sensitive"] else c["value"])
                for c in result["configs"]
                if c["config_source"].startswith("DYNAMIC_")
            }
            if dynamic:
                found[(result["resource_type"], result["resource_name"])] = dynamic
        return found

    def described_acls(self) -> set[tuple[str, ...]]:
        answer = self.ok(
            "/api/v1/describe-acls",
            {
                "resource_type": "ANY",
                "resource_name": None,
                "pattern_type": "ANY",
                "principal": None,
                "host": None,
                "operation": "ANY",
                "permission_type": "ANY",
            },
        )
        return {
            (
                r["resource_type"],
                r["resource_name"],
                r["pattern_type"],
                a["principal"],
                a["host"],
                a["operation"],
                a["permission_type"],
            )
            for r in answer["resources"]
            for a in r["acls"]
        }

    def described_quotas(self) -> dict[str, dict[str, float]]:
        answer = self.ok("/api/v1/describe-client-quotas", {"components": [], "strict": False})
        return {
            ",".join(
                f"{e['entity_type']}={_entity_name(e)}"
                for e in sorted(entry["entity"], key=lambda e: e["entity_type"])
            ): {v["key"]: v["value"] for v in entry["values"]}
            for entry in answer["entries"]
        }


def _entity_name(entity: dict[str, Any]) -> str:
    return "<default>" if entity["entity_name"] is None else str(entity["entity_name"])

"""Stock Apache Kafka brokers under a control plane in this test process: the pieces every
real-broker module shares.

A module gets one control plane (the database opened for the module, not per test; the
controller's timer running as in a deployment: it fences a broker whose session lapses, runs the
jobs) and one set of brokers, all flushed when the module ends. Every wait is bounded, and a
failure prints the brokers' last lines."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from stock_kafka.broker import KafkaBroker
from tests.conftest import (
    TOKEN_SECRET_KEY,
    controller_state_reset,
    listener_client_class,
    with_token_secret_key,
)
from tests.wire.conftest import RunningListener, start_listener

# What a broker logs of its talks with the controller (the Raft client and the lifecycle at
# INFO; the network client's disconnects and unsupported versions).
LOG_LEVELS = {
    "org.apache.kafka.raft": "INFO",
    "kafka.server.BrokerLifecycleManager": "INFO",
    "org.apache.kafka.clients.NetworkClient": "INFO",
}


def token_key_settings(key: str = TOKEN_SECRET_KEY) -> dict[str, Any]:
    """Settings for `module_database`: the node's delegation-token key (never a record), the
    one the control plane in this process signs and checks tokens with. Kafka wants the same
    key on every broker: give theirs `broker_token_key(key)`."""
    from django.conf import settings

    # Django settings by name (not environment variables).
    return dict(
        CP_DELEGATION_TOKEN_SECRET_KEY=key,
        CP_STATIC_BROKER_CONFIGS=with_token_secret_key(settings.CP_STATIC_BROKER_CONFIGS, key),
    )


def broker_token_key(key: str = TOKEN_SECRET_KEY) -> dict[str, str]:
    """A stock broker's own static `delegation.token.secret.key` (its server.properties)."""
    return {"delegation.token.secret.key": key}


@dataclasses.dataclass
class ControlPlane:
    listener: RunningListener
    tokens: dict[str, str]
    cluster_id: str

    @property
    def controller(self) -> str:
        return f"{self.listener.host}:{self.listener.controller_port}"


@contextlib.contextmanager
def module_database(django_db_blocker: Any, **settings_overrides: Any) -> Iterator[None]:
    """The database for a whole module, committed as it goes (the listener's threads and the
    brokers' requests see every row), with these settings; flushed at the end, so no other test
    sees a row."""
    from django.conf import settings
    from django.core.management import call_command

    saved = {name: getattr(settings, name) for name in settings_overrides}
    for name, value in settings_overrides.items():
        setattr(settings, name, value)
    with django_db_blocker.unblock():
        controller_state_reset()
        try:
            yield
        finally:
            controller_state_reset()
            for name, value in saved.items():
                setattr(settings, name, value)
            call_command("flush", verbosity=0, interactive=False)


@contextlib.contextmanager
def control_plane(broker_principals: Sequence[str]) -> Iterator[ControlPlane]:
    """An admin, a broker principal each, the controller's timer and a wire listener (client
    and controller listeners) in this process."""
    from controlplane.principals import principal_create
    from controlplane.runtime.controller import get_runtime
    from controlplane.runtime.lease import cluster_get_or_create

    tokens = {"admin": principal_create(name="admin", super_user=True)}
    for principal in broker_principals:
        tokens[principal] = principal_create(name=principal, broker=True)
    cluster_id = cluster_get_or_create().cluster_id
    stop = threading.Event()
    timer = threading.Thread(target=controller_timer, args=(get_runtime(), stop), daemon=True)
    timer.start()
    runner, listener = start_listener()
    try:
        yield ControlPlane(listener, tokens, cluster_id)
    finally:
        runner.stop()
        stop.set()
        timer.join(timeout=30)


def broker_under(
    plane: ControlPlane,
    node_id: int,
    principal: str,
    work_dir: Path,
    overrides: Mapping[str, str],
    **options: Any,
) -> KafkaBroker:
    return KafkaBroker(
        node_id=node_id,
        cluster_id=plane.cluster_id,
        controller=plane.controller,
        principal=principal,
        token=plane.tokens[principal],
        work_dir=work_dir,
        overrides=overrides,
        log_levels=LOG_LEVELS,
        **options,
    )


def controller_timer(runtime: Any, stop: threading.Event) -> None:
    """The controller's timer as `run_controller` runs it (the lease, fencing the brokers whose
    session lapsed, the jobs), its database connection closed when it stops."""
    from django.db import close_old_connections, connections

    try:
        while not stop.wait(0.5):
            close_old_connections()
            runtime.tick()
    finally:
        connections.close_all()


def with_log(brokers: Sequence[KafkaBroker], message: str) -> str:
    tails = "".join(f"\n--- broker {b.node_id}'s last lines ---\n{b.log_tail(60)}" for b in brokers)
    return message + tails


def wait(
    brokers: Sequence[KafkaBroker],
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    *,
    running: Sequence[KafkaBroker] | None = None,
) -> Any:
    """`predicate()` until truthy, the `running` brokers (default: all) staying up; else
    AssertionError with their logs."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except Exception as error:  # what we wait for may not be there yet
            last = error
        else:
            if last:
                return last
        for broker in brokers if running is None else running:
            assert broker.running, with_log(brokers, f"broker {broker.node_id} exited: {what}")
        time.sleep(0.25)
    raise AssertionError(with_log(brokers, f"{what}: not within {timeout}s (last: {last!r})"))


def metric(name: str) -> float:
    """One unlabeled gauge from /metrics (no login: Prometheus scrapes it so)."""
    text = listener_client_class()().get("/metrics").content.decode()
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics")


def registrations(node_id: int) -> list[Any]:
    from controlplane.models import MetadataRecord

    return list(
        MetadataRecord.objects.filter(record_type="RegisterBrokerRecord", broker_id=node_id)
        .order_by("offset")
        .values("offset", "principal", "data")
    )


def tables_follow_log(timeout: float = 30) -> None:
    """Wait until the state tables stand where the log ended when called: a commit is the
    log's transaction, the brokers woken, then the tables', so what a broker (or a test reading
    the log) already sees, the tables show a moment later."""
    from controlplane.models import Cluster

    offsets = Cluster.objects.filter(id=1).values_list("last_offset", "projected_offset")
    row = offsets.first()
    end = row[0] if row else -1
    deadline = time.monotonic() + timeout
    while row is not None and row[1] < end:
        if time.monotonic() > deadline:
            raise AssertionError(f"the state tables never reached the log's offset {end}")
        time.sleep(0.05)
        row = offsets.first()


def broker_row(node_id: int) -> Any:
    from brokers.models import Broker

    tables_follow_log()
    return Broker.objects.filter(broker_id=node_id).first()


def audited_apis(principal: str) -> set[str]:
    from audit.models import AuditEvent

    return set(AuditEvent.objects.filter(principal=principal).values_list("api", flat=True))

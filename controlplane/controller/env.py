"""What a controller handler runs with besides metadata, and the shape of a handler.

`ControllerEnv` carries the clock, the heartbeat tracker's sessions, the static broker configs and
the source of randomness for new ids. Everything random the core makes (topic, ACL and
delegation token ids) comes from `ControllerEnv.random_bytes`, so a test that passes a seeded
source replays the same events into the same records.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from controlplane.controller.config_schema import ConfigView
from controlplane.controller.image import MetadataDelta
from controlplane.controller.result import ControllerResult

DEFAULT_SESSION_TIMEOUT_MS = 9000  # Kafka's broker.session.timeout.ms
DEFAULT_FENCING_HOLD_OFF_MIN_BROKERS = 3
DEFAULT_FENCING_HOLD_OFF_MAX_MS = 30_000


# What one commit changes of partitions at most when brokers leave (fencing, and what a
# controlled shutdown leaves beyond its own commit) or a report names many (AlterReplicaState):
# Kafka bounds one operation's records the same way (max.records.per.user.op). The runtime passes
# CP_MAX_PARTITION_CHANGES_PER_COMMIT.
MAX_PARTITION_CHANGES_PER_COMMIT = 5_000
# What the heartbeat that begins a controlled shutdown (or asks to be fenced) changes at most in
# its own commit: Kafka's cap on one operation (max.records.per.user.op), so that a broker
# leading up to that many hands every leadership over in one change, as under Kafka's
# controller. A Kafka broker applies the next metadata change only once it has made the last
# one's leaders: in two changes, the second half waits for the first half's work. Beyond it, the
# fencing rounds go on in commits of `max_partition_changes`. The runtime passes
# CP_MAX_SHUTDOWN_CHANGES_PER_COMMIT.
MAX_SHUTDOWN_CHANGES_PER_COMMIT = 10_000


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerSession:
    """What the heartbeat tracker knows of a broker: not metadata, never in the log."""

    last_contact_ms: int
    metadata_offset: int


@dataclasses.dataclass(frozen=True, slots=True)
class ControllerEnv:
    """What a handler may know besides metadata: the clock and the heartbeat tracker."""

    now_ms: int
    activated_ms: int
    sessions: Mapping[int, BrokerSession]
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    # The fencing hold-off (fencing.fence_stale_brokers): what the runtime measured of its own
    # ingress (a sentence naming the overload, None when it keeps up), when the current hold-off
    # began (0: none), how long one may last, and the smallest cluster in which nobody heard
    # means the controller is deaf rather than every broker dead.
    ingress_overload: str | None = None
    fencing_hold_off_since_ms: int = 0
    fencing_hold_off_max_ms: int = DEFAULT_FENCING_HOLD_OFF_MAX_MS
    fencing_hold_off_min_brokers: int = DEFAULT_FENCING_HOLD_OFF_MIN_BROKERS
    # How many partitions one commit changes at most when brokers leave (fencing, controlled
    # shutdown); the rest follow in the next commits (`moves_pending`).
    max_partition_changes: int = MAX_PARTITION_CHANGES_PER_COMMIT
    # How many the heartbeat that begins a controlled shutdown changes at most in its commit.
    max_shutdown_changes: int = MAX_SHUTDOWN_CHANGES_PER_COMMIT
    # Static broker configs (num.partitions, default.replication.factor, ...) from settings.
    static_configs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # n random bytes; the operating system's by default, a seeded generator's in tests.
    random_bytes: Callable[[int], bytes] = os.urandom

    def configs(self, view: MetadataDelta) -> ConfigView:
        return ConfigView(view.config, self.static_configs)

    def new_uuid(self) -> str:
        """A random (version 4) UUID, as uuid.uuid4 makes one, from `random_bytes`."""
        return str(uuid.UUID(bytes=self.random_bytes(16), version=4))


# A controller handler: the metadata view, the request's payload and the environment in; the
# records to commit and the response out.
Handler = Callable[[MetadataDelta, Mapping[str, Any], ControllerEnv], ControllerResult]

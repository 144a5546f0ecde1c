"""Simulated brokers: many KRaft-style broker lifecycles in one asyncio process, over HTTP.

A `BrokerSimulator` (fleet.py) runs regular and canary brokers against the control plane's
internal API, as Kafka brokers run against a KRaft controller: they register, heartbeat, follow
the metadata log, get unfenced, shut down in a controlled way (lifecycle.py); their log
directories fail and are repaired (KIP-589, logdirs.py; its requests and answers in
logdir_requests.py); each partition's leader takes caught-up followers back into the ISR with
AlterPartition after any (re)registration, a pause or a restart (isr.py); they forward old
clients' admin requests to the controller in Envelopes (KIP-590, forwarding.py); and they can
send heartbeat load for the benchmarks (load.py). One
metadata follower per process (follower.py) reads the log for all of them into a `MetadataView`
(metadata.py): the controller's own `MetadataImage`, fed through the core's record decoding and
`MetadataDelta` replay, so the brokers' view of topics, partitions, ISRs and epochs follows the
controller's rules exactly.

This package imports no Django (an import-linter contract says so): only the pure controller
core (`controlplane.controller`), httpx and the standard library. The `simulate_brokers`
management command is its Django-side entry point.
"""

from simulator.client import (
    ALTER_PARTITION_PATH,
    ALTER_REPLICA_STATE_PATH,
    AUTH_STATUSES,
    CLIENT_ID_PATTERN,
    CREATE_TOPICS_PATH,
    ENVELOPE_PATH,
    HEARTBEAT_PATH,
    KEEPALIVE_EXPIRY_S,
    METADATA_PATH,
    REGISTRATION_PATH,
    RETRIABLE_STATUSES,
    Backoff,
)
from simulator.fleet import BrokerSimulator
from simulator.follower import (
    CATCH_UP_MAX_RECORDS,
    HEAD_ONLY_OFFSET,
    MIN_EMPTY_FETCH_INTERVAL_S,
)
from simulator.forwarding import (
    DEFAULT_ADMIN_CLIENT_ID,
    DEFAULT_FORWARD_TIMEOUT_S,
    ForwardResult,
    admin_api,
    answer_summary,
    envelope_request,
    forwardable_apis,
    principal_fields,
)
from simulator.isr import IsrExpander
from simulator.load import LoadResult
from simulator.logdir_requests import OFFLINE_REPLICA_EVENT, LogDirResult
from simulator.logdirs import STALE_METADATA_ERRORS
from simulator.metadata import BrokerView, MetadataView, PartitionView
from simulator.state import (
    BrokerPhase,
    BrokerState,
    SimulatorCounters,
    SimulatorError,
    SimulatorStatus,
)

__all__ = [
    "ALTER_PARTITION_PATH",
    "ALTER_REPLICA_STATE_PATH",
    "AUTH_STATUSES",
    "CATCH_UP_MAX_RECORDS",
    "CLIENT_ID_PATTERN",
    "CREATE_TOPICS_PATH",
    "DEFAULT_ADMIN_CLIENT_ID",
    "DEFAULT_FORWARD_TIMEOUT_S",
    "ENVELOPE_PATH",
    "HEAD_ONLY_OFFSET",
    "HEARTBEAT_PATH",
    "KEEPALIVE_EXPIRY_S",
    "METADATA_PATH",
    "MIN_EMPTY_FETCH_INTERVAL_S",
    "OFFLINE_REPLICA_EVENT",
    "REGISTRATION_PATH",
    "RETRIABLE_STATUSES",
    "STALE_METADATA_ERRORS",
    "Backoff",
    "BrokerPhase",
    "BrokerSimulator",
    "BrokerState",
    "BrokerView",
    "ForwardResult",
    "IsrExpander",
    "LoadResult",
    "LogDirResult",
    "MetadataView",
    "PartitionView",
    "SimulatorCounters",
    "SimulatorError",
    "SimulatorStatus",
    "admin_api",
    "answer_summary",
    "envelope_request",
    "forwardable_apis",
    "principal_fields",
]

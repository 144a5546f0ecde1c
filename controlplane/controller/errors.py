"""Kafka's error codes, and the exception that carries one.

Every error the control plane answers carries Kafka's number and name, so an operator who knows
Kafka recognises it. Codes Kafka never numbered (KIP-589's UNKNOWN_EVENT_TYPE) start at 10000.
"""

from __future__ import annotations

import enum


class Errors(enum.IntEnum):
    NONE = 0
    UNKNOWN_SERVER_ERROR = -1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    INVALID_TOPIC_EXCEPTION = 17
    ILLEGAL_GENERATION = 22
    UNKNOWN_MEMBER_ID = 25
    REBALANCE_IN_PROGRESS = 27
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    SECURITY_DISABLED = 54
    SASL_AUTHENTICATION_FAILED = 58
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    THROTTLING_QUOTA_EXCEEDED = 89
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INVALID_UPDATE_VERSION = 95
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_CLUSTER_ID = 104
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    UNSUPPORTED_ENDPOINT_TYPE = 115
    INVALID_REGISTRATION = 119
    UNKNOWN_EVENT_TYPE = 10000


class ApiError(Exception):
    """A request (or one item of it) failed with a Kafka error code."""

    def __init__(self, error: Errors, message: str | None = None) -> None:
        super().__init__(message or error.name)
        self.error = error
        self.message = message

    def as_fields(self) -> dict[str, object]:
        return {
            "error_code": int(self.error),
            "error": self.error.name,
            "error_message": self.message,
        }


class InvalidStateTransition(ApiError):
    """A state machine was asked for a transition its table does not allow."""

    def __init__(self, machine: str, current: str, target: str) -> None:
        super().__init__(
            Errors.INVALID_REQUEST,
            f"Invalid {machine} state transition from {current} to {target}.",
        )
        self.machine = machine
        self.current = current
        self.target = target

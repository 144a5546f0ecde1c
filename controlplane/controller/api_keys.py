"""Kafka's admin RPCs by name and apiKey (as Kafka's `ApiKeys`): pure data, no Django.

The front doors (the REST API, a broker's Envelope, the UI) and the broker simulator all name
RPCs from this one table; `controlplane.rpc` binds each to its handler.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class ApiKey:
    name: str  # Kafka's RPC name
    api_key: int  # Kafka's apiKey
    path: str  # the public API's path under /api/v1/
    forwardable: bool  # may travel in an Envelope (the writes KIP-590 redirects)


ADMIN_APIS: dict[str, ApiKey] = {
    api.name: api
    for api in (
        ApiKey("CreateTopics", 19, "create-topics", True),
        ApiKey("DeleteTopics", 20, "delete-topics", True),
        ApiKey("DescribeAcls", 29, "describe-acls", False),
        ApiKey("CreateAcls", 30, "create-acls", True),
        ApiKey("DeleteAcls", 31, "delete-acls", True),
        ApiKey("DescribeConfigs", 32, "describe-configs", False),
        ApiKey("AlterConfigs", 33, "alter-configs", True),
        ApiKey("CreatePartitions", 37, "create-partitions", True),
        ApiKey("CreateDelegationToken", 38, "create-delegation-token", True),
        ApiKey("RenewDelegationToken", 39, "renew-delegation-token", True),
        ApiKey("ExpireDelegationToken", 40, "expire-delegation-token", True),
        ApiKey("DescribeDelegationToken", 41, "describe-delegation-token", False),
        ApiKey("ElectLeaders", 43, "elect-leaders", True),
        ApiKey("IncrementalAlterConfigs", 44, "incremental-alter-configs", True),
        ApiKey("AlterPartitionReassignments", 45, "alter-partition-reassignments", True),
        # A read Kafka forwards all the same: brokers send it to the controller (KIP-590).
        ApiKey("ListPartitionReassignments", 46, "list-partition-reassignments", True),
        ApiKey("DescribeClientQuotas", 48, "describe-client-quotas", False),
        ApiKey("AlterClientQuotas", 49, "alter-client-quotas", True),
        # SCRAM users (KIP-554): brokers forward the alteration; they answer the description
        # from their own image (the client door and REST answer it here too).
        ApiKey("DescribeUserScramCredentials", 50, "describe-user-scram-credentials", False),
        ApiKey("AlterUserScramCredentials", 51, "alter-user-scram-credentials", True),
        ApiKey("UpdateFeatures", 57, "update-features", True),
        ApiKey("DescribeCluster", 60, "describe-cluster", False),
        ApiKey("UnregisterBroker", 64, "unregister-broker", True),
    )
}
ADMIN_APIS_BY_KEY: dict[int, ApiKey] = {api.api_key: api for api in ADMIN_APIS.values()}
ENVELOPE_API_KEY = 58

# Every API a Kafka 4.x broker forwards to its controller (Kafka's ApiKeys.forwardable, 4.1 and
# 4.4), served here or not: an Envelope may carry only these (Kafka's EnvelopeUtils refuses any
# other with INVALID_REQUEST). tests/kafka/test_api_conformance.py reads them from the jars.
KAFKA_FORWARDABLE: dict[int, str] = {
    19: "CreateTopics",
    20: "DeleteTopics",
    30: "CreateAcls",
    31: "DeleteAcls",
    33: "AlterConfigs",
    37: "CreatePartitions",
    38: "CreateDelegationToken",
    39: "RenewDelegationToken",
    40: "ExpireDelegationToken",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    49: "AlterClientQuotas",
    51: "AlterUserScramCredentials",
    55: "DescribeQuorum",
    57: "UpdateFeatures",
    64: "UnregisterBroker",
    67: "AllocateProducerIds",
    80: "AddRaftVoter",
    81: "RemoveRaftVoter",
    94: "UnregisterController",
}

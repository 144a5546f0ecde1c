"""Kafka's admin RPCs as this control plane serves them: name, apiKey, API path, forwardable.

Plain data, so both sides read the same table: the server (`controlplane.forwarding` runs an
Envelope's inner request through the RPC's API view) and a broker that redirects a client's
request (the broker simulator builds its Envelopes from it, with no Django loaded).
"""

from __future__ import annotations

import dataclasses

API_PREFIX = "/api/v1/"


@dataclasses.dataclass(frozen=True, slots=True)
class AdminApi:
    name: str  # Kafka's RPC name
    api_key: int  # Kafka's apiKey
    path: str  # under /api/v1/
    forwardable: bool  # may travel in an Envelope (the writes KIP-590 redirects)


ADMIN_APIS: dict[str, AdminApi] = {
    api.name: api
    for api in (
        AdminApi("CreateTopics", 19, "create-topics", True),
        AdminApi("DeleteTopics", 20, "delete-topics", True),
        AdminApi("DescribeAcls", 29, "describe-acls", False),
        AdminApi("CreateAcls", 30, "create-acls", True),
        AdminApi("DeleteAcls", 31, "delete-acls", True),
        AdminApi("DescribeConfigs", 32, "describe-configs", False),
        AdminApi("AlterConfigs", 33, "alter-configs", True),
        AdminApi("CreatePartitions", 37, "create-partitions", True),
        AdminApi("CreateDelegationToken", 38, "create-delegation-token", True),
        AdminApi("RenewDelegationToken", 39, "renew-delegation-token", True),
        AdminApi("ExpireDelegationToken", 40, "expire-delegation-token", True),
        AdminApi("DescribeDelegationToken", 41, "describe-delegation-token", False),
        AdminApi("ElectLeaders", 43, "elect-leaders", True),
        AdminApi("IncrementalAlterConfigs", 44, "incremental-alter-configs", True),
        AdminApi("DescribeClientQuotas", 48, "describe-client-quotas", False),
        AdminApi("AlterClientQuotas", 49, "alter-client-quotas", True),
        AdminApi("UnregisterBroker", 64, "unregister-broker", True),
    )
}
ADMIN_APIS_BY_KEY = {api.api_key: api for api in ADMIN_APIS.values()}
ADMIN_APIS_BY_PATH = {API_PREFIX + api.path: api for api in ADMIN_APIS.values()}
ENVELOPE_API_KEY = 58

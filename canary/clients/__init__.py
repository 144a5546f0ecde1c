"""Canary-aware Kafka clients (KIP-1095) for kafka-python: a pure-Python package that imports
nothing of the control plane's server side and needs only kafka-python, kio and the standard
library, so it can be vendored into a producer or consumer service on its own.

* `CanaryDirectory` learns each topic's canary partitions from the control plane's REST API
  (`GET /api/v1/canary?topic=`), cached and refreshed; `WireCanaryDirectory` learns them from
  Kafka's Metadata (v12) over the control plane's Kafka protocol listener, where each broker
  carries KIP-1095's `Pod` as a tagged field (kio: Kafka's message types).
* `CanaryPartitioner` (a `kafka.partitioner.Partitioner`): a canary producer's records go to
  canary partitions only, a regular producer's to the others.
* `CanaryAssignor` (a kafka-python partition assignor): canary partitions go to canary group
  members, the others to regular members.

    directory = CanaryDirectory("https://controlplane:8000", token)
    producer = KafkaProducer(partitioner=CanaryPartitioner(directory, canary=True), ...)
    consumer = KafkaConsumer(
        "orders", group_id="billing", client_id="billing-canary-1",
        partition_assignment_strategy=[CanaryAssignor(directory)], ...)
"""

from canary.clients.assignor import CanaryAssignor
from canary.clients.directory import CanaryDirectory
from canary.clients.partitioner import CanaryPartitioner
from canary.clients.wire import WireCanaryDirectory

__all__ = ["CanaryAssignor", "CanaryDirectory", "CanaryPartitioner", "WireCanaryDirectory"]

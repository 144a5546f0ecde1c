"""The Kafka protocol's two doors, one module per API family, each registering its handlers
with `@wire_api` (`base`):

- `clients`: the client door, what admin clients (kafka-python, confluent-kafka, Kafka's own
  tools, kcat, KafkaJS) speak on client listeners: Metadata, DescribeCluster, topics, configs,
  ACLs, quotas, delegation tokens. CreateTopics, DescribeCluster and DescribeQuorum are served
  on controller listeners too (brokers create their internal topics; `kafka-metadata-quorum`).
- `controller`: the controller door, what stock Kafka brokers speak on controller listeners
  (`controller.listener.names`): the Raft Fetch and FetchSnapshot of `__cluster_metadata`, the
  broker lifecycle, DescribeQuorum, and the Envelope of the requests brokers forward (KIP-590),
  behind the gate that admits broker principals only.

Both doors run the same RPC registry, authorizer and controller as the REST API.
"""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    """Import every handler module of both doors (idempotent): WIRE_APIS is then complete."""
    for door in ("clients", "controller"):
        package = importlib.import_module(f"{__name__}.{door}")
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")

"""The controller's view of cluster metadata, and the one place records are applied.

`MetadataImage` is the state after some offset of the log; `MetadataDelta` layers changes over
an image. Each domain owns its part and the replay of its record types, as in Kafka's
org.apache.kafka.image: `cluster` (brokers), `topics` (topics and partitions), `configs`,
`client_quotas`, `acls`, `delegation_tokens` and `mirror` (MirrorMaker 2's configuration and flow
groups); `metadata` joins them. The image sits below
every domain's rules (which all read it), so it imports none of them.

Import these names from here, the image's one public place.
"""

from controlplane.controller.image.cluster import (
    BrokerControlState,
    BrokerRegistration,
    BrokerStatus,
)
from controlplane.controller.image.metadata import (
    MetadataDelta,
    MetadataImage,
    image_from_records,
    replay_log,
)
from controlplane.controller.image.topics import PartitionRegistration, TopicInfo, TopicPartition

__all__ = [
    "BrokerControlState",
    "BrokerRegistration",
    "BrokerStatus",
    "MetadataDelta",
    "MetadataImage",
    "PartitionRegistration",
    "TopicInfo",
    "TopicPartition",
    "image_from_records",
    "replay_log",
]

"""Kafka's metadata.version levels, as the Kafka-format log reads them: the table itself is the
core's (`controlplane.controller.metadata_versions`), which the feature rules read too."""

from controlplane.controller.metadata_versions import (
    DEFAULT_METADATA_VERSION,
    LATEST_METADATA_VERSION,
    METADATA_VERSION_FEATURE,
    METADATA_VERSIONS,
    MINIMUM_METADATA_VERSION,
    MetadataVersion,
    UnsupportedMetadataVersion,
    metadata_version,
)

__all__ = [
    "DEFAULT_METADATA_VERSION",
    "LATEST_METADATA_VERSION",
    "METADATA_VERSIONS",
    "METADATA_VERSION_FEATURE",
    "MINIMUM_METADATA_VERSION",
    "MetadataVersion",
    "UnsupportedMetadataVersion",
    "metadata_version",
]

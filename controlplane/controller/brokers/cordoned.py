"""KIP-1066's cordoned log dirs, as Kafka's controller keeps them from metadata.version
4.3-IV0 (30): a broker's heartbeats (BrokerHeartbeat v2) name the log dirs its operator cordoned
(`cordoned.log.dirs`), where it takes no new replica; the controller records them when they
change (BrokerRegistrationChangeRecord v3) and places no new replica on a broker whose every
dir is cordoned. Below 4.3-IV0 brokers send none and nothing is recorded."""

from __future__ import annotations

from controlplane.controller.image import BrokerRegistration, BrokerStatus
from controlplane.controller.metadata_versions import CORDONED_LOG_DIRS_METADATA_VERSION


def cordoned_log_dirs_change(
    broker: BrokerStatus | BrokerRegistration,
    reported: tuple[str, ...] | None,
    metadata_version: int | None = None,
) -> tuple[str, ...] | None:
    """The broker's cordoned dirs as a heartbeat reports them (sorted, once each), or None when
    it names none (null) or they are what the controller knows already. `metadata_version`
    None (a web node deciding without the log's level) answers as if it allowed them."""
    if reported is None:
        return None
    if metadata_version is not None and metadata_version < CORDONED_LOG_DIRS_METADATA_VERSION:
        return None
    dirs = tuple(sorted(set(reported)))
    return None if dirs == broker.cordoned_log_dirs else dirs

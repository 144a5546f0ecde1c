"""The features an ApiVersions answer carries (v3+, KIP-584): what this control plane supports
and the levels the cluster has finalized, with their epoch, as Kafka's brokers and controllers
answer them, so `kafka-features describe` (and any admin client's describeFeatures) reads them
from either door.

Read off the event loop (the listener asks on its pool) and kept until the log moves or a
second passes: ApiVersions opens every connection, and a few rows of features do not change
between commits."""

from __future__ import annotations

import logging
from typing import Any

from django.db import close_old_connections

from brokers.selectors import features_describe
from controlplane.runtime.notice_cache import NoticeCache
from controlplane.runtime.notifier import notifier

logger = logging.getLogger(__name__)
MAX_AGE_S = 1.0
# KIP-584 v3 answers list no supported feature whose minimum is 0 (KAFKA-17011, fixed by v4).
FIRST_VERSION_WITH_ZERO_MINIMUMS = 4


def _read_described() -> dict[str, Any]:
    close_old_connections()
    try:
        return features_describe()
    finally:
        close_old_connections()


_described = NoticeCache(
    _read_described, generation=lambda: notifier.tables_generation, max_age_s=MAX_AGE_S
)


def forget() -> None:
    _described.forget()


def api_versions_features(api_version: int) -> dict[str, Any]:
    """ApiVersions' SupportedFeatures, FinalizedFeaturesEpoch and FinalizedFeatures (tagged
    fields of v3+; nothing for older versions)."""
    if api_version < 3:
        return {}
    try:
        described = _described.get()
    except Exception:  # the store is down: the APIs are answered without the features
        logger.warning("could not read the finalized features for ApiVersions", exc_info=True)
        return {}
    supported = [
        {"name": name, "min_version": levels["min_version"], "max_version": levels["max_version"]}
        for name, levels in described["supported_features"].items()
        if api_version >= FIRST_VERSION_WITH_ZERO_MINIMUMS or levels["min_version"] > 0
    ]
    finalized = [
        {"name": name, "max_version_level": level, "min_version_level": level}
        for name, level in described["finalized_features"].items()
        if level > 0
    ]
    return {
        "supported_features": supported,
        "finalized_features_epoch": described["finalized_features_epoch"],
        "finalized_features": finalized,
    }

"""UpdateFeatures (KIP-584, KIP-778, KIP-1022) as Kafka's FeatureControlManager decides it.

Each update names a feature, the level to finalize and how (Kafka's FeatureUpdate.UpgradeType:
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE). In Kafka's order, for each feature:

- an unknown upgrade type, a level below 0: INVALID_UPDATE_VERSION;
- the level must be one this controller supports (`features.SUPPORTED_FEATURES`: a feature it
  does not know only at 0) and one every registered broker supports (the ranges its
  registration listed; a feature it did not list only at 0);
- a lower level than the current one needs a downgrade type, a higher one an upgrade;
- metadata.version: a level this controller writes records for; a downgrade is refused when a
  level between the two changed what the log holds (Kafka's didMetadataChange: it might lose
  metadata), whatever the type (Kafka 4.x does not perform unsafe downgrades);
- kraft.version: upgraded only (the quorum's voters written with it), never downgraded;
- another feature: its level's dependencies (eligible.leader.replicas.version 1 needs
  metadata.version 23) against the levels the request leaves.

One refusal refuses the whole request, and nothing is written (Kafka builds its records
atomically); `validate_only` checks everything and writes nothing. A level equal to the current
one writes nothing for that feature.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

from controlplane.controller.errors import ApiError, Errors
from controlplane.controller.features import (
    DEPENDENCIES,
    KRAFT_VERSION,
    NOT_WRITTEN_YET,
    SUPPORTED_FEATURES,
)
from controlplane.controller.image import MetadataDelta
from controlplane.controller.image.features import METADATA_VERSION
from controlplane.controller.metadata_versions import (
    LATEST_METADATA_VERSION,
    METADATA_VERSIONS,
    MINIMUM_METADATA_VERSION,
    metadata_changed_between,
)
from controlplane.controller.quorum_records import KRAFT_VERSION_1, KRaftVersionRecord, VotersRecord
from controlplane.controller.records import FeatureLevelRecord, Record
from controlplane.controller.result import ControllerResult

ALL_FAILED = "The update failed for all features since the following feature had an error: "


class UpgradeType(enum.IntEnum):
    """Kafka's FeatureUpdate.UpgradeType codes (UpdateFeaturesRequest v1+)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclasses.dataclass(frozen=True, slots=True)
class FeatureUpdate:
    feature: str
    max_version_level: int
    upgrade_type: int = UpgradeType.UPGRADE


def feature_updates(payload: Mapping[str, Any]) -> list[FeatureUpdate]:
    """The request's updates; INVALID_REQUEST for a feature named twice (Kafka keys them by
    name: one would silently win)."""
    updates = [
        FeatureUpdate(
            str(item["feature"]),
            int(item["max_version_level"]),
            int(item.get("upgrade_type", UpgradeType.UPGRADE)),
        )
        for item in payload.get("feature_updates", ())
    ]
    names = [update.feature for update in updates]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ApiError(Errors.INVALID_REQUEST, f"Feature {twice[0]} was named more than once.")
    return updates


def update_features(
    view: MetadataDelta,
    updates: Sequence[FeatureUpdate],
    *,
    validate_only: bool = False,
    controller_id: int = -1,
) -> ControllerResult:
    """The records that finalize `updates`, or none and the first refusal (for every
    feature: Kafka's answer names the whole request failed)."""
    current = view.finalized_features()
    proposed = {**current, **{u.feature: u.max_version_level for u in updates}}
    records: list[Record] = []
    try:
        for update in updates:
            records += _update_feature(view, update, proposed, controller_id)
    except ApiError as refused:
        message = ALL_FAILED + (refused.message or refused.error.name)
        return ControllerResult([], _answer(updates, refused.error, message))
    return ControllerResult([] if validate_only else records, _answer(updates, Errors.NONE, None))


def _answer(updates: Sequence[FeatureUpdate], error: Errors, message: str | None) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": message,
        "results": [
            {"feature": u.feature, "error_code": int(error), "error_message": message}
            for u in updates
        ],
    }


def _refused(update: FeatureUpdate, why: str) -> ApiError:
    return ApiError(
        Errors.INVALID_UPDATE_VERSION,
        f"Invalid update version {update.max_version_level} for feature {update.feature}. {why}",
    )


def _current_level(view: MetadataDelta, feature: str) -> int:
    if feature == KRAFT_VERSION:
        return view.kraft_version
    return view.feature_level(feature) or 0


def _update_feature(
    view: MetadataDelta, update: FeatureUpdate, proposed: Mapping[str, int], controller_id: int
) -> list[Record]:
    try:
        kind = UpgradeType(update.upgrade_type)
    except ValueError:
        kind = UpgradeType.UNKNOWN
    if kind is UpgradeType.UNKNOWN:
        raise _refused(update, "The controller does not support the given upgrade type.")
    level, current = update.max_version_level, _current_level(view, update.feature)
    if level < 0:
        raise _refused(update, "A feature version cannot be less than 0.")
    why_not = _not_supported(view, update.feature, level, controller_id)
    if why_not is not None:
        raise _refused(update, why_not)
    if level < current and kind is UpgradeType.UPGRADE:
        raise _refused(
            update,
            "Can't downgrade the version of this feature without setting the upgrade type to "
            "either safe or unsafe downgrade.",
        )
    if level > current and kind is not UpgradeType.UPGRADE:
        raise _refused(update, "Can't downgrade to a newer version.")
    if update.feature == METADATA_VERSION:
        return _metadata_version(view, update, kind)
    if update.feature == KRAFT_VERSION:
        return _kraft_version(view, update, kind)
    _check_dependencies(update, proposed)
    if level == current:
        return []
    return [FeatureLevelRecord(update.feature, level)]


def _not_supported(view: MetadataDelta, feature: str, level: int, controller_id: int) -> str | None:
    """Kafka's reasonNotSupported: this controller first, then every registered broker. A
    feature no Kafka release knows is refused at any level (Kafka's Feature.featureFromName)."""
    if feature not in SUPPORTED_FEATURES:
        return f"Local controller {controller_id} does not know the feature {feature}."
    low, high = SUPPORTED_FEATURES[feature]
    if not low <= level <= high:
        what = f"Local controller {controller_id}"
        reason = _range_reason(what, low, high)
        return f"{reason} {NOT_WRITTEN_YET[feature]}" if feature in NOT_WRITTEN_YET else reason
    for broker in sorted(view.all_brokers(), key=lambda b: b.broker_id):
        supported = broker.supported(feature)
        if supported is not None and not supported[0] <= level <= supported[1]:
            return _range_reason(f"Broker {broker.broker_id}", *supported)
    return None


def _range_reason(what: str, low: int, high: int) -> str:
    if high == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {low if low == high else f'{low}-{high}'}"


def _metadata_version(
    view: MetadataDelta, update: FeatureUpdate, kind: UpgradeType
) -> list[Record]:
    level = update.max_version_level
    if level not in METADATA_VERSIONS:
        raise ApiError(
            Errors.INVALID_UPDATE_VERSION,
            f"Invalid metadata.version {level}. Valid versions are from "
            f"{MINIMUM_METADATA_VERSION} to {LATEST_METADATA_VERSION}.",
        )
    current = view.metadata_version or level
    if level < current and metadata_changed_between(current, level):
        why = (
            "Unsafe metadata downgrade is not supported in this version."
            if kind is UpgradeType.UNSAFE_DOWNGRADE
            else "Refusing to perform the requested downgrade because it might delete "
            "metadata information."
        )
        raise ApiError(
            Errors.INVALID_UPDATE_VERSION,
            f"Unsupported metadata.version downgrade from {current} to {level}. {why}",
        )
    if level == view.metadata_version:
        return []
    return [FeatureLevelRecord(METADATA_VERSION, level)]


def _kraft_version(view: MetadataDelta, update: FeatureUpdate, kind: UpgradeType) -> list[Record]:
    level, current = update.max_version_level, view.kraft_version
    if kind is not UpgradeType.UPGRADE:
        if level != current:
            raise _refused(update, "Can't downgrade the version of this feature.")
        return []
    if level <= current:
        return []
    if not view.voters:
        raise _refused(
            update,
            "The quorum's voters are not known yet: the quorum moves to kraft.version 1 with "
            "its voters' endpoints once a controller listener serves a broker's Fetch.",
        )
    return [KRaftVersionRecord(KRAFT_VERSION_1), VotersRecord(view.voters)]


def _check_dependencies(update: FeatureUpdate, proposed: Mapping[str, int]) -> None:
    """Kafka's Feature.validateVersion against the levels the request leaves."""
    level = update.max_version_level
    if level >= 1 and proposed.get(METADATA_VERSION, 0) < MINIMUM_METADATA_VERSION:
        raise _refused(
            update,
            f"{update.feature} could not be set to {level} because it depends on "
            f"metadata.version={MINIMUM_METADATA_VERSION} (3.3-IV3)",
        )
    for needed, needed_level in DEPENDENCIES.get((update.feature, level), {}).items():
        if proposed.get(needed, 0) < needed_level:
            raise _refused(
                update,
                f"{update.feature} could not be set to {level} because it depends on "
                f"{needed} level {needed_level}",
            )

"""A cluster's log starts as Kafka's does (issue 35): the first commit that writes anything
begins with the bootstrap FeatureLevelRecords (metadata.version 25 = 4.0-IV3, group.version 1,
transaction.version 2); a log written before them gains them, appended, in its first commit
after the upgrade; features and producer id blocks replay, project, load and snapshot like
every other part of the image."""

from __future__ import annotations

import uuid

import pytest

from controlplane.controller.features import BOOTSTRAP_FEATURES, BOOTSTRAP_METADATA_VERSION
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.image.metadata import image_from_records
from controlplane.controller.records import FeatureLevelRecord, ProducerIdsRecord
from controlplane.models import FinalizedFeature, MetadataRecord
from controlplane.runtime import batch as runtime_batch
from controlplane.runtime.controller import get_runtime, reset_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.lease import cluster_get_or_create
from controlplane.runtime.replay import metadata_verify
from tests.conftest import registration_body

pytestmark = pytest.mark.django_db

BOOTSTRAP = [("FeatureLevelRecord", name, level) for name, level in BOOTSTRAP_FEATURES]


def registration(broker_id: int) -> ControllerEvent:
    return ControllerEvent(
        "BrokerRegistration",
        registration_body(broker_id, cluster_get_or_create().cluster_id),
        RequestContext(principal="User:test", request_id=str(uuid.uuid4())),
    )


def log() -> list[tuple[int, str, str | None, int | None]]:
    rows = MetadataRecord.objects.order_by("offset").values_list("offset", "record_type", "data")
    out = []
    for offset, record_type, data in rows:
        data = data if isinstance(data, dict) else {}
        out.append((offset, record_type, data.get("name"), data.get("feature_level")))
    return out


def test_a_new_clusters_first_write_starts_with_the_bootstrap_features() -> None:
    runtime = get_runtime()
    refused = runtime.handle(
        ControllerEvent(
            "BrokerRegistration",
            {**registration_body(1, "another-cluster")},
            RequestContext(principal="User:test", request_id="wrong-cluster"),
        )
    )
    assert refused.error_code != 0
    assert not MetadataRecord.objects.exists()  # a request that writes nothing writes nothing

    answer = runtime.handle(registration(1)).response
    first = len(BOOTSTRAP_FEATURES)
    assert answer["error_code"] == 0 and answer["broker_epoch"] == first
    assert log() == [
        *((offset, *feature) for offset, feature in enumerate(BOOTSTRAP)),
        (first, "RegisterBrokerRecord", None, None),
    ]
    assert runtime.image is not None
    assert runtime.image.metadata_version == BOOTSTRAP_METADATA_VERSION
    assert dict(FinalizedFeature.objects.values_list("name", "level")) == dict(BOOTSTRAP_FEATURES)
    assert metadata_verify() == []

    # A controller that loads from the tables finds them: nothing is bootstrapped twice.
    reset_runtime()
    get_runtime().handle(registration(2))
    assert [row[1] for row in log()].count("FeatureLevelRecord") == len(BOOTSTRAP_FEATURES)
    assert metadata_verify() == []


def test_a_log_written_before_the_features_gains_them_appended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with monkeypatch.context() as before_the_upgrade:
        before_the_upgrade.setattr(runtime_batch, "bootstrap_records", lambda view: [])
        get_runtime().handle(registration(1))
        get_runtime().handle(registration(2))
    assert [row[1] for row in log()] == ["RegisterBrokerRecord", "RegisterBrokerRecord"]
    reset_runtime()  # the upgraded controller
    get_runtime().handle(registration(3))
    assert log()[2:] == [
        *((2 + offset, *feature) for offset, feature in enumerate(BOOTSTRAP)),
        (2 + len(BOOTSTRAP), "RegisterBrokerRecord", None, None),
    ]
    assert metadata_verify() == []  # history unchanged; replay equals the tables


def test_features_and_producer_ids_replay_and_snapshot_first() -> None:
    image = MetadataImage(cluster_id="c")
    delta = MetadataDelta(image)
    delta.replay(FeatureLevelRecord("group.version", 1))
    delta.replay(FeatureLevelRecord("metadata.version", 25))
    delta.replay(ProducerIdsRecord(broker_id=1, broker_epoch=7, next_producer_id=1000))
    delta.replay(ProducerIdsRecord(broker_id=2, broker_epoch=9, next_producer_id=2000))
    with pytest.raises(ValueError, match="back"):
        MetadataDelta(_applied(image, delta)).replay(
            ProducerIdsRecord(broker_id=1, broker_epoch=7, next_producer_id=2000)
        )
    records = list(image.snapshot_records())
    assert records[:3] == [
        FeatureLevelRecord("metadata.version", 25),  # read before anything else
        FeatureLevelRecord("group.version", 1),
        ProducerIdsRecord(broker_id=2, broker_epoch=9, next_producer_id=2000),
    ]
    rebuilt = image_from_records(cluster_id="c", records=records, last_offset=image.last_offset)
    assert rebuilt.as_comparable() == image.as_comparable()
    removal = MetadataDelta(image)
    removal.replay(FeatureLevelRecord("group.version", 0))  # level 0 removes a feature
    image.apply(removal)
    assert image.features_image.finalized_features == {"metadata.version": 25}


def _applied(image: MetadataImage, delta: MetadataDelta) -> MetadataImage:
    image.apply(delta)
    return image


def test_a_broker_that_cannot_run_the_finalized_features_is_refused() -> None:
    runtime = get_runtime()
    runtime.handle(registration(1))  # the features are finalized with the first write
    too_old = registration(2)
    too_old.payload["features"] = [
        {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 21},
        {"name": "group.version", "min_supported_version": 0, "max_supported_version": 1},
        {"name": "transaction.version", "min_supported_version": 0, "max_supported_version": 2},
    ]
    refused = runtime.handle(too_old).response
    assert refused["error"] == "UNSUPPORTED_VERSION", refused
    assert "finalized version 25 of metadata.version" in refused["error_message"]
    no_groups = registration(3)
    no_groups.payload["features"] = [  # a feature it does not name: level 0 only
        {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 27},
    ]
    assert runtime.handle(no_groups).response["error"] == "UNSUPPORTED_VERSION"
    stock = registration(4)
    stock.payload["features"] = [
        {"name": "metadata.version", "min_supported_version": 7, "max_supported_version": 27},
        {"name": "group.version", "min_supported_version": 0, "max_supported_version": 1},
        {"name": "transaction.version", "min_supported_version": 0, "max_supported_version": 2},
        {"name": "kraft.version", "min_supported_version": 0, "max_supported_version": 1},
    ]
    assert runtime.handle(stock).response["error_code"] == 0

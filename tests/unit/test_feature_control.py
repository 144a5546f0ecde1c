"""UpdateFeatures as Kafka's FeatureControlManager decides it (the pure core), and the voters
the controller's listener reports (KIP-853)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controlplane.controller.dispatch import run_event
from controlplane.controller.env import ControllerEnv
from controlplane.controller.errors import Errors
from controlplane.controller.feature_control.control import (
    FeatureUpdate,
    UpgradeType,
    update_features,
)
from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.image.metadata import image_from_records
from controlplane.controller.metadata_versions import METADATA_VERSIONS, metadata_changed_between
from controlplane.controller.quorum_records import KRaftVersionRecord, VotersRecord
from controlplane.controller.records import FeatureLevelRecord, Listener, RegisterBrokerRecord

CLUSTER = "cluster-one"
UP, SAFE, UNSAFE = UpgradeType.UPGRADE, UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE
KAFKA_4_1 = (
    ("metadata.version", 7, 27),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
    ("eligible.leader.replicas.version", 0, 1),
    ("share.version", 0, 1),
)
KAFKA_4_4 = (
    ("metadata.version", 7, 33),
    ("kraft.version", 0, 1),
    ("group.version", 0, 1),
    ("transaction.version", 0, 2),
    ("eligible.leader.replicas.version", 0, 1),
    ("share.version", 0, 2),
    ("streams.version", 0, 1),
)


def cluster(*brokers: tuple[tuple[str, int, int], ...], level: int = 25) -> MetadataDelta:
    """A cluster at metadata.version `level` with a broker supporting each of `brokers`."""
    image = MetadataImage(cluster_id=CLUSTER)
    delta = MetadataDelta(image)
    delta.replay(FeatureLevelRecord("metadata.version", level))
    delta.replay(FeatureLevelRecord("group.version", 1))
    for broker_id, features in enumerate(brokers, start=1):
        delta.replay(
            RegisterBrokerRecord(
                broker_id,
                str(uuid.uuid4()),
                delta.next_offset,
                (Listener("PLAINTEXT", "h", 9092, "PLAINTEXT"),),
                None,
                "broker",
                (),
                features=features,
            )
        )
    image.apply(delta)
    return MetadataDelta(image)


def update(
    view: MetadataDelta, *updates: tuple[str, int, UpgradeType], validate_only: bool = False
):
    return update_features(
        view,
        [FeatureUpdate(name, level, kind) for name, level, kind in updates],
        validate_only=validate_only,
        controller_id=3000,
    )


def refused(result, code: Errors = Errors.INVALID_UPDATE_VERSION) -> str:
    assert result.records == []
    assert result.response["error_code"] == code
    assert {r["error_code"] for r in result.response["results"]} == {code}
    message = result.response["error_message"]
    assert message.startswith("The update failed for all features")
    return message


def test_an_upgrade_every_broker_supports_finalizes_the_level() -> None:
    result = update(cluster(KAFKA_4_4, KAFKA_4_4), ("metadata.version", 33, UP))
    assert result.response["error_code"] == 0
    assert result.records == [FeatureLevelRecord("metadata.version", 33)]


def test_a_level_a_registered_broker_does_not_support_is_refused_naming_it() -> None:
    message = refused(update(cluster(KAFKA_4_4, KAFKA_4_1), ("metadata.version", 33, UP)))
    assert "Broker 2 only supports versions 7-27" in message
    message = refused(update(cluster(KAFKA_4_1), ("streams.version", 1, UP)))
    assert "Broker 1 does not support this feature." in message


def test_eligible_leader_replicas_are_refused_with_why() -> None:
    message = refused(update(cluster(KAFKA_4_4), ("eligible.leader.replicas.version", 1, UP)))
    assert "Local controller 3000 does not support this feature." in message
    assert "KIP-966" in message


def test_one_refusal_writes_nothing_of_the_whole_request() -> None:
    view = cluster(KAFKA_4_4)
    result = update(
        view,
        ("metadata.version", 33, UP),
        ("share.version", 2, UP),
        ("eligible.leader.replicas.version", 1, UP),
    )
    refused(result)
    assert len(result.response["results"]) == 3


def test_validate_only_checks_everything_and_writes_nothing() -> None:
    view = cluster(KAFKA_4_4)
    ok = update(view, ("metadata.version", 33, UP), validate_only=True)
    assert ok.response["error_code"] == 0 and ok.records == []
    refused(update(view, ("metadata.version", 40, UP), validate_only=True))


@pytest.mark.parametrize(
    ("current", "target", "kind", "allowed"),
    [
        (27, 25, UP, False),  # a downgrade needs a downgrade type
        (27, 25, SAFE, True),  # 26 and 27 changed no metadata
        (27, 25, UNSAFE, True),
        (25, 22, SAFE, False),  # 23 did (eligible leader replicas)
        (25, 22, UNSAFE, False),  # Kafka 4.x performs no unsafe downgrade
        (33, 31, SAFE, False),  # 32 and 33 did
        (25, 27, SAFE, False),  # "Can't downgrade to a newer version."
    ],
)
def test_metadata_version_downgrades_follow_kafkas_rule(
    current: int, target: int, kind: UpgradeType, allowed: bool
) -> None:
    result = update(cluster(KAFKA_4_4, level=current), ("metadata.version", target, kind))
    if allowed:
        assert result.records == [FeatureLevelRecord("metadata.version", target)]
    else:
        refused(result)


def test_refusals_of_malformed_updates() -> None:
    view = cluster(KAFKA_4_4)
    assert "upgrade type" in refused(update(view, ("metadata.version", 27, UpgradeType.UNKNOWN)))
    assert "less than 0" in refused(update(view, ("group.version", -1, SAFE)))
    assert "only supports versions 7-33" in refused(update(view, ("metadata.version", 6, SAFE)))
    assert "does not know the feature" in refused(update(view, ("made.up.version", 0, UP)))


def test_a_level_already_finalized_writes_nothing() -> None:
    result = update(cluster(KAFKA_4_4), ("group.version", 1, UP), ("metadata.version", 25, UP))
    assert result.response["error_code"] == 0 and result.records == []


def test_disabling_a_feature_is_a_downgrade_to_zero() -> None:
    view = cluster(KAFKA_4_4)
    refused(update(view, ("group.version", 0, UP)))
    assert update(view, ("group.version", 0, SAFE)).records == [
        FeatureLevelRecord("group.version", 0)
    ]


def env() -> ControllerEnv:
    return ControllerEnv(now_ms=0, activated_ms=0, sessions={})


def voter_event(view: MetadataDelta, port: int, name: str = "CONTROLLER") -> dict:
    payload = {"voter_id": 3000, "endpoints": [{"name": name, "host": "127.0.0.1", "port": port}]}
    return run_event(view, "UpdateRaftVoter", payload, env())


def test_a_controller_listener_puts_its_voter_in_the_log_once() -> None:
    view = cluster(KAFKA_4_4)
    assert voter_event(view, 9098) == {"error_code": 0, "changed": True}
    kinds = [type(record) for _, record in view.replayed]
    assert kinds == [KRaftVersionRecord, VotersRecord]
    assert view.kraft_version == 1
    (voter,) = view.voters
    assert (voter.voter_id, [e.port for e in voter.endpoints]) == (3000, [9098])
    before = len(view.replayed)
    assert voter_event(view, 9098) == {"error_code": 0, "changed": False}
    assert len(view.replayed) == before
    voter_event(view, 9099)  # moved: a new VotersRecord, the same directory id
    assert isinstance(view.replayed[-1][1], VotersRecord)
    assert view.voters[0].directory_id == voter.directory_id
    voter_event(view, 9100, name="CONTROLLER_SSL")  # another listener: both kept
    assert [e.name for e in view.voters[0].endpoints] == ["CONTROLLER", "CONTROLLER_SSL"]


def test_kraft_version_is_never_downgraded_and_upgrades_with_its_voters() -> None:
    view = cluster(KAFKA_4_4)
    assert "voters are not known" in refused(update(view, ("kraft.version", 1, UP)))
    voter_event(view, 9098)
    assert update(view, ("kraft.version", 1, UP)).records == []
    assert "Can't downgrade" in refused(update(view, ("kraft.version", 0, SAFE)))


def test_bad_voter_reports_are_refused() -> None:
    view = cluster()
    for payload in (
        {},
        {"voter_id": 1, "endpoints": []},
        {"voter_id": 1, "endpoints": [{"name": "C", "host": "h", "port": 0}]},
    ):
        assert run_event(view, "UpdateRaftVoter", payload, env())["error_code"] == int(
            Errors.INVALID_REQUEST
        )
    assert view.replayed == []


# --- invariants over any sequence of updates ------------------------------------------------

LEVELS = st.sampled_from(sorted(METADATA_VERSIONS))
UPDATES = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "metadata.version",
                "group.version",
                "share.version",
                "kraft.version",
                "eligible.leader.replicas.version",
            ]
        ),
        st.integers(0, 35),
        st.sampled_from([UP, SAFE, UNSAFE]),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda u: u[0],
)


@settings(max_examples=300, deadline=None)
@given(st.lists(UPDATES, max_size=8), LEVELS)
def test_finalized_levels_stay_within_every_brokers_range_and_replay(requests, start) -> None:
    """Whatever is asked: every broker supports every finalized level, metadata.version never
    crosses a level that changed metadata downwards, a refused request writes nothing, and the
    log replayed from nothing equals the image."""
    view = cluster(KAFKA_4_1, KAFKA_4_4, level=min(start, 27))
    image = view.base
    for updates in requests:
        before = dict(view.finalized_features())
        delta = MetadataDelta(image)
        result = update(delta, *updates)
        if result.response["error_code"]:
            assert result.records == []
            continue
        for record in result.records:
            delta.replay(record)
        image.apply(delta)
        after = MetadataDelta(image).finalized_features()
        for broker in image.brokers.values():
            for name, level in after.items():
                low, high = broker.supported(name)
                assert low <= level <= high, (name, level, broker.broker_id)
        old, new = before["metadata.version"], after["metadata.version"]
        assert new >= old or not metadata_changed_between(old, new)
    rebuilt = image_from_records(
        cluster_id=CLUSTER, records=image.snapshot_records(), last_offset=image.last_offset
    )
    assert rebuilt.as_comparable() == image.as_comparable()


# --- CIDR ACL hosts: from metadata.version 4.4-IV1 (32) ---------------------------------------


def test_cidr_acl_hosts_need_4_4_iv1_and_match_the_block() -> None:
    from controlplane.controller.acls.authorizer import _in_block
    from controlplane.controller.acls.control import create_acls

    creation = {
        "resource_type": "TOPIC",
        "resource_name": "t",
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "10.1.0.0/16",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
    ids = iter(str(uuid.uuid4()) for _ in range(3))
    at_25 = create_acls(cluster(level=25), [creation], new_acl_id=lambda: next(ids))
    assert at_25.records == [] and at_25.response["results"][0]["error_code"] == int(
        Errors.UNSUPPORTED_VERSION
    )
    at_32 = create_acls(cluster(level=32), [creation], new_acl_id=lambda: next(ids))
    assert len(at_32.records) == 1 and at_32.response["results"][0]["error_code"] == 0
    bad = create_acls(
        cluster(level=33), [{**creation, "host": "10.1.0.0/99"}], new_acl_id=lambda: next(ids)
    )
    assert bad.response["results"][0]["error_code"] == int(Errors.INVALID_REQUEST)
    assert _in_block("10.1.200.3", "10.1.0.0/16") and not _in_block("10.2.0.1", "10.1.0.0/16")
    assert not _in_block("10.1.0.1", "10.1.0.1") and not _in_block("not-an-ip", "10.0.0.0/8")

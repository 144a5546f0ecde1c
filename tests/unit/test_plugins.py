"""The apps plug into the runtime one way: a `register_*` beside each registry, called from
`AppConfig.ready()`, idempotent (ready() may run again without registering anything twice)."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps

from controlplane.metrics import SCRAPE_COLLECTORS
from controlplane.rpc import AUDITORS
from controlplane.runtime.fencing import FENCING_LISTENERS
from controlplane.runtime.metadata_log import COMMIT_AUDIT
from controlplane.runtime.plugins import add_once
from controlplane.runtime.projections import (
    PROJECTIONS,
    AclProjection,
    ConfigProjection,
    register_projection,
)
from controlplane.runtime.request_ids import COLLISION_LISTENERS
from controlplane.runtime.snapshots import RETENTION_FLOORS
from controlplane.runtime.timer import TIMER_JOBS


def _registries() -> dict[str, list[Any]]:
    return {
        "projections": list(PROJECTIONS.values()),
        "timer jobs": list(TIMER_JOBS),
        "collision listeners": list(COLLISION_LISTENERS),
        "fencing listeners": list(FENCING_LISTENERS),
        "commit audit": list(COMMIT_AUDIT),
        "scrape collectors": list(SCRAPE_COLLECTORS),
        "auditors": list(AUDITORS),
        "retention floors": list(RETENTION_FLOORS),
    }


def test_ready_again_registers_nothing_twice() -> None:
    before = _registries()
    for config in apps.get_app_configs():
        config.ready()
    after = _registries()
    assert {name: [id(e) for e in entries] for name, entries in after.items()} == {
        name: [id(e) for e in entries] for name, entries in before.items()
    }


def test_every_app_plugs_in_from_ready() -> None:
    assert list(PROJECTIONS) == [
        "features",
        "acls",
        "configs",
        "brokers",
        "topics",
        "health",
        "delegation_tokens",
        "scram_credentials",
        "client_quotas",
        "mirror",
        "timeline",
    ]
    assert [job.__name__ for job in TIMER_JOBS] == [
        "metadata_snapshot_when_due",
        "apply_waiting_reports",
        "rebalance_when_due",
        "mirror_members_expire",
        "export_when_due",
    ]
    assert [type(c).__name__ for c in SCRAPE_COLLECTORS] == [
        "SnapshotCollector",
        "ClusterCollector",
        "ReplicationCollector",
        "CanaryCollector",
    ]
    assert [type(t).__name__ for t in COMMIT_AUDIT] == ["CommitAudit"]
    assert [f.__name__ for f in AUDITORS] == ["audit_executed"]
    assert [f.__name__ for f in FENCING_LISTENERS] == ["audit_fencing_hold_off"]
    assert [f.__name__ for f in COLLISION_LISTENERS] == ["audit_request_id_collisions"]
    assert [f.__name__ for f in RETENTION_FLOORS] == ["audit_exported_offset"]


def _job(runtime: object) -> None: ...


def _other_job(runtime: object) -> None: ...


class _Trail:
    pass


def test_a_function_is_registered_once_and_another_beside_it() -> None:
    entries: list[Any] = []
    assert add_once(entries, _job)
    assert not add_once(entries, _job)
    assert add_once(entries, _other_job)
    assert entries == [_job, _other_job]


def test_another_instance_of_a_registered_class_is_the_same_plugin() -> None:
    first = _Trail()
    entries: list[Any] = [first]
    assert not add_once(entries, _Trail())
    assert entries == [first]


def test_two_projections_may_not_share_a_name() -> None:
    register_projection(AclProjection())  # the registered one's class: nothing changes
    assert isinstance(PROJECTIONS["acls"], AclProjection)

    class Impostor(ConfigProjection):
        name = "acls"

    with pytest.raises(ValueError, match="two projections are named 'acls'"):
        register_projection(Impostor())
    assert isinstance(PROJECTIONS["acls"], AclProjection)

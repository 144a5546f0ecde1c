"""Every request's authorization reads the ACLs from a cache of the process: read again when a
commit changed ACLs (its notice), not after every commit (a cluster committing a hundred times
a second would otherwise read them on nearly every request), and at the latest after
CACHE_TTL_S. A process listens to the notices from its first authorization on."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from configs import mutation_quota
from controlplane import authz
from controlplane.authz import acl_cache
from controlplane.redis_client import key_prefix, redis_client
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from controlplane.runtime.notifier import CHANNEL, MetadataNotifier
from tests.api.test_configs_api import acl
from tests.api.test_tables_follow_the_log import registration
from tests.unit.test_notifier_notices import eventually, over_redis

__all__ = ["over_redis"]  # a fixture

pytestmark = pytest.mark.django_db


def quota_reads() -> int:
    with CaptureQueriesContext(connection) as captured:
        mutation_quota.quota_cache.quotas()
    return sum(1 for q in captured if "quota" in q["sql"].lower())


def acl_reads() -> int:
    with CaptureQueriesContext(connection) as captured:
        acl_cache.index()
    return sum(1 for q in captured if "cp_acl" in q["sql"])


def test_the_acls_are_read_again_after_a_commit_that_changed_them_only() -> None:
    runtime = get_runtime()
    acl_cache.clear()
    assert acl_reads() == 1
    assert acl_reads() == 0  # cached
    runtime.handle(registration(1))  # a commit that changed no ACL: the tables moved
    assert acl_reads() == 0
    creation = acl("TOPIC", "orders", "READ")
    answer = runtime.handle(
        ControllerEvent(
            "CreateAcls", {"creations": [creation]}, RequestContext(principal="User:admin")
        )
    )
    assert answer.response["results"] == [{"error_code": 0, "error_message": None}]
    assert acl_reads() == 1
    assert len(acl_cache.index()) == 1


def test_a_process_that_only_authorizes_hears_the_acls_and_quotas_notices_of_another(
    over_redis: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # This process serves no long-poll: its first authorization and its first quota read start
    # its listener, so that a revoked ACL or a changed quota applies here as soon as the
    # committing process's notice arrives, not when the cache's TTL ends.
    # (Two notifiers stand for this process's one, so that each cache is seen to start one.)
    committing, authorizing, quotas_reading = (MetadataNotifier() for _ in range(3))
    monkeypatch.setattr(authz, "notifier", authorizing)
    monkeypatch.setattr(mutation_quota, "notifier", quotas_reading)
    client = redis_client()
    assert client is not None
    channel = key_prefix() + CHANNEL
    acl_cache.clear()
    mutation_quota.quota_cache.clear()
    assert acl_reads() == 1
    assert eventually(lambda: client.pubsub_numsub(channel)[0][1] == 1)
    assert quota_reads() == 1
    assert eventually(lambda: client.pubsub_numsub(channel)[0][1] == 2)

    committing.publish_tables(7)
    assert eventually(lambda: authorizing.tables_offset == quotas_reading.tables_offset == 7)
    assert (acl_reads(), quota_reads()) == (0, 0)
    committing.publish_tables(8, acls_changed=True)
    assert eventually(lambda: authorizing.tables_offset == quotas_reading.tables_offset == 8)
    assert (acl_reads(), quota_reads()) == (1, 0)
    committing.publish_tables(9, quotas_changed=True)
    assert eventually(lambda: authorizing.tables_offset == quotas_reading.tables_offset == 9)
    assert (acl_reads(), quota_reads()) == (0, 1)

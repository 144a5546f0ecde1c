"""Every request's authorization reads the ACLs from a cache of the process: read again when a
commit changed ACLs (its notice), not after every commit (a cluster committing a hundred times
a second would otherwise read them on nearly every request), and at the latest after
CACHE_TTL_S."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from controlplane.authz import acl_cache
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from tests.api.test_configs_api import acl
from tests.api.test_tables_follow_the_log import registration

pytestmark = pytest.mark.django_db


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

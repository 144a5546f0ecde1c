"""Every admin write's controller mutation rate (KIP-599) reads the client quotas from a cache of
the process: read again when a commit changed client quotas (their notice), not after every
commit, and at the latest after CACHE_TTL_S."""

from __future__ import annotations

import pytest

from configs.mutation_quota import controller_mutation_rate, quota_cache
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerEvent, RequestContext
from tests.api.test_acl_cache import quota_reads
from tests.api.test_quotas_api import ent, op
from tests.api.test_tables_follow_the_log import registration

pytestmark = pytest.mark.django_db


def alter_quotas(*ops: dict[str, object]) -> None:
    answer = get_runtime().handle(
        ControllerEvent(
            "AlterClientQuotas",
            {"entries": [{"entity": ent(user="loader"), "ops": list(ops)}], "validate_only": False},
            RequestContext(principal="User:admin"),
        )
    )
    assert [e["error_code"] for e in answer.response["entries"]] == [0]


def test_the_quotas_are_read_again_after_a_commit_that_changed_them_only() -> None:
    quota_cache.clear()
    assert quota_reads() == 1
    assert quota_reads() == 0  # cached
    get_runtime().handle(registration(1))  # a commit that changed no quota: the tables moved
    assert quota_reads() == 0
    alter_quotas(op("controller_mutation_rate", 4.0))
    assert quota_reads() == 1
    assert controller_mutation_rate("loader", "any-client") == 4.0
    alter_quotas(op("controller_mutation_rate", remove=True))
    assert controller_mutation_rate("loader", "any-client") is None

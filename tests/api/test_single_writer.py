"""The single writer, enforced (issue 9): outside the controller's commit, no code can write the
metadata log or a projection table; the commit itself writes them all."""

from __future__ import annotations

from typing import Any

import pytest

from brokers.models import Broker
from controlplane.models import AppliedRequest, MetadataRecord
from controlplane.runtime.projections import PROJECTIONS
from controlplane.runtime.single_writer import ProjectionWriteOutsideCommit, guarded_tables
from replicas.models import Topic

pytestmark = pytest.mark.django_db


def test_every_projection_table_and_the_log_are_guarded() -> None:
    assert {"cp_metadata_record", "cp_applied_request"} <= guarded_tables()
    assert guarded_tables() >= {t for p in PROJECTIONS.values() for t in p.tables}
    assert {"cp_broker", "cp_topic", "cp_partition", "cp_acl", "cp_config"} <= guarded_tables()
    assert {"cp_client_quota", "cp_delegation_token"} <= guarded_tables()


@pytest.mark.parametrize(
    "write",
    [
        lambda: Topic.objects.create(
            name="sneaky", topic_id="00000000-0000-0000-0000-000000000000"
        ),
        lambda: Broker.objects.filter(pk=1).update(rack="x"),
        lambda: MetadataRecord.objects.all().delete(),
        lambda: AppliedRequest.objects.create(
            request_id="r",
            api="CreateTopics",
            response={},
            first_offset=0,
            last_offset=0,
            created_ms=0,
        ),
    ],
    ids=["create a topic", "update a broker", "delete the log", "remember a request"],
)
def test_a_write_outside_the_commit_is_refused(write: Any) -> None:
    with pytest.raises(ProjectionWriteOutsideCommit):
        write()


def test_the_commit_writes_the_log_and_its_projections(api: Any, tokens: dict[str, str]) -> None:
    config = {"name": "log.retention.ms", "config_operation": "SET", "value": "1234"}
    body = {"resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}]}
    status, answer = api.post("/api/v1/incremental-alter-configs", body, token=tokens["admin"])
    assert status == 200 and answer["responses"][0]["error_code"] == 0, answer
    assert MetadataRecord.objects.filter(record_type="ConfigRecord").count() == 1

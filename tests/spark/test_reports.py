"""Every audit report's figures (issue 10, point 3), on real PySpark (local mode) over an export of
data made through the real controller, against an independent computation in plain Python over
the same records as the ORM reads them (tests/spark/expected.py); state-at against what the
describe RPCs answered, now and at a moment recorded between the workload's two phases, and
against the controller's own image replayed up to moments along the log."""

from __future__ import annotations

import collections
from typing import Any

import pytest

from audit.spark.params import Params
from audit.spark.reader import Export
from audit.spark.render import rows_collect
from audit.spark.reports import FORWARDABLE_APIS, REPORTS, report_build
from tests.spark import expected
from tests.spark.conftest import Day

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

CONTRACT_COLUMNS = {  # docs/operators/audit-reports.md: fixed
    "admin-activity": ["day", "principal", "api", "outcome", "requests"],
    "denied-requests": [
        "time",
        "principal",
        "api",
        "resource",
        "error_code",
        "client_id",
        "client_address",
    ],
    "forwarding": [
        "forwarding_broker_id",
        "forwarding_principal",
        "api",
        "requests",
        "share_of_writes",
    ],
}
STATE_AT_COLUMNS = [
    "kind",
    "resource_type",
    "resource_name",
    "key_or_principal",
    "value_or_operation",
    "permission_type",
]


def report_rows(name: str, export: Export, params: Params) -> list[dict[str, Any]]:
    return rows_collect(report_build(name, export, params))


def windows(day: Day) -> dict[str, Params]:
    """The periods each report is checked over: all of it (open ends, `now` fixed after the
    last record), the second phase, and a period ending while partitions were leaderless."""
    now = day.last_ms + 60_000
    broker_one = next(
        e for e in day.events if e["api"] == "AlterReplicaState" and e["first_offset"] is not None
        and any(r["resource_name"] == "1" for r in e["resources"] if r["resource_type"] == "BROKER")
    )  # fmt: skip
    return {
        "everything": Params(now_ms=now),
        "second phase": Params(from_ms=day.moment.at_ms, to_ms=day.last_ms, now_ms=now),
        "ends mid-incident": Params(to_ms=broker_one["time_ms"] + 1, now_ms=now),
    }


WINDOWS = ["everything", "second phase", "ends mid-incident"]


def test_reports_have_the_columns_the_contract_fixes(export: Export, day: Day) -> None:
    params = Params(now_ms=day.last_ms)
    for name, columns in CONTRACT_COLUMNS.items():
        assert report_build(name, export, params).columns == columns
    state = report_build("state-at", export, params).columns
    assert state[:6] == STATE_AT_COLUMNS and state[6:] == ["pattern_type", "host"]
    for name, report in REPORTS.items():
        assert report_build(name, export, params).columns == list(report.columns)


def test_the_forwardable_apis_are_the_controllers() -> None:
    assert set(FORWARDABLE_APIS) == expected.FORWARDABLE


@pytest.mark.parametrize("window", WINDOWS)
def test_admin_activity(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("admin-activity", export, params)
    assert [tuple(r.values()) for r in rows] == expected.admin_activity(
        day.events, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    assert rows and not any(r["api"] == "AlterReplicaState" for r in rows)


@pytest.mark.parametrize("window", WINDOWS)
def test_denied_requests(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("denied-requests", export, params)
    want = expected.denied_requests(
        day.events, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    assert [tuple(r.values()) for r in rows] == want
    if window == "everything":  # each kind the workload made is there
        assert {r["error_code"] for r in rows} == {29, 31}
        assert "" in {r["resource"] for r in rows}  # denied as a whole, naming nothing
        assert "TOPIC:not-hers" in {r["resource"] for r in rows}


@pytest.mark.parametrize("window", WINDOWS)
def test_forwarding(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("forwarding", export, params)
    want = expected.forwarding(
        day.events, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    assert [tuple(r.values())[:4] for r in rows] == [w[:4] for w in want]
    assert [r["share_of_writes"] for r in rows] == pytest.approx([w[4] for w in want])
    assert sum(r["share_of_writes"] for r in rows) == pytest.approx(1.0)
    if window == "everything":  # Envelope writes by brokers 2 and 3, the rest direct
        forwarded = {(r["forwarding_broker_id"], r["api"]): r["requests"] for r in rows}
        assert forwarded[(2, "IncrementalAlterConfigs")] == 2
        assert forwarded[(3, "IncrementalAlterConfigs")] == 1


@pytest.mark.parametrize("window", WINDOWS)
def test_replica_health(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("replica-health", export, params)
    want = expected.replica_health(
        day.records, day.events, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    assert rows == [pytest.approx(w) for w in want]
    if window == "everything":
        by_broker = {r["broker_id"]: r for r in rows}
        assert set(by_broker) == {1, 2, 5}
        assert by_broker[2]["leaders_moved"] >= 1 and by_broker[2]["seconds_to_new_leader_max"]
        assert by_broker[1]["partitions_left_leaderless"] == 2  # fragile-0 and lonely-0
        assert by_broker[1]["leaderless_partition_seconds"] > 0


@pytest.mark.parametrize("window", WINDOWS)
def test_broker_lifecycle(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("broker-lifecycle", export, params)
    assert rows == expected.broker_lifecycle(
        day.records, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    if window == "everything":
        by_broker = {r["broker_id"]: r for r in rows}
        assert by_broker[6]["session_expiries"] == 1 and by_broker[4]["fencings"] >= 1
        assert by_broker[3]["controlled_shutdowns"] == 1
        assert by_broker[5]["pod"] == "canary-broker" and by_broker[1]["pod"] == "broker"


@pytest.mark.parametrize("window", WINDOWS)
def test_canary(export: Export, day: Day, window: str) -> None:
    params = windows(day)[window]
    rows = report_rows("canary", export, params)
    want = expected.canary(
        day.records, day.events, expected.Window(params.from_ms, params.to_ms, params.until_ms)
    )
    assert rows == [pytest.approx(w) for w in want]
    if window == "everything":
        canary = next(r for r in rows if r["pod"] == "canary-broker")
        assert canary["brokers"] == 2 and canary["session_expiries"] == 1
        assert canary["leaderless_partitions"] >= 1  # canary-solo-0, led by broker 5


# --- state-at ----------------------------------------------------------------------------------


def state_of(rows: list[dict[str, Any]]) -> expected.State:
    configs: dict[tuple[str, str], dict[str, str]] = collections.defaultdict(dict)
    acls: set[tuple[str, ...]] = set()
    quotas: dict[str, dict[str, float]] = collections.defaultdict(dict)
    for r in rows:
        if r["kind"] == "CONFIG":
            configs[(r["resource_type"], r["resource_name"])][r["key_or_principal"]] = r[
                "value_or_operation"
            ]
        elif r["kind"] == "ACL":
            acls.add(
                (
                    r["resource_type"],
                    r["resource_name"],
                    r["pattern_type"],
                    r["key_or_principal"],
                    r["host"],
                    r["value_or_operation"],
                    r["permission_type"],
                )
            )
        else:
            assert (r["kind"], r["resource_type"]) == ("QUOTA", "CLIENT_QUOTA")
            quotas[r["resource_name"]][r["key_or_principal"]] = float(r["value_or_operation"])
    return dict(configs), acls, dict(quotas)


def assert_described(state: expected.State, moment: Any, described: set[Any]) -> None:
    configs, acls, quotas = state
    shown = expected.described_configs(configs)
    assert {k: v for k, v in shown.items() if k in described} == moment.configs
    assert acls == moment.acls
    assert quotas == moment.quotas


def test_state_at_the_present_is_what_the_describe_rpcs_answer(export: Export, day: Day) -> None:
    rows = report_rows("state-at", export, Params())  # no --at: now
    state = state_of(rows)
    assert_described(state, day.now, day.workload.config_resources)
    configs = state[0]
    # The token key is a node setting: no record of the log, no row of the report.
    assert not [r for r in rows if r["key_or_principal"] == "delegation.token.secret.key"]
    assert ("TOPIC", "canary-solo") not in configs  # deleted with its topic
    assert [r["kind"] for r in rows] == sorted(
        (r["kind"] for r in rows), key=["CONFIG", "ACL", "QUOTA"].index
    )


def test_state_at_the_recorded_moment_is_what_they_answered_then(export: Export, day: Day) -> None:
    rows = report_rows("state-at", export, Params(at_ms=day.moment.at_ms))
    assert_described(state_of(rows), day.moment, day.workload.config_resources)
    assert state_of(rows) != state_of(report_rows("state-at", export, Params()))


def test_state_at_to_when_no_at_is_given(export: Export, day: Day) -> None:
    """The API asks with --to (the export's commit time) and no --at: the state at --to."""
    by_to = report_rows("state-at", export, Params(to_ms=day.moment.at_ms))
    assert by_to == report_rows("state-at", export, Params(at_ms=day.moment.at_ms))


def test_state_at_moments_along_the_log_is_the_controllers_image(export: Export, day: Day) -> None:
    stamps = sorted({r["timestamp_ms"] for r in day.records})
    removed = next(
        r["timestamp_ms"] for r in day.records if r["record_type"] == "RemoveTopicRecord"
    )
    picks = {stamps[0], stamps[len(stamps) // 3], removed - 1, removed, stamps[-1]}
    picks |= {r["timestamp_ms"] for r in day.records if r["record_type"].startswith("Remove")}
    for at in sorted(picks):
        rows = report_rows("state-at", export, Params(at_ms=at))
        assert state_of(rows) == expected.image_state(day.records, at), at

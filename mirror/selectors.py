"""MirrorMaker 2 reads: the configuration, each flow's group (the projection) and what its members
report (the member store), joined into the flows the API and the UI show.

A list of flows is two queries (the configuration and every group row) and one round trip to
the member store, whatever the number of flows, nodes and topics.
"""

from __future__ import annotations

from typing import Any

from controlplane.controller.image.mirror import FlowGroup
from controlplane.controller.mirror.config import (
    CONNECTORS,
    SOURCE_CONNECTOR,
    Flow,
    MirrorMakerConfig,
)
from controlplane.controller.mirror.group import config_of_text
from controlplane.controller.mirror.settings import TOPICS_DEFAULT, TOPICS_EXCLUDE_DEFAULT
from controlplane.controller.mirror_records import PAUSED, STARTED
from controlplane.controller.records import NO_OFFSET
from controlplane.runtime.lease import now_ms
from mirror.members import Report, member_store
from mirror.models import MirrorFlowGroup
from mirror.models import MirrorMakerConfig as ConfigRow
from mirror.projection import FLOW_COLUMNS, flow_group_of

UNASSIGNED = "UNASSIGNED"


def mirror_config_get() -> tuple[str, int] | None:
    """(text, offset) of the stored configuration, exactly as it was sent."""
    row = ConfigRow.objects.filter(pk=1).values_list("text", "offset").first()
    return None if row is None else (str(row[0]), int(row[1]))


def mirror_config_offset() -> int:
    offset = ConfigRow.objects.filter(pk=1).values_list("offset", flat=True).first()
    return NO_OFFSET if offset is None else int(offset)


def mirror_config_parsed(stored: tuple[str, int] | None = None) -> MirrorMakerConfig | None:
    stored = stored if stored is not None else mirror_config_get()
    if stored is None:
        return None
    return config_of_text(stored[0])


def mirror_flow_exists(*, source: str, target: str) -> bool:
    config = mirror_config_parsed()
    return config is not None and config.flow(source, target) is not None


def mirror_flow_group(*, source: str, target: str) -> FlowGroup:
    names = [c.name for c in FLOW_COLUMNS]
    row = MirrorFlowGroup.objects.filter(source=source, target=target).values(*names).first()
    return FlowGroup() if row is None else flow_group_of(row)


def _groups() -> dict[tuple[str, str], FlowGroup]:
    names = [c.name for c in FLOW_COLUMNS]
    return {
        (str(row["source"]), str(row["target"])): flow_group_of(row)
        for row in MirrorFlowGroup.objects.values(*names)
    }


def _flows(
    config: MirrorMakerConfig | None, source: str | None, target: str | None
) -> list[dict[str, Any]]:
    if config is None:
        return []
    flows = [
        f
        for f in config.flows()
        if (source is None or f.source == source) and (target is None or f.target == target)
    ]
    groups = _groups() if flows else {}
    reports = member_store().reports(f.name for f in flows) if flows else {}
    now = now_ms()
    return [
        flow_view(config, f, groups.get(f.key, FlowGroup()), reports.get(f.name, {}), now)
        for f in flows
    ]


def mirror_flow_list(
    *, source: str | None = None, target: str | None = None
) -> list[dict[str, Any]]:
    """Every flow of the configuration (optionally of one source or target), as
    `GET /api/v1/mirror/flows` answers them."""
    return _flows(mirror_config_parsed(), source, target)


def mirror_flow_detail(*, source: str, target: str) -> dict[str, Any] | None:
    found = mirror_flow_list(source=source, target=target)
    return found[0] if found else None


def mirror_overview() -> dict[str, Any]:
    """The clusters and every flow (the UI's picture): two queries."""
    stored = mirror_config_get()
    config = mirror_config_parsed(stored)
    return {
        "configured": config is not None,
        "config_offset": stored[1] if stored else None,
        "clusters": list(config.clusters) if config else [],
        "flows": _flows(config, None, None),
    }


def mirror_flow_page(*, source: str, target: str) -> dict[str, Any] | None:
    """One flow with its connectors' configs and its worker config as stored (references as
    references): two queries."""
    config = mirror_config_parsed()
    found = _flows(config, source, target)
    if config is None or not found:
        return None
    flow = Flow(source, target)
    return {
        "flow": found[0],
        "connector_configs": {c: config.connector_config(flow, c) for c in CONNECTORS},
        "worker_config": config.worker_config(flow),
    }


def _state(report: Report | None, kind: str, name: str) -> tuple[str, str | None]:
    status = ((report or {}).get(kind) or {}).get(name)
    if not status:
        return UNASSIGNED, None
    return str(status.get("state", UNASSIGNED)), status.get("trace")


def flow_view(
    config: MirrorMakerConfig,
    flow: Flow,
    group: FlowGroup,
    reports: dict[str, Report],
    now: int,
) -> dict[str, Any]:
    """One flow as the API answers it: nodes, leader, connectors and tasks with their states and
    workers, replicated topics and their filters, heartbeat age, lagging topics."""
    members = {m.member_id: m for m in group.members}
    current = {k: v for k, v in reports.items() if k in members}
    runs: dict[str, str] = {}  # connector or task -> member id
    for assignment in group.assignments if group.assignment_generation == group.generation else ():
        for item in (*assignment.connectors, *assignment.tasks):
            runs[item] = assignment.member_id

    def worker(item: str) -> str | None:
        member = members.get(runs.get(item, ""))
        return member.worker_id if member else None

    connectors = []
    for name in CONNECTORS:
        state, trace = _state(current.get(runs.get(name, "")), "connectors", name)
        tasks = []
        for index in range(len(group.task_configs.get(name, ()))):
            task = f"{name}-{index}"
            task_state, task_trace = _state(current.get(runs.get(task, "")), "tasks", task)
            tasks.append(
                {"id": index, "state": task_state, "worker_id": worker(task), "trace": task_trace}
            )
        connectors.append(
            {
                "name": name,
                "state": state,
                "worker_id": worker(name),
                "trace": trace,
                "target_state": group.target_states.get(name, STARTED),
                "tasks": tasks,
            }
        )
    source_report = current.get(runs.get(SOURCE_CONNECTOR, ""), {})
    emitted = [
        int(r["emitted_heartbeat_ms"]) for r in current.values() if r.get("emitted_heartbeat_ms")
    ]
    return {
        "source": flow.source,
        "target": flow.target,
        "name": flow.name,
        "group_id": f"mm2-{flow.name}",
        "enabled": config.flow_enabled(flow),
        "paused": all(group.target_states.get(c, STARTED) == PAUSED for c in CONNECTORS),
        "generation": group.generation,
        "group_state": group.state,
        "leader": members[group.leader].worker_id if group.leader in members else None,
        "nodes": [
            {
                "worker_id": m.worker_id,
                "rest_url": m.rest_url,
                "leader": m.member_id == group.leader,
                "last_heartbeat_ms": int(
                    current.get(m.member_id, {}).get("contact_ms", m.joined_ms)
                ),
            }
            for m in sorted(group.members, key=lambda m: m.worker_id)
        ],
        "connectors": connectors,
        "topics": source_report.get("topics") or [],
        "heartbeat_age_ms": now - max(emitted) if emitted else None,
        "lagging_topics": source_report.get("lagging_topics") or [],
        "topics_filter": config.setting(flow, "topics", TOPICS_DEFAULT),
        "topics_exclude": config.setting(flow, "topics.exclude", TOPICS_EXCLUDE_DEFAULT),
    }

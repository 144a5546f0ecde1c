"""MirrorMaker 2 flows as the UI shows them: each flow's health, the picture of clusters and
flows (an SVG drawn from plain numbers), and config values with their provider references
shown as references; the tables of flows, nodes and topics as their columns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from controlplane.controller.mirror.references import PATTERN
from frontend.tables.columns import Column, Table, badge, dash_if_empty, joined, link, muted
from frontend.tables.common import format_age

OK, LAGGING, PAUSED, DOWN = "ok", "lagging", "paused", "down"
HEALTH_TEXT = {
    OK: "replicating",
    LAGGING: "lagging",
    PAUSED: "paused",
    DOWN: "down",
}
HEALTH_BADGE = {OK: "badge-ok", LAGGING: "badge-warn", PAUSED: "badge-muted", DOWN: "badge-danger"}
HEALTH_COLOUR = {OK: "#1c6b35", LAGGING: "#b06a00", PAUSED: "#66717e", DOWN: "#a12727"}
WIDTH, HEIGHT, NODE_R = 640, 320, 34


def _states(flow: Mapping[str, Any]) -> list[str]:
    states = [c["state"] for c in flow["connectors"]]
    return states + [t["state"] for c in flow["connectors"] for t in c["tasks"]]


def flow_health(flow: Mapping[str, Any]) -> str:
    """down: no node runs it, or a connector or task failed; paused; lagging: source topics not
    yet on the target, or connectors waiting for an assignment; else ok."""
    states = _states(flow)
    if not flow["nodes"] or "FAILED" in states:
        return DOWN
    if flow["paused"]:
        return PAUSED
    if flow["lagging_topics"] or "UNASSIGNED" in states:
        return LAGGING
    return OK


def flow_row(flow: Mapping[str, Any], now_ms: int) -> dict[str, Any]:
    health = flow_health(flow)
    failed = [c for c in flow["connectors"] if c["state"] == "FAILED"]
    return {
        **flow,
        "health": health,
        "health_text": HEALTH_TEXT[health],
        "health_badge": HEALTH_BADGE[health],
        "heartbeat_age": "—"
        if flow["heartbeat_age_ms"] is None
        else format_age(now_ms - flow["heartbeat_age_ms"], now_ms),
        "failed": failed,
        "nodes_shown": [
            {**n, "age": format_age(n["last_heartbeat_ms"], now_ms)} for n in flow["nodes"]
        ],
        "task_count": sum(len(c["tasks"]) for c in flow["connectors"]),
    }


def flow_picture(clusters: Sequence[str], flows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Clusters on a circle, each flow an arrow from source to target in its health's colour
    (a flow and its reverse bend apart so both show)."""
    cx, cy = WIDTH / 2, HEIGHT / 2
    radius = min(cx, cy) - NODE_R - 24
    count = max(1, len(clusters))
    places: dict[str, tuple[float, float]] = {}
    for index, alias in enumerate(clusters):
        angle = math.pi + 2 * math.pi * index / count  # the first cluster on the left
        places[alias] = (
            cx + (radius * 1.6 if count == 2 else radius) * math.cos(angle),
            cy + radius * math.sin(angle),
        )
    arrows = []
    for flow in flows:
        if flow["source"] not in places or flow["target"] not in places:
            continue
        (x1, y1), (x2, y2) = places[flow["source"]], places[flow["target"]]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        nx, ny = -uy, ux  # the left normal: A->B and B->A bend to opposite sides
        start = (x1 + ux * NODE_R, y1 + uy * NODE_R)
        end = (x2 - ux * (NODE_R + 6), y2 - uy * (NODE_R + 6))
        control = ((x1 + x2) / 2 + nx * 40, (y1 + y2) / 2 + ny * 40)
        label = (
            0.25 * start[0] + 0.5 * control[0] + 0.25 * end[0],
            0.25 * start[1] + 0.5 * control[1] + 0.25 * end[1],
        )
        health = flow_health(flow)
        arrows.append(
            {
                "name": flow["name"],
                "source": flow["source"],
                "target": flow["target"],
                "path": f"M {start[0]:.1f} {start[1]:.1f} Q {control[0]:.1f} {control[1]:.1f} "
                f"{end[0]:.1f} {end[1]:.1f}",
                "label_x": round(label[0], 1),
                "label_y": round(label[1] + (14 if ny > 0 else -8), 1),
                "health": health,
                "health_text": HEALTH_TEXT[health],
                "colour": HEALTH_COLOUR[health],
            }
        )
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "radius": NODE_R,
        "clusters": [
            {"alias": a, "x": round(x, 1), "y": round(y, 1)} for a, (x, y) in places.items()
        ],
        "arrows": arrows,
        "colours": HEALTH_COLOUR,
    }


def value_parts(value: str) -> list[tuple[bool, str]]:
    """A config value cut into literal text and config provider references (True)."""
    parts: list[tuple[bool, str]] = []
    index = 0
    for match in PATTERN.finditer(value):
        if match.start() > index:
            parts.append((False, value[index : match.start()]))
        parts.append((True, match.group(0)))
        index = match.end()
    if index < len(value) or not parts:
        parts.append((False, value[index:]))
    return parts


def config_rows(config: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "key": key,
            "parts": value_parts(value),
            "has_reference": any(r for r, _ in value_parts(value)),
        }
        for key, value in sorted(config.items())
    ]


# --- the tables of flows, of a flow's nodes and of its topics ------------------------------------
Flow = Mapping[str, Any]  # a flow_row


def connector_state_badge(state: str) -> str:
    """The badge classes of a connector's or a task's state."""
    kind = {"RUNNING": "badge-ok", "FAILED": "badge-danger", "PAUSED": "badge-muted"}
    return f"badge {kind.get(state, 'badge-warn')}"


def _flow_name(flow: Flow) -> SafeString:
    url = reverse("frontend:mirror-flow", args=[flow["source"], flow["target"]])
    if flow["enabled"]:
        return link(url, flow["name"])
    return format_html("{} {}", link(url, flow["name"]), badge("muted", "heartbeats only"))


def _connectors(flow: Flow) -> SafeString:
    return format_html_join(
        "",
        '<div>{} <span class="{}">{}</span></div>',
        ((c["name"], connector_state_badge(c["state"]), c["state"]) for c in flow["connectors"]),
    )


FLOW_COLUMNS = (
    Column("name", "Flow", _flow_name, css="mono"),
    Column(
        "health",
        "Health",
        lambda f: format_html(
            '<span class="badge {}" data-testid="health">{}</span>',
            f["health_badge"],
            f["health_text"],
        ),
    ),
    Column("nodes", "Nodes", lambda f: len(f["nodes"]), css="num", testid="node-count"),
    Column("leader", "Leader", lambda f: dash_if_empty(f["leader"]), css="mono small"),
    Column("generation", "Generation", lambda f: f["generation"], num=True),
    Column("connectors", "Connectors", _connectors, css="small"),
    Column("topics", "Topics", lambda f: len(f["topics"]), num=True, testid="topic-count"),
    Column(
        "lagging",
        "Lagging",
        lambda f: dash_if_empty(joined(f["lagging_topics"])),
        css="mono small",
        testid="lagging",
    ),
    Column("heartbeat_age", "Last heartbeat", lambda f: f["heartbeat_age"]),
)


def flow_table(flows: Sequence[Flow]) -> Table:
    return Table(
        FLOW_COLUMNS,
        flows,
        testid="flow-table",
        row_attributes=lambda f: {
            "id": f"flow-{f['source']}-{f['target']}",
            "data-health": f["health"],
        },
    )


def _node_role(node: Mapping[str, Any]) -> SafeString:
    if node["leader"]:
        return badge("ok", "leader", testid="leader-badge")
    return muted("follower")


NODE_COLUMNS = (
    Column("worker_id", "Worker id", lambda n: n["worker_id"], css="mono"),
    Column(
        "rest_url",
        "REST URL",
        lambda n: link(f"{n['rest_url']}/connectors", n["rest_url"]),
        css="mono small",
    ),
    Column("role", "Role", _node_role),
    Column("age", "Last heartbeat", lambda n: n["age"]),
)
MIRRORED_TOPIC_COLUMNS = (
    Column("source_topic", "Source topic", lambda t: t["source_topic"], css="mono"),
    Column("remote_topic", "Remote topic", lambda t: t["remote_topic"], css="mono"),
    Column("matched_filter", "Selected by", lambda t: t["matched_filter"], css="mono small"),
)


def node_table(flow: Flow) -> Table:
    return Table(
        NODE_COLUMNS,
        flow["nodes_shown"],
        testid="node-table",
        row_attributes=lambda n: {"data-worker-id": n["worker_id"]},
    )


def mirrored_topic_table(flow: Flow) -> Table:
    return Table(
        MIRRORED_TOPIC_COLUMNS,
        flow["topics"],
        testid="topic-table",
        row_attributes=lambda t: {"data-topic": t["source_topic"]},
    )

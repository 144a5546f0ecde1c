"""The canary page (KIP-1095): brokers by pod and version, the rollout guard's verdict with its
evidence, and each topic's canary partitions with those not isolated highlighted."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from canary.selectors import canary_rollout, canary_summary
from frontend.tables.canary import (
    CANARY_POD,
    canary_topic_rows,
    canary_topic_table,
    isolation_reason,
    pod_groups,
)
from frontend.views.base import principal_required, render_page

MAX_VERSION_LENGTH = 128


def duration_text(ms: int | None) -> str:
    """A duration as a person reads it ("12 min 5 s", "1 h 0 min", "850 ms"), not a count of
    milliseconds."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    seconds = ms // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s"
    return f"{secs} s"


def known_versions(brokers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The versions the fleet's brokers report (`software_version`), each with how many
    brokers run it, canary and not: the rollout form's choices."""
    found: dict[str, dict[str, Any]] = {}
    for broker in brokers:
        version = broker.get("software_version")
        if not version:
            continue
        entry = found.setdefault(version, {"version": version, "brokers": 0, "canary": 0})
        entry["brokers"] += 1
        entry["canary"] += int(broker["pod"] == CANARY_POD)
    return sorted(found.values(), key=lambda v: v["version"])


@principal_required
def canary_view(request: HttpRequest) -> HttpResponse:
    summary = canary_summary()
    canary_ids = {*summary["canary_brokers"]["unfenced"], *summary["canary_brokers"]["fenced"]}
    groups = pod_groups(summary["brokers"])
    version = request.GET.get("version", "").strip()[:MAX_VERSION_LENGTH]
    if not version:
        # The version the canary brokers run, when they run one: what a rollout is testing.
        canary_versions = [
            v for g in groups if g.is_canary for v, _ in g.versions if v != "unknown"
        ]
        version = canary_versions[0] if len(canary_versions) == 1 else ""
    topics = canary_topic_rows(summary["topics"], canary_ids)
    rollout = canary_rollout(version=version) if version else None
    evidence = rollout["evidence"] if rollout else {}
    return render_page(
        request,
        title="Canary",
        section="canary",
        fragment="frontend/partials/canary.html",
        context={
            "summary": summary,
            "groups": groups,
            "versions": known_versions(summary["brokers"]),
            "version": version,
            "rollout": rollout,
            "bake_elapsed": duration_text(evidence.get("bake_elapsed_ms")),
            "bake_time": duration_text(evidence.get("bake_time_ms")),
            "topics": canary_topic_table(topics),
            "not_isolated_topics": [t for t in topics if not t.isolated],
            "reason": isolation_reason(summary),
        },
    )

"""The canary page (KIP-1095): brokers by pod and version, the rollout guard's verdict with its
evidence, and each topic's canary partitions with those not isolated highlighted."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from canary.selectors import canary_rollout, canary_summary
from frontend.tables.canary import (
    canary_topic_rows,
    canary_topic_table,
    isolation_reason,
    pod_groups,
)
from frontend.views.base import principal_required, render_page

MAX_VERSION_LENGTH = 128


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
    return render_page(
        request,
        title="Canary",
        section="canary",
        fragment="frontend/partials/canary.html",
        context={
            "summary": summary,
            "groups": groups,
            "versions": sorted({v for g in groups for v, _ in g.versions if v != "unknown"}),
            "version": version,
            "rollout": canary_rollout(version=version) if version else None,
            "topics": canary_topic_table(topics),
            "not_isolated_topics": [t for t in topics if not t.isolated],
            "reason": isolation_reason(summary),
        },
    )

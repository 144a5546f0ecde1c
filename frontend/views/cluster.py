"""The cluster's pages: the overview, the brokers, and the replica incidents."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from brokers.selectors import (
    broker_get,
    broker_list,
    broker_records,
    broker_sessions,
    cluster_summary,
)
from controlplane.runtime.lease import now_ms
from frontend.forms.cluster import IncidentFilterForm
from frontend.tables.cluster import (
    STATE_BADGES,
    broker_row,
    broker_rows,
    incident_rows,
    record_rows,
)
from frontend.tables.topics import broker_replica_rows
from frontend.views.base import (
    hidden_topics,
    paginate,
    principal_required,
    render_page,
    topic_visibility,
)
from replicas.selectors import (
    broker_replica_counts,
    offline_partitions_on_broker,
    partitions_on_broker,
    replica_incidents,
    replication_summary,
)

RECORDS_LIMIT = 100
BROKER_REPLICAS_PAGE_SIZE = 50
OFFLINE_REPLICAS_LIMIT = 100
INCIDENTS_LIMIT = 200
INCIDENTS_PAGE_SIZE = 50


@principal_required
def overview_view(request: HttpRequest) -> HttpResponse:
    summary = cluster_summary()
    states = [
        {"state": state, "count": count, "badge": STATE_BADGES.get(state, "muted")}
        for state, count in summary["broker_states"].items()
    ]
    pods = [{"pod": pod, "count": count} for pod, count in summary["broker_pods"].items()]
    return render_page(
        request,
        title="Cluster overview",
        section="overview",
        fragment="frontend/partials/overview.html",
        context={
            "summary": summary,
            "states": states,
            "pods": pods,
            "broker_total": sum(summary["broker_pods"].values()),
            "replication": replication_summary(),
        },
    )


@principal_required
def broker_list_view(request: HttpRequest) -> HttpResponse:
    sessions = broker_sessions()
    rows = broker_rows(broker_list(), sessions, now_ms())
    return render_page(
        request,
        title="Brokers",
        section="brokers",
        fragment="frontend/partials/broker_list.html",
        context={"brokers": rows},
    )


@principal_required
def broker_detail_view(request: HttpRequest, broker_id: int) -> HttpResponse:
    broker = broker_get(broker_id=broker_id)
    if broker is None:
        return render_page(
            request,
            title="Broker not found",
            section="brokers",
            fragment="frontend/partials/not_found.html",
            context={"kind": "broker", "key": broker_id},
            status=404,
        )
    row = broker_row(broker, broker_sessions(), now_ms())
    records = record_rows(broker_records(broker_id=broker_id, limit=RECORDS_LIMIT))
    hidden = hidden_topics(topic_visibility(request))
    replicas = partitions_on_broker(broker_id=broker_id, exclude_topics=hidden)
    offline = offline_partitions_on_broker(broker_id=broker_id, exclude_topics=hidden)
    counts = broker_replica_counts(broker_id=broker_id, exclude_topics=hidden)
    page = paginate(request, replicas, BROKER_REPLICAS_PAGE_SIZE)
    offline_rows = broker_replica_rows(offline[: OFFLINE_REPLICAS_LIMIT + 1], broker_id)
    return render_page(
        request,
        title=f"Broker {broker_id}",
        section="brokers",
        fragment="frontend/partials/broker_detail.html",
        context={
            "broker": row,
            "records": records,
            "records_limit": RECORDS_LIMIT,
            "replica_counts": counts,
            "replicas": broker_replica_rows(page.object_list, broker_id),
            "page_obj": page,
            "offline_replicas": offline_rows[:OFFLINE_REPLICAS_LIMIT],
            "offline_truncated": len(offline_rows) > OFFLINE_REPLICAS_LIMIT,
            "offline_limit": OFFLINE_REPLICAS_LIMIT,
        },
    )


@principal_required
def incident_list_view(request: HttpRequest) -> HttpResponse:
    form = IncidentFilterForm(request.GET)
    if form.is_valid():
        broker_id = form.broker_id()
        incidents = incident_rows(replica_incidents(broker_id=broker_id, limit=INCIDENTS_LIMIT))
        visible = topic_visibility(request)
        if visible is not None:
            incidents = [row for row in incidents if visible(row.topic)]
    else:
        broker_id, incidents = None, []
    page = paginate(request, incidents, INCIDENTS_PAGE_SIZE)
    return render_page(
        request,
        title="Replica incidents",
        section="incidents",
        fragment="frontend/partials/incident_list.html",
        context={
            "form": form,
            "broker_id": broker_id,
            "incidents": page.object_list,
            "incident_total": len(incidents),
            "incidents_limit": INCIDENTS_LIMIT,
            "page_obj": page,
        },
    )

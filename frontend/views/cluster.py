"""The cluster's pages: the overview (health the Kafka way, each figure a link to the partitions
it counts, with its trend), the brokers (what each holds and leads, its log dirs) and one broker.
Every figure is the controller's count (cp_cluster_health, cp_broker_load): no page scans the
partitions to count them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import urlencode

from brokers.selectors import (
    broker_get,
    broker_list,
    broker_records,
    broker_sessions,
    cluster_summary,
)
from controlplane.runtime.lease import now_ms
from frontend.tables.charts import broker_bars, trend_charts
from frontend.tables.cluster import (
    BROKER_COLUMNS,
    BROKER_EXTRA_SORTS,
    OFFLINE_REPLICAS_MEANING,
    STATE_BADGES,
    BrokerRow,
    broker_row,
    broker_rows,
    broker_table,
    record_rows,
    record_table,
)
from frontend.tables.columns import row_keys, rows_sorted
from frontend.tables.common import format_age, format_ms
from frontend.tables.partitions import offline_replica_table, replica_table
from frontend.tables.topics import broker_replica_rows
from frontend.views.base import (
    hidden_topics,
    paginate,
    principal_required,
    render_page,
    sorting,
    topic_visibility,
)
from replicas.selectors import (
    broker_loads,
    broker_replica_counts,
    health_samples,
    offline_partitions_on_broker,
    partitions_on_broker,
    replication_summary,
)
from timeline.models import TimelineEvent
from timeline.selectors import timeline_event_list

RECORDS_LIMIT = 100
BROKER_REPLICAS_PAGE_SIZE = 50
OFFLINE_REPLICAS_LIMIT = 100
SPARKLINE_MINUTES = 60
RECENT_INCIDENTS = 5


@dataclasses.dataclass(frozen=True, slots=True)
class RecentIncident:
    """An incident of the overview's list, with when: how long ago, and the UTC time."""

    event: TimelineEvent
    ago: str
    at: str

    @property
    def iso(self) -> str:
        return dt.datetime.fromtimestamp(self.event.timestamp_ms / 1000, tz=dt.UTC).isoformat()


@dataclasses.dataclass(frozen=True, slots=True)
class HealthFigure:
    """One of the overview's health figures and where it leads."""

    key: str
    label: str
    value: int
    url: str
    severity: str  # the badge when not zero
    explanation: str


def partitions_url(**filters: str) -> str:
    return f"{reverse('frontend:partition-list')}?{urlencode(filters)}"


def health_figures(summary: dict[str, Any], fenced_brokers: int = 0) -> list[HealthFigure]:
    brokers_with_dirs = f"{reverse('frontend:broker-list')}?offline_log_dirs=true"
    return [
        HealthFigure(
            "fenced_brokers",
            "Fenced brokers",
            fenced_brokers,
            f"{reverse('frontend:broker-list')}?state=FENCED",
            "danger",
            "not heartbeating: their replicas are offline, their log dirs unknown",
        ),
        HealthFigure(
            "under_replicated_partitions",
            "Under-replicated partitions",
            summary["under_replicated_partitions"],
            partitions_url(under_replicated="true"),
            "warn",
            "ISR smaller than the replicas",
        ),
        HealthFigure(
            "under_min_isr_partitions",
            "Under min ISR",
            summary["under_min_isr_partitions"],
            partitions_url(under_min_isr="true"),
            "danger",
            "ISR smaller than min.insync.replicas: acks=all producers fail",
        ),
        HealthFigure(
            "at_min_isr_partitions",
            "At min ISR",
            summary["at_min_isr_partitions"],
            partitions_url(at_min_isr="true"),
            "muted",
            "one more replica lost and acks=all producers fail",
        ),
        HealthFigure(
            "leaderless_partitions",
            "Leaderless partitions",
            summary["leaderless_partitions"],
            partitions_url(leaderless="true"),
            "danger",
            "no leader: unavailable (Kafka's OfflinePartitionsCount)",
        ),
        HealthFigure(
            "preferred_replica_imbalance",
            "Off their preferred leader",
            summary["preferred_replica_imbalance"],
            partitions_url(preferred_leader="false"),
            "muted",
            "led by another replica than the first",
        ),
        HealthFigure(
            "offline_log_dirs",
            "Offline log dirs",
            summary["offline_log_dirs"],
            brokers_with_dirs,
            "danger",
            "log dirs the brokers' latest heartbeats name offline",
        ),
        HealthFigure(
            "offline_replicas",
            "Offline replicas",
            summary["offline_replicas"],
            partitions_url(offline="true"),
            "warn",
            OFFLINE_REPLICAS_MEANING,
        ),
    ]


@principal_required
def overview_view(request: HttpRequest) -> HttpResponse:
    summary = cluster_summary()
    replication = replication_summary()
    states = [
        {"state": state, "count": count, "badge": STATE_BADGES.get(state, "muted")}
        for state, count in summary["broker_states"].items()
    ]
    pods = [{"pod": pod, "count": count} for pod, count in summary["broker_pods"].items()]
    now = now_ms()
    samples = health_samples(since_ms=now - SPARKLINE_MINUTES * 60_000)
    hidden = hidden_topics(topic_visibility(request))
    recent = [
        RecentIncident(event, format_age(event.timestamp_ms, now), format_ms(event.timestamp_ms))
        for event in timeline_event_list(incidents_only=True, hidden_topics=hidden)[
            :RECENT_INCIDENTS
        ]
    ]
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
            "replication": replication,
            "health": health_figures(replication, summary["broker_states"]["FENCED"]),
            "sparklines": trend_charts(
                samples, now_ms=now, minutes=SPARKLINE_MINUTES, kind="sparkline"
            ),
            "recent_incidents": recent,
            "hidden_topic_count": len(hidden or ()),
        },
    )


def sorted_brokers(request: HttpRequest, rows: list[BrokerRow]) -> tuple[list[BrokerRow], Any]:
    """Brokers are few: sorted here, by any sortable column (or a sort a link asks for)."""
    keys = {**row_keys(BROKER_COLUMNS), **BROKER_EXTRA_SORTS}
    sort = sorting(request, {key: (key,) for key in keys}, "id")
    return rows_sorted(rows, keys, sort.key, descending=sort.descending), sort


@principal_required
def broker_list_view(request: HttpRequest) -> HttpResponse:
    rows = broker_rows(broker_list(), broker_sessions(), now_ms(), broker_loads())
    only_offline_dirs = request.GET.get("offline_log_dirs") == "true"
    if only_offline_dirs:
        rows = [r for r in rows if r.offline_dirs]
    only_state = request.GET.get("state", "")
    if only_state in STATE_BADGES:
        rows = [r for r in rows if r.state == only_state]
    else:
        only_state = ""
    ordered, sort = sorted_brokers(request, rows)
    return render_page(
        request,
        title="Brokers",
        section="brokers",
        fragment="frontend/partials/broker_list.html",
        context={
            "brokers": broker_table(ordered),
            "sort": sort,
            "only_offline_dirs": only_offline_dirs,
            "only_state": only_state,
            "bars": broker_bars(sorted(rows, key=lambda r: r.broker_id)),
        },
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
    loads = broker_loads()
    row = broker_row(broker, broker_sessions(), now_ms(), loads.get(broker_id))
    records = record_rows(broker_records(broker_id=broker_id, limit=RECORDS_LIMIT))
    hidden = hidden_topics(topic_visibility(request))
    replicas = partitions_on_broker(broker_id=broker_id, exclude_topics=hidden)
    # A fenced broker's replicas are all offline (the health index's model).
    offline = offline_partitions_on_broker(
        broker_id=broker_id, exclude_topics=hidden, fenced=broker.fenced
    )
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
            "records": record_table(records),
            "records_limit": RECORDS_LIMIT,
            "replica_counts": counts,
            "replicas": replica_table(broker_replica_rows(page.object_list, broker_id)),
            "page_obj": page,
            "offline_replicas": offline_replica_table(offline_rows[:OFFLINE_REPLICAS_LIMIT]),
            "offline_truncated": len(offline_rows) > OFFLINE_REPLICAS_LIMIT,
            "offline_limit": OFFLINE_REPLICAS_LIMIT,
            "offline_meaning": OFFLINE_REPLICAS_MEANING,
            "partitions_led_url": partitions_url(leader=str(broker_id)),
            "partitions_held_url": partitions_url(broker=str(broker_id)),
        },
    )


def incident_list_view(request: HttpRequest) -> HttpResponse:
    """The replica incidents are the timeline's incidents now (log dir failures with every
    partition's previous and new leader, and their resolution)."""
    params = {"incidents": "1"}
    broker = request.GET.get("broker", "")
    if broker.isdigit():
        params["broker"] = broker
    return HttpResponseRedirect(f"{reverse('frontend:timeline')}?{urlencode(params)}")

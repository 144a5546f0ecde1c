"""The topic pages: the topics with their health figures, one topic (its figures, its partitions
and their heatmap over the brokers, its actions), and the partitions of the whole cluster, filtered
as the API filters them (each health figure of the UI links here)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import urlencode

from frontend.tables.columns import sort_fields
from frontend.tables.partitions import PARTITION_COLUMNS, partition_table
from frontend.tables.topics import (
    TOPIC_COLUMNS,
    heatmap,
    partition_rows,
    topic_row,
    topic_rows,
    topic_table,
)
from frontend.views.base import (
    hidden_topics,
    paginate,
    principal_required,
    render_page,
    sorting,
    topic_visibility,
)
from replicas.filtersets import PartitionFilterSet
from replicas.selectors import (
    partition_list,
    partition_reassignments,
    replication_factors,
    topic_get,
    topic_id_list,
    topic_list,
)

TOPICS_PAGE_SIZE = 50
PARTITIONS_PAGE_SIZE = 100
PARTITION_SORTS = sort_fields(PARTITION_COLUMNS)
# The partition filters the pages offer (PartitionFilterSet's), as yes / no / any.
TRISTATE_FILTERS = (
    ("under_replicated", "Under-replicated"),
    ("under_min_isr", "Under min ISR"),
    ("at_min_isr", "At min ISR"),
    ("leaderless", "Leaderless"),
    ("preferred_leader", "On preferred leader"),
    ("offline", "Offline replicas"),
    ("reassigning", "Being reassigned"),
)
REASSIGNMENTS_SHOWN = 50  # the moves in progress a topic's page lists


@principal_required
def topic_list_view(request: HttpRequest) -> HttpResponse:
    # Filter, sort and page over the topics alone (joined to their health row to sort by a
    # figure), then read the page's topics with their figures: no partition is read.
    sort = sorting(request, sort_fields(TOPIC_COLUMNS), "name")
    hidden = hidden_topics(topic_visibility(request))
    topic_ids = topic_id_list(filters=request.GET or None, exclude=hidden, order_by=sort.order_by)
    page = paginate(request, topic_ids, TOPICS_PAGE_SIZE)
    ids = list(page.object_list)
    by_id = {t.topic_id: t for t in topic_list(topic_ids=ids)}
    topics = [by_id[i] for i in ids if i in by_id]
    return render_page(
        request,
        title="Topics",
        section="topics",
        fragment="frontend/partials/topic_list.html",
        context={
            "query": request.GET.get("q", ""),
            "topics": topic_table(topic_rows(topics, replication_factors(topic_ids=ids))),
            "hidden_count": len(hidden or ()),
            "page_obj": page,
            "sort": sort,
        },
    )


def _filters(filterset: PartitionFilterSet) -> dict[str, Any]:
    """The valid filter values, as the form shows them again."""
    values = filterset.form.cleaned_data if filterset.form.is_valid() else {}
    shown: dict[str, Any] = {name: _tristate(values.get(name)) for name, _ in TRISTATE_FILTERS}
    for name in ("broker", "leader"):
        shown[name] = "" if values.get(name) is None else int(values[name])
    shown["topic"] = values.get("topic") or ""
    return shown


def _tristate(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def _filtered(filters: dict[str, Any]) -> bool:
    return any(value not in (None, "") for value in filters.values())


def forbidden_topic(request: HttpRequest, name: str) -> HttpResponse:
    # As Kafka: an unauthorized principal is not told whether the topic exists.
    return render_page(
        request,
        title="Not authorized",
        section="topics",
        fragment="frontend/partials/forbidden.html",
        context={
            "message": f"Not authorized to describe topic {name}.",
            "requirement": "Viewing a topic needs DESCRIBE on the TOPIC resource.",
        },
        status=403,
    )


def _reassignments(topic: str) -> list[dict[str, Any]]:
    """The topic's partitions being reassigned (KIP-455), as ListPartitionReassignments
    answers them: read from the index of the moving partitions alone."""
    found = partition_reassignments(topics={topic: None})
    return found[0]["partitions"][: REASSIGNMENTS_SHOWN + 1] if found else []


def topic_filter_url(name: str, **filters: str) -> str:
    return f"{reverse('frontend:topic-detail', args=[name])}?{urlencode(filters)}"


@principal_required
def topic_detail_view(request: HttpRequest, name: str) -> HttpResponse:
    visible = topic_visibility(request)
    if visible is not None and not visible(name):
        return forbidden_topic(request, name)
    topic = topic_get(name=name)
    if topic is None:
        return render_page(
            request,
            title="Topic not found",
            section="topics",
            fragment="frontend/partials/not_found.html",
            context={"kind": "topic", "key": name},
            status=404,
        )
    data = request.GET.copy()
    data.pop("topic", None)  # the page's topic, not a filter
    sort = sorting(request, PARTITION_SORTS, "partition")
    # One topic: its name orders nothing (and joining it to order would cost a sort).
    order = tuple(f for f in sort.order_by if f.lstrip("-") != "topic__name")
    partitions = partition_list(topic_id=topic.topic_id).order_by(*order)
    filterset = PartitionFilterSet(data, queryset=partitions)
    page = paginate(request, filterset.qs, PARTITIONS_PAGE_SIZE)
    rows = partition_rows(page.object_list, topic_name=topic.name)
    filters = _filters(filterset)
    filters.pop("topic")
    return render_page(
        request,
        title=f"Topic {topic.name}",
        section="topics",
        fragment="frontend/partials/topic_detail.html",
        context={
            "topic": topic_row(
                topic, replication_factors(topic_ids=[topic.topic_id]).get(topic.topic_id)
            ),
            "partitions": partition_table(
                rows, elect_url=reverse("frontend:topic-elect", args=[topic.name])
            ),
            "heatmap": heatmap(rows),
            "reassignments": _reassignments(topic.name),
            "reassignments_shown": REASSIGNMENTS_SHOWN,
            "page_obj": page,
            "sort": sort,
            "filter_errors": filterset.errors,
            "filters": filters,
            "tristate_filters": TRISTATE_FILTERS,
            "filtered": _filtered(filters),
            "figure_urls": {
                "under_replicated": topic_filter_url(name, under_replicated="true"),
                "under_min_isr": topic_filter_url(name, under_min_isr="true"),
                "at_min_isr": topic_filter_url(name, at_min_isr="true"),
                "leaderless": topic_filter_url(name, leaderless="true"),
                "imbalanced": topic_filter_url(name, preferred_leader="false"),
                "offline": topic_filter_url(name, offline="true"),
                "reassigning": topic_filter_url(name, reassigning="true"),
            },
            "acl_url": f"{reverse('frontend:acl-list')}?"
            + urlencode(
                {
                    "resource_type": "TOPIC",
                    "resource_name": name,
                    "pattern_type": "MATCH",  # literal, prefixed and `*`: all that apply
                    "group": "resource",
                }
            ),
            "timeline_url": f"{reverse('frontend:timeline')}?{urlencode({'topic': name})}",
        },
    )


@principal_required
def partition_list_view(request: HttpRequest) -> HttpResponse:
    """Every partition of the cluster the principal may see, filtered as GET /api/v1/partitions
    filters (topic, broker, leader, and the health filters), paged in SQL."""
    sort = sorting(request, PARTITION_SORTS, "partition")
    hidden = hidden_topics(topic_visibility(request))
    partitions = partition_list().order_by(*sort.order_by)
    if hidden:
        partitions = partitions.exclude(topic__name__in=hidden)
    filterset = PartitionFilterSet(request.GET, queryset=partitions)
    # A topic name that contains the text, as the Topics page filters (`topic` stays the API's
    # exact name, which a topic's links use).
    contains = request.GET.get("topic_contains", "").strip()[:249]
    matching = filterset.qs.filter(topic__name__contains=contains) if contains else filterset.qs
    page = paginate(request, matching, PARTITIONS_PAGE_SIZE)
    filters = {**_filters(filterset), "topic_contains": contains}
    return render_page(
        request,
        title="Partitions",
        section="partitions",
        fragment="frontend/partials/partition_list.html",
        context={
            "hidden_topic_count": len(hidden or ()),
            "partitions": partition_table(partition_rows(page.object_list)),
            "page_obj": page,
            "sort": sort,
            "filters": filters,
            "tristate_filters": TRISTATE_FILTERS,
            "filter_errors": filterset.errors,
            "filtered": _filtered(filters),
        },
    )

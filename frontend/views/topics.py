"""The topic pages: the topics, and one topic's partitions."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from frontend.tables.topics import partition_rows, topic_row, topic_rows
from frontend.views.base import (
    hidden_topics,
    paginate,
    principal_required,
    render_page,
    topic_visibility,
)
from replicas.filtersets import PartitionFilterSet
from replicas.selectors import partition_list, topic_get, topic_id_list, topic_list

TOPICS_PAGE_SIZE = 50
PARTITIONS_PAGE_SIZE = 100


@principal_required
def topic_list_view(request: HttpRequest) -> HttpResponse:
    # Filter and page over the topics alone, then count partitions for that page only: the
    # aggregate joins just the page's partitions, whatever the size of the cluster.
    hidden = hidden_topics(topic_visibility(request))
    topic_ids = topic_id_list(filters=request.GET or None, exclude=hidden)
    page = paginate(request, topic_ids, TOPICS_PAGE_SIZE)
    topics = topic_list(topic_ids=page.object_list)
    return render_page(
        request,
        title="Topics",
        section="topics",
        fragment="frontend/partials/topic_list.html",
        context={
            "query": request.GET.get("q", ""),
            "topics": topic_rows(topics),
            "page_obj": page,
        },
    )


@principal_required
def topic_detail_view(request: HttpRequest, name: str) -> HttpResponse:
    visible = topic_visibility(request)
    if visible is not None and not visible(name):
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
    filterset = PartitionFilterSet(data, queryset=partition_list(topic_id=topic.topic_id))
    page = paginate(request, filterset.qs, PARTITIONS_PAGE_SIZE)
    filter_values = filterset.form.cleaned_data  # the valid ones; `.qs` validated the form
    return render_page(
        request,
        title=f"Topic {topic.name}",
        section="topics",
        fragment="frontend/partials/topic_detail.html",
        context={
            "topic": topic_row(topic),
            "partitions": partition_rows(page.object_list, topic_name=topic.name),
            "page_obj": page,
            "filter_errors": filterset.errors,
            "filters": {
                "leaderless": _tristate(filter_values.get("leaderless")),
                "offline": _tristate(filter_values.get("offline")),
                "broker": ""
                if filter_values.get("broker") is None
                else int(filter_values["broker"]),
            },
            "filtered": any(v not in (None, "") for v in filter_values.values()),
        },
    )


def _tristate(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")

"""The incident and event timeline: what the controller did and why, newest first, from the
metadata log (the timeline projection); filtered by kind, broker and topic; with the health
trends over the same hours; and one event with every partition it moved."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from controlplane.runtime.lease import now_ms
from frontend.forms.timeline import TimelineFilterForm
from frontend.tables.charts import trends_chart
from frontend.tables.timeline import event_rows, move_rows
from frontend.views.base import (
    hidden_topics,
    paginate,
    principal_required,
    render_page,
    topic_visibility,
)
from replicas.selectors import health_samples
from timeline.selectors import (
    timeline_event_get,
    timeline_event_list,
    timeline_move_list,
    timeline_move_previews,
    timeline_resolutions,
)

EVENTS_PAGE_SIZE = 25
MOVES_PREVIEW = 10
MOVES_PAGE_SIZE = 100
TREND_MINUTES = 180


@principal_required
def timeline_view(request: HttpRequest) -> HttpResponse:
    form = TimelineFilterForm(request.GET or None)
    hidden = hidden_topics(topic_visibility(request))
    events = timeline_event_list(**form.values(), hidden_topics=hidden)
    page = paginate(request, events, EVENTS_PAGE_SIZE)
    offsets = [event.offset for event in page.object_list]
    previews = timeline_move_previews(
        offsets=offsets, per_event=MOVES_PREVIEW, hidden_topics=hidden
    )
    resolutions = timeline_resolutions(offsets=offsets)
    now = now_ms()
    samples = health_samples(since_ms=now - TREND_MINUTES * 60_000)
    return render_page(
        request,
        title="Timeline",
        section="timeline",
        fragment="frontend/partials/timeline.html",
        context={
            "form": form,
            "filtered": form.active,
            "events": event_rows(page.object_list, previews, resolutions, hidden),
            "page_obj": page,
            "trends": trends_chart(samples, now_ms=now, minutes=TREND_MINUTES),
            "preview_size": MOVES_PREVIEW,
        },
    )


@principal_required
def timeline_event_view(request: HttpRequest, offset: int) -> HttpResponse:
    event = timeline_event_get(offset=offset)
    hidden = hidden_topics(topic_visibility(request))
    if (
        event is None
        or not timeline_event_list(hidden_topics=hidden).filter(offset=offset).exists()
    ):
        return render_page(
            request,
            title="Event not found",
            section="timeline",
            fragment="frontend/partials/not_found.html",
            context={"kind": "timeline event", "key": offset},
            status=404,
        )
    page = paginate(
        request, timeline_move_list(offset=offset, hidden_topics=hidden), MOVES_PAGE_SIZE
    )
    (row,) = event_rows([event], {}, timeline_resolutions(offsets=[offset]), hidden)
    return render_page(
        request,
        title=f"Timeline event at offset {offset}",
        section="timeline",
        fragment="frontend/partials/timeline_event.html",
        context={"event": row, "moves": move_rows(page.object_list), "page_obj": page},
    )

"""The global search: topics, brokers and principals whose names hold what was typed."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from brokers.selectors import broker_search
from frontend.views.base import hidden_topics, principal_required, render_page, topic_visibility
from replicas.selectors import topic_name_list
from security.selectors import principal_search

RESULTS_LIMIT = 20
QUERY_MAX = 249


@principal_required
def search_view(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:QUERY_MAX]
    topics: list[str] = []
    brokers = []
    principals: list[str] = []
    if query:
        hidden = hidden_topics(topic_visibility(request))
        topics = list(topic_name_list(exclude=hidden, contains=query)[: RESULTS_LIMIT + 1])
        brokers = broker_search(contains=query, limit=RESULTS_LIMIT)
        principals = principal_search(contains=query, limit=RESULTS_LIMIT)
    return render_page(
        request,
        title=f"Search: {query}" if query else "Search",
        section="search",
        fragment="frontend/partials/search.html",
        context={
            "query": query,
            "topics": topics[:RESULTS_LIMIT],
            "more_topics": len(topics) > RESULTS_LIMIT,
            "brokers": brokers,
            "principals": principals,
            "limit": RESULTS_LIMIT,
        },
    )

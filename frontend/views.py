"""The browser admin UI: server-rendered pages whose inner fragment refreshes itself.

Every page is `frontend/page.html` around one fragment template; `?partial=1` answers the
fragment alone (with the `X-UI-Fragment` header), which `ui.js` swaps in every 2 s.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import rotate_token
from django.shortcuts import render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from brokers.selectors import broker_list, broker_records, broker_sessions
from controlplane.authentication import SESSION_KEY
from controlplane.authz import is_authorized, require_cluster
from controlplane.controller.acls.bindings import AclOperation, ResourceType
from controlplane.controller.errors import ApiError
from controlplane.lease import now_ms
from controlplane.principals import AuthenticatedPrincipal, principal_by_id
from controlplane.selectors import cluster_summary
from frontend.forms import IncidentFilterForm, LoginForm
from frontend.tables import (
    STATE_BADGES,
    broker_replica_rows,
    broker_row,
    broker_rows,
    incident_rows,
    partition_rows,
    record_rows,
    topic_row,
    topic_rows,
)
from replicas.filtersets import PartitionFilterSet, TopicFilterSet
from replicas.models import Partition, Topic
from replicas.selectors import (
    offline_partitions_on_broker,
    partition_list,
    partitions_on_broker,
    replica_incidents,
    replication_summary,
    topic_get,
    topic_list,
)

HOME_URL = "/ui/"
PARTIAL_PARAM = "partial"
FRAGMENT_HEADER = "X-UI-Fragment"
RECORDS_LIMIT = 100
TOPICS_PAGE_SIZE = 50
PARTITIONS_PAGE_SIZE = 100
BROKER_REPLICAS_PAGE_SIZE = 50
OFFLINE_REPLICAS_LIMIT = 100
INCIDENTS_LIMIT = 200
INCIDENTS_PAGE_SIZE = 50
PAGE_PARAM = "page"

View = Callable[..., HttpResponse]


def is_partial(request: HttpRequest) -> bool:
    return request.GET.get(PARTIAL_PARAM) == "1"


def client_host(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "")


def session_principal(request: HttpRequest) -> AuthenticatedPrincipal | None:
    principal_id = request.session.get(SESSION_KEY)
    if not isinstance(principal_id, int):
        return None
    return principal_by_id(principal_id)


def render_page(
    request: HttpRequest,
    *,
    title: str,
    fragment: str,
    section: str = "",
    context: dict[str, Any] | None = None,
    status: int = 200,
) -> HttpResponse:
    """The whole page, or with `?partial=1` only its fragment."""
    full_context = {
        **(context or {}),
        "title": title,
        "section": section,
        "fragment_template": fragment,
        "principal": getattr(request, "principal", None),
        "rendered_at": dt.datetime.now(tz=dt.UTC),
    }
    if is_partial(request):
        response = render(request, fragment, full_context, status=status)
        response[FRAGMENT_HEADER] = "1"
        return response
    return render(request, "frontend/page.html", full_context, status=status)


def login_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when a principal is logged in (kept as `request.principal`); else where to log in."""
    principal = session_principal(request)
    if principal is None:
        if is_partial(request):
            return HttpResponse("Login required.", status=401, content_type="text/plain")
        return redirect_to_login(request.get_full_path(), login_url=settings.LOGIN_URL)
    request.principal = principal  # type: ignore[attr-defined]
    return None


def principal_required(view: View) -> View:
    """A logged-in principal allowed DESCRIBE on the cluster; login redirect or 403 otherwise."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        refusal = login_refusal(request)
        if refusal is not None:
            return refusal
        principal = request.principal  # type: ignore[attr-defined]
        try:
            require_cluster(principal, host=client_host(request), operation=AclOperation.DESCRIBE)
        except ApiError as error:
            return render_page(
                request,
                title="Not authorized",
                fragment="frontend/partials/forbidden.html",
                context={"message": error.message},
                status=403,
            )
        return view(request, *args, **kwargs)

    return never_cache(wrapped)


def paginate(request: HttpRequest, items: Any, per_page: int) -> Page:  # type: ignore[type-arg]
    """One page of a queryset (a count and a slice: two queries) or of a list."""
    return Paginator(items, per_page).get_page(request.GET.get(PAGE_PARAM))


# --- topic visibility -----------------------------------------------------------------------
def topic_visibility(request: HttpRequest) -> Callable[[str], bool] | None:
    """Whether the principal may DESCRIBE a topic (Kafka's TOPIC ACLs, as the API answers);
    None when it may describe every topic (a super user), so nothing needs filtering."""
    principal: AuthenticatedPrincipal = request.principal  # type: ignore[attr-defined]
    if principal.is_super:
        return None
    host = client_host(request)

    def visible(name: str) -> bool:
        return is_authorized(
            principal,
            host=host,
            operation=AclOperation.DESCRIBE,
            resource_type=ResourceType.TOPIC,
            resource_name=name,
        )

    return visible


def hidden_topics(visible: Callable[[str], bool] | None) -> list[str] | None:
    """Names of the topics the principal may not describe (one query), None if it may all."""
    if visible is None:
        return None
    hidden = [name for name in Topic.objects.values_list("name", flat=True) if not visible(name)]
    return hidden or None


# --- login / logout -------------------------------------------------------------------------
def _safe_next(request: HttpRequest, candidate: str) -> str:
    if candidate and url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return candidate
    return ""


@sensitive_post_parameters("token")
@csrf_protect
@never_cache
@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    next_url = _safe_next(request, request.POST.get("next") or request.GET.get("next") or "")
    form = LoginForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        principal = form.principal
        assert principal is not None
        if request.session.get(SESSION_KEY) not in (None, principal.id):
            request.session.flush()
        else:
            request.session.cycle_key()
        request.session[SESSION_KEY] = principal.id
        rotate_token(request)
        return HttpResponseRedirect(next_url or HOME_URL)
    return render(
        request,
        "frontend/login.html",
        {"form": form, "next": next_url, "title": "Log in"},
    )


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    request.session.flush()
    return HttpResponseRedirect(settings.LOGIN_URL)


# --- pages ----------------------------------------------------------------------------------
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
    broker = broker_list().filter(broker_id=broker_id).first()
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
    replicas: QuerySet[Partition] = partitions_on_broker(broker_id=broker_id)
    offline: QuerySet[Partition] = offline_partitions_on_broker(broker_id=broker_id)
    hidden = hidden_topics(topic_visibility(request))
    if hidden is not None:
        replicas = replicas.exclude(topic__name__in=hidden)
        offline = offline.exclude(topic__name__in=hidden)
    counts = replicas.aggregate(
        total=Count("id"),
        leaders=Count("id", filter=Q(leader=broker_id)),
    )
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
def topic_list_view(request: HttpRequest) -> HttpResponse:
    # Filter and page over the topics alone, then count partitions for that page only: the
    # aggregate joins just the page's partitions, whatever the size of the cluster.
    names: QuerySet[Topic] = Topic.objects.order_by("name")
    hidden = hidden_topics(topic_visibility(request))
    if hidden is not None:
        names = names.exclude(name__in=hidden)
    filterset = TopicFilterSet(request.GET or None, queryset=names)
    page = paginate(request, filterset.qs.values_list("topic_id", flat=True), TOPICS_PAGE_SIZE)
    topics = topic_list().filter(topic_id__in=list(page.object_list))
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
    filterset = PartitionFilterSet(data, queryset=partition_list().filter(topic_id=topic.topic_id))
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

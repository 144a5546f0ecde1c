"""The MirrorMaker 2 pages (KIP-710): the flows (a picture of clusters and flows with their
health, and the table of flows), one flow (nodes, leader, worker ids, REST URLs, connectors and
tasks, replicated topics and why, lagging topics, the configuration with its references shown
as references), pausing or resuming a flow through the API, and the editor of the configuration
(its text, validated as the API validates it, a diff, then AlterMirrorConfig through the API).
A flow that only emits heartbeats (`A->B.enabled` false) is drawn as disabled, never as down."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.errors import Errors
from controlplane.controller.mirror.config import (
    MirrorConfigError,
    is_sensitive,
    mirror_config_parse,
)
from controlplane.controller.mirror.properties import PropertiesError, parse_properties
from controlplane.controller.mirror.references import is_single_reference
from controlplane.controller.records import NO_OFFSET
from controlplane.runtime.lease import now_ms
from frontend.forms.mirror import MirrorConfigApplyForm, MirrorConfigForm
from frontend.tables.common import KafkaProblem
from frontend.tables.mirror import (
    config_rows,
    flow_picture,
    flow_row,
    flow_table,
    mirrored_topic_table,
    node_table,
)
from frontend.views.base import (
    forbidden,
    login_required,
    may,
    principal_required,
    render_admin,
    render_page,
    result_page,
)
from frontend.writes import answer_problems, malformed, refusal_status, rpc_call
from mirror.selectors import mirror_config_get, mirror_flow_page, mirror_overview

ACTIONS = {"pause": "PAUSED", "resume": "STARTED"}
# A flow whose `enabled` is false runs only the heartbeat connector (Kafka's clusterPairs keep it
# for `emit.heartbeats.enabled`): nothing to replicate, so neither healthy nor down.
DISABLED = "disabled"
DISABLED_TEXT = "disabled (heartbeats only)"
DISABLED_COLOUR = "#8a94a0"


def disabled_flow(flow: dict[str, Any]) -> dict[str, Any]:
    """A flow row as shown: a heartbeats-only flow's health is "disabled", whatever its
    connectors' states (nobody is assigned a flow that replicates nothing)."""
    if flow.get("enabled", True):
        return flow
    return {
        **flow,
        "health": DISABLED,
        "health_text": DISABLED_TEXT,
        "health_badge": "badge-muted",
    }


def picture_with_disabled(
    picture: dict[str, Any], flows: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The flows' picture with each heartbeats-only flow drawn grey, dotted and labelled
    disabled, and "disabled" in the legend."""
    disabled = {f["name"] for f in flows if not f.get("enabled", True)}
    arrows = [
        {**a, "health": DISABLED, "health_text": DISABLED_TEXT, "colour": DISABLED_COLOUR}
        if a["name"] in disabled
        else a
        for a in picture["arrows"]
    ]
    colours = {**picture["colours"], DISABLED: DISABLED_COLOUR}
    return {**picture, "arrows": arrows, "colours": colours}


@principal_required
def flow_list_view(request: HttpRequest) -> HttpResponse:
    overview = mirror_overview()
    now = now_ms()
    return render_page(
        request,
        title="Mirror flows",
        section="mirror",
        fragment="frontend/partials/mirror_flows.html",
        context={
            **overview,
            "flows": flow_table([disabled_flow(flow_row(f, now)) for f in overview["flows"]]),
            "picture": picture_with_disabled(
                flow_picture(overview["clusters"], overview["flows"]), overview["flows"]
            ),
            "may_edit_config": may_describe_mirror_config(request),
        },
    )


@principal_required
def flow_detail_view(request: HttpRequest, source: str, target: str) -> HttpResponse:
    page = mirror_flow_page(source=source, target=target)
    if page is None:
        return render_page(
            request,
            title="Flow not found",
            section="mirror",
            fragment="frontend/partials/mirror_not_found.html",
            context={"key": f"{source}->{target}"},
            status=404,
        )
    flow = disabled_flow(flow_row(page["flow"], now_ms()))
    return render_page(
        request,
        title=f"Flow {source}->{target}",
        section="mirror",
        fragment="frontend/partials/mirror_flow.html",
        context={
            "flow": flow,
            "nodes": node_table(flow),
            "topics": mirrored_topic_table(flow),
            "connector_configs": {
                name: config_rows(config) for name, config in page["connector_configs"].items()
            },
            "worker_config": config_rows(page["worker_config"]),
        },
    )


@require_POST
@login_required
def flow_state_view(request: HttpRequest, source: str, target: str, action: str) -> HttpResponse:
    """Pause or resume every connector of the flow: the API's AlterMirrorTargetState, run as
    the logged-in principal (authorized and audited as the API does)."""
    back = reverse("frontend:mirror-flow", args=[source, target])
    state = ACTIONS.get(action)
    body = {"source": source, "target": target, "state": state or action, "connectors": []}
    answer = rpc_call(request, "AlterMirrorTargetState", body)
    problems = answer_problems(answer)
    if problems:
        return result_page(
            request,
            title=f"Flow {source}->{target} not changed",
            section="mirror",
            problems=problems,
            back_url=back,
            status=refusal_status(answer, problems),
        )
    done = "paused" if state == "PAUSED" else "resumed"
    messages.success(request, f"Flow {source}->{target} {done}.")
    return HttpResponseRedirect(back)


# --- the configuration editor -------------------------------------------------------------------
CONFIG_REQUIREMENT = (
    "The MirrorMaker configuration is read with DESCRIBE on the CLUSTER (GET "
    "/api/v1/mirror/config) and stored with ALTER on the CLUSTER (PUT)."
)
SECRET_SHOWN = "(secret)"


def may_describe_mirror_config(request: HttpRequest) -> bool:
    return may(request, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)


@dataclasses.dataclass(frozen=True, slots=True)
class KeyChange:
    """One key of the properties the new text adds, removes or changes."""

    key: str
    kind: str  # added, removed, changed
    old: str | None
    new: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # add, del, hunk, context
    text: str


def _shown(key: str, value: str | None) -> str | None:
    """A value as the diff shows it: a secret only as its provider reference (a literal one is
    refused by validation, but a stored text may predate that)."""
    if value is None or not is_sensitive(key) or is_single_reference(value):
        return value
    return SECRET_SHOWN


def _properties(text: str) -> dict[str, str]:
    try:
        return parse_properties(text).values
    except PropertiesError:
        return {}


def key_changes(old_text: str, new_text: str) -> list[KeyChange]:
    """The keys the new text adds, removes or changes (as properties: a moved line or a
    reformatted continuation is no change), in the new text's order, then the removed."""
    old, new = _properties(old_text), _properties(new_text)
    changes = [
        KeyChange(
            key,
            "added" if key not in old else "changed",
            _shown(key, old.get(key)),
            _shown(key, value),
        )
        for key, value in new.items()
        if old.get(key) != value
    ]
    changes += [
        KeyChange(key, "removed", _shown(key, value), None)
        for key, value in old.items()
        if key not in new
    ]
    return changes


def line_diff(old_text: str, new_text: str) -> list[DiffLine]:
    """The text's unified line diff (three lines of context), as lines classed for colour."""
    lines = []
    for line in difflib.unified_diff(
        old_text.splitlines(), new_text.splitlines(), "stored", "new", n=3, lineterm=""
    ):
        if line.startswith(("---", "+++")):
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "context")
        lines.append(DiffLine(kind, line))
    return lines


def config_problems(text: str) -> list[KafkaProblem]:
    """The text's problems as the API refuses them (AlterMirrorConfig validates with the same
    parser before anything reaches the controller): INVALID_CONFIG, one line per bad key."""
    try:
        mirror_config_parse(text)
    except MirrorConfigError as error:
        code = Errors.INVALID_CONFIG
        return [
            KafkaProblem(error_code=int(code), error=code.name, message=problem)
            for problem in error.problems
        ]
    return []


def _stored() -> tuple[str, int]:
    stored = mirror_config_get()
    return stored if stored is not None else ("", NO_OFFSET)


def config_editor_page(
    request: HttpRequest,
    form: MirrorConfigForm,
    *,
    problems: Sequence[KafkaProblem] = (),
    status: int = 200,
) -> HttpResponse:
    offset = _stored()[1]
    return render_admin(
        request,
        title="Edit the MirrorMaker configuration",
        section="mirror",
        fragment="frontend/partials/mirror_config_edit.html",
        context={
            "form": form,
            "problems": list(problems),
            "stored": offset != NO_OFFSET,
            "offset": offset,
        },
        status=status,
        refresh=False,
    )


def config_review_page(
    request: HttpRequest,
    text: str,
    *,
    problems: Sequence[KafkaProblem] = (),
    warning: str = "",
    status: int = 200,
) -> HttpResponse:
    """The diff of the stored text and the new one, and the button that stores exactly it."""
    stored_text, offset = _stored()
    apply_form = MirrorConfigApplyForm(initial={"text": text, "base_offset": offset})
    return render_admin(
        request,
        title="Confirm the MirrorMaker configuration",
        section="mirror",
        fragment="frontend/partials/mirror_config_confirm.html",
        context={
            "form": apply_form,
            "edit_form": MirrorConfigForm(initial={"text": text}),
            "keys": key_changes(stored_text, text),
            "lines": line_diff(stored_text, text),
            "unchanged": stored_text == text,
            "stored": offset != NO_OFFSET,
            "problems": list(problems),
            "warning": warning,
        },
        status=status,
    )


@sensitive_post_parameters()
@principal_required
@require_http_methods(["GET", "POST"])
def mirror_config_view(request: HttpRequest) -> HttpResponse:
    """The editor (GET: the stored text) and its review (POST: the text validated as the API
    validates it, then its diff; nothing is stored before the confirmation)."""
    if not may_describe_mirror_config(request):
        return forbidden(
            request,
            section="mirror",
            message="Not authorized to describe the MirrorMaker configuration.",
            requirement=CONFIG_REQUIREMENT,
        )
    if request.method == "GET":
        return config_editor_page(request, MirrorConfigForm(initial={"text": _stored()[0]}))
    form = MirrorConfigForm(request.POST)
    if not form.is_valid():
        return config_editor_page(request, form, status=400)
    text = form.cleaned_data["text"]
    if request.GET.get("edit"):  # back from the review to the text, as it was typed
        return config_editor_page(request, form)
    problems = config_problems(text)
    if problems:
        return config_editor_page(request, form, problems=problems)
    return config_review_page(request, text)


@sensitive_post_parameters()
@require_POST
@login_required
def mirror_config_apply_view(request: HttpRequest) -> HttpResponse:
    """AlterMirrorConfig with the confirmed text, through the API's RPC (authorized, validated
    and audited as PUT /api/v1/mirror/config)."""
    back = reverse("frontend:mirror-config")
    form = MirrorConfigApplyForm(request.POST)
    if not form.is_valid():
        return result_page(
            request,
            title="Configuration not stored",
            section="mirror",
            problems=malformed("The confirmed configuration is malformed; edit it again."),
            back_url=back,
            status=400,
        )
    text: str = form.cleaned_data["text"]
    # Only a principal that may read the configuration is shown it again (a stale diff, its
    # errors); any other one's request still goes to the API, which refuses and audits it.
    readable = may_describe_mirror_config(request)
    if readable and form.cleaned_data["base_offset"] != _stored()[1]:
        return config_review_page(
            request,
            text,
            warning="The configuration changed since this diff was made: check it again.",
            status=409,
        )
    answer = rpc_call(request, "AlterMirrorConfig", {"text": text})
    problems = answer_problems(answer)
    if not problems:
        messages.success(request, "Stored the MirrorMaker configuration.")
        return HttpResponseRedirect(reverse("frontend:mirror-flows"))
    status = refusal_status(answer, problems)
    if not readable:
        return result_page(
            request,
            title="Configuration not stored",
            section="mirror",
            problems=problems,
            back_url=reverse("frontend:mirror-flows"),
            status=status,
        )
    return config_review_page(request, text, problems=problems, status=status)

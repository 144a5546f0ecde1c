"""The config pages (KIP-590's admin APIs): a topic's, a broker's and the cluster default's
configs as DescribeConfigs answers them, their edit form, the diff, and IncrementalAlterConfigs
through the API."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib import messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.crypto import salted_hmac
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods, require_POST

from brokers.selectors import broker_exists, broker_id_list
from configs.selectors import configs_describe
from controlplane.controller.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from controlplane.controller.config_schema import (
    BROKER,
    BROKER_CONFIGS,
    CLUSTER_DEFAULT,
    REDACTED,
    TOPIC,
    TOPIC_CONFIGS,
    ConfigDef,
)
from controlplane.controller.configs.describe import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    STATIC_BROKER_CONFIG,
)
from controlplane.controller.errors import ApiError
from controlplane.selectors import StoredConfigs, configs_stored
from frontend.forms.configs import ConfigApplyForm, ConfigEditForm, encode_changes
from frontend.tables.common import KafkaProblem
from frontend.tables.configs import (
    NOT_SET,
    ConfigChange,
    ConfigRow,
    broker_config_table,
    config_row,
    config_table,
    topic_config_table,
)
from frontend.tables.units import bytes_text, duration_text
from frontend.views.base import (
    forbidden,
    hidden_topics,
    login_required,
    may,
    paginate,
    principal_required,
    render_admin,
    result_page,
    topic_visibility,
)
from frontend.views.topics import TOPICS_PAGE_SIZE
from frontend.writes import answer_problems, malformed, refusal_status, rpc_call
from replicas.models import Partition
from replicas.selectors import (
    partition_list,
    partitions_on_broker,
    topic_exists,
    topic_get,
    topic_name_list,
)

TOPIC_KIND, BROKER_KIND, DEFAULT_KIND = "topic", "broker", "default"
OWN_SOURCES = {
    TOPIC_KIND: DYNAMIC_TOPIC_CONFIG,
    BROKER_KIND: DYNAMIC_BROKER_CONFIG,
    DEFAULT_KIND: DYNAMIC_DEFAULT_BROKER_CONFIG,
}
# Kafka describes the cluster default (BROKER "") with only the keys set at that level. Its page
# lists every key as a broker without overrides of its own sees it (the cluster default, then
# static, then default): described as a broker that cannot exist.
BROKER_WITHOUT_OVERRIDES = "-1"
INT32_MAX = 2**31 - 1  # broker ids are Kafka's int32
CONFIG_REQUIREMENT = (
    "Viewing configs needs DESCRIBE_CONFIGS on the TOPIC (a topic's) or on the CLUSTER "
    "(a broker's and the cluster default)."
)


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigTarget:
    """A resource whose configs a page shows: a topic, a broker, or the cluster default."""

    kind: str
    resource_name: str  # the topic, the broker id, or "" for the cluster default

    @property
    def resource_type(self) -> str:
        return TOPIC if self.kind == TOPIC_KIND else BROKER

    @property
    def own_source(self) -> str:
        return OWN_SOURCES[self.kind]

    @property
    def definitions(self) -> dict[str, ConfigDef]:
        return TOPIC_CONFIGS if self.kind == TOPIC_KIND else BROKER_CONFIGS

    @property
    def label(self) -> str:
        if self.kind == DEFAULT_KIND:
            return "the cluster default"
        return f"{self.kind} {self.resource_name}"

    @property
    def acl_resource(self) -> tuple[ResourceType, str]:
        if self.kind == TOPIC_KIND:
            return ResourceType.TOPIC, self.resource_name
        return ResourceType.CLUSTER, CLUSTER_NAME

    def url(self, step: str = "") -> str:
        kwargs: dict[str, Any] = {}
        if self.kind == TOPIC_KIND:
            kwargs = {"name": self.resource_name}
        elif self.kind == BROKER_KIND:
            kwargs = {"broker_id": int(self.resource_name)}
        name = f"frontend:{self.kind}-config" + (f"-{step}" if step else "")
        return reverse(name, kwargs=kwargs)

    @property
    def edit_url(self) -> str:
        return self.url("edit")

    @property
    def apply_url(self) -> str:
        return self.url("apply")


def config_target(kind: str, name: str = "", broker_id: int | None = None) -> ConfigTarget:
    if kind == TOPIC_KIND:
        return ConfigTarget(kind, name)
    if kind == BROKER_KIND:
        return ConfigTarget(kind, str(broker_id))
    return ConfigTarget(DEFAULT_KIND, CLUSTER_DEFAULT)


def stored_configs(target: ConfigTarget) -> StoredConfigs:
    return configs_stored(resources=[(target.resource_type, target.resource_name)])


def described_configs(target: ConfigTarget, stored: StoredConfigs) -> list[ConfigRow]:
    """Every key of the target as DescribeConfigs answers it (the API's own selector)."""
    name = BROKER_WITHOUT_OVERRIDES if target.kind == DEFAULT_KIND else target.resource_name
    entries = configs_describe(
        resource_type=target.resource_type,
        resource_name=name,
        stored=stored,
        include_synonyms=True,
        include_documentation=True,
    )
    return [
        config_row(
            entry,
            own_source=target.own_source,
            default=target.definitions[entry["name"]].default,
        )
        for entry in entries
    ]


def config_fingerprint(target: ConfigTarget, stored: StoredConfigs) -> str:
    """A keyed digest of the target's own dynamic configs: the diff was computed from them.
    Keyed, because a secret's digest goes into the page."""
    own = sorted(stored.get((target.resource_type, target.resource_name), {}).items())
    return salted_hmac("frontend.config-diff", json.dumps(own)).hexdigest()


def config_target_exists(target: ConfigTarget) -> bool:
    if target.kind == TOPIC_KIND:
        return topic_exists(name=target.resource_name)
    if target.kind == BROKER_KIND:
        broker_id = int(target.resource_name)
        return 0 <= broker_id <= INT32_MAX and broker_exists(broker_id=broker_id)
    return True


# --- the effective diff and what a change does -------------------------------------------------
SOURCE_LABELS = {
    DEFAULT_CONFIG: "default",
    STATIC_BROKER_CONFIG: "static broker config",
    DYNAMIC_DEFAULT_BROKER_CONFIG: "cluster default",
    DYNAMIC_BROKER_CONFIG: "broker",
    DYNAMIC_TOPIC_CONFIG: "topic",
}
DANGER, WARN, INFO = "danger", "warn", "info"
UNLIMITED = -1  # retention.ms / retention.bytes: keep everything


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveValue:
    """A key's value as a client of the resource sees it, and where it comes from."""

    value: str
    source: str

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)


@dataclasses.dataclass(frozen=True, slots=True)
class Consequence:
    """What applying a change does beyond the value: deleted data, refused producers..."""

    name: str
    severity: str  # danger, warn or info
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class EffectiveChange:
    """One row of the diff: the effective value before → after, and the operation asked."""

    name: str
    operation: str
    before: EffectiveValue
    after: EffectiveValue
    sensitive: bool

    @property
    def deletes(self) -> bool:
        return self.operation == "DELETE"


def effective_diff(
    target: ConfigTarget, changes: Sequence[ConfigChange], rows: Mapping[str, ConfigRow]
) -> list[EffectiveChange]:
    """Per change, what the resource uses now (its own value, else the cluster default's, the
    static broker config's or the default, as DescribeConfigs resolves it) and what it will use
    (the value set, or for a DELETE what the key then falls back to). Secrets stay hidden."""
    diff = []
    for change in changes:
        row = rows.get(change.name)
        if row is None:  # a key the registry does not know: the API will say so
            before = EffectiveValue(NOT_SET, "")
            fallback = EffectiveValue(NOT_SET, "")
            sensitive = False
        else:
            sensitive = row.sensitive
            before = EffectiveValue(row.value, row.source)
            fallback = EffectiveValue(row.inherited, row.inherited_source)
        if change.operation == "DELETE":
            after = fallback
        else:
            shown = REDACTED if sensitive else str(change.value)
            after = EffectiveValue(shown, target.own_source)
        diff.append(EffectiveChange(change.name, change.operation, before, after, sensitive))
    return diff


def _parsed(target: ConfigTarget, name: str, value: str) -> Any:
    """The typed value, or None when there is none to compare (not set, redacted, invalid)."""
    definition = target.definitions.get(name)
    if definition is None or value in (NOT_SET, REDACTED):
        return None
    try:
        return definition.parse(value)
    except ApiError:
        return None


def _policies(value: Any) -> set[str]:
    items = value if isinstance(value, list | tuple | set | frozenset) else str(value).split(",")
    return {str(item).strip() for item in items if str(item).strip()}


def _topic_key(target: ConfigTarget, name: str) -> str:
    """The topic config a key is (a broker's `log.retention.ms` is the topics' `retention.ms`)."""
    if target.kind == TOPIC_KIND:
        return name
    for topic_name, definition in TOPIC_CONFIGS.items():
        if definition.synonym == name:
            return topic_name
    return name


def _scope(target: ConfigTarget, topic_key: str) -> str:
    """Which data a value at the target's level governs, in words."""
    if target.kind == TOPIC_KIND:
        return f"every partition of topic {target.resource_name}"
    if target.kind == BROKER_KIND:
        return (
            f"broker {target.resource_name}'s replicas of every topic without its own {topic_key}"
        )
    return f"every topic without its own {topic_key}"


def _partition_scope(target: ConfigTarget, topic_key: str) -> str:
    """Which partitions a value at the target's level governs, after "partitions"."""
    if target.kind == TOPIC_KIND:
        return f"of topic {target.resource_name}"
    if target.kind == BROKER_KIND:
        return f"led by broker {target.resource_name} (topics without their own {topic_key})"
    return f"of the topics without their own {topic_key}"


def _governed_partitions(target: ConfigTarget) -> QuerySet[Partition]:
    """The partitions whose leader applies the target's value (a topic's own partitions; for a
    broker, those it leads; for the cluster default, all), before topic overrides."""
    if target.kind == TOPIC_KIND:
        topic = topic_get(name=target.resource_name)
        if topic is None:
            return partition_list().none()
        return partition_list(topic_id=topic.topic_id)
    if target.kind == BROKER_KIND:
        broker_id = int(target.resource_name)
        return partitions_on_broker(broker_id=broker_id).filter(leader=broker_id)
    return partition_list()


def partitions_below(target: ConfigTarget, topic_key: str, minimum: int) -> tuple[int, int]:
    """(partitions whose ISR is smaller than `minimum`, partitions with fewer replicas than
    `minimum`) among those the target's value governs: one query, then one for the overrides
    of the few topics concerned (a topic's own value is not the target's to change)."""
    partitions = _governed_partitions(target)
    short = partitions.filter(Q(isr_count__lt=minimum) | Q(replica_count__lt=minimum))
    if target.kind == TOPIC_KIND:
        counts = short.aggregate(
            isr=Count("id", filter=Q(isr_count__lt=minimum)),
            rf=Count("id", filter=Q(replica_count__lt=minimum)),
        )
        return int(counts["isr"]), int(counts["rf"])
    rows = list(short.values_list("topic__name", "isr_count", "replica_count"))
    names = sorted({name for name, _, _ in rows})
    stored = configs_stored(resources=[(TOPIC, name) for name in names]) if names else {}
    governed = [
        (isr, rf) for name, isr, rf in rows if topic_key not in stored.get((TOPIC, name), {})
    ]
    return (
        sum(1 for isr, _ in governed if isr < minimum),
        sum(1 for _, rf in governed if rf < minimum),
    )


def _retention_text(name: str, value: Any) -> str:
    return duration_text(int(value)) if name.endswith(".ms") else bytes_text(int(value))


def config_consequences(target: ConfigTarget, diff: Sequence[EffectiveChange]) -> list[Consequence]:
    """What each change does to data and clients, beyond its value: shortened retention
    deletes data, a raised min.insync.replicas refuses acks=all producers where the ISR (or the
    replication factor) is smaller, a cleanup policy change alters what is kept, unclean leader
    election can lose acknowledged records."""
    found: list[Consequence] = []
    for change in diff:
        if change.sensitive:
            continue
        key = _topic_key(target, change.name)
        old = _parsed(target, change.name, change.before.value)
        new = _parsed(target, change.name, change.after.value)
        if old is None or new is None or old == new:
            continue
        if key in ("retention.ms", "retention.bytes"):
            shorter = new != UNLIMITED and (old == UNLIMITED or new < old)
            if shorter:
                bound = _retention_text(key, new)
                before = "unlimited" if old == UNLIMITED else _retention_text(key, old)
                what = (
                    f"data older than {bound}"
                    if key == "retention.ms"
                    else f"the oldest data beyond {bound} per partition"
                )
                found.append(
                    Consequence(
                        change.name,
                        DANGER,
                        f"Shortening {change.name} from {before} to {bound} permanently deletes "
                        f"{what} in {_scope(target, key)}, at the next retention check. It "
                        "cannot be undone.",
                    )
                )
        elif key == "min.insync.replicas" and new > old:
            below_isr, below_rf = partitions_below(target, key, int(new))
            if below_isr or below_rf:
                scope = _partition_scope(target, key)
                plural = below_isr != 1
                parts = [
                    f"{below_isr} partition{'s' if plural else ''} {scope} "
                    f"ha{'ve' if plural else 's'} fewer than {new} in-sync replicas now"
                ]
                if below_rf:
                    parts.append(
                        f"{below_rf} ha{'ve' if below_rf != 1 else 's'} fewer than {new} "
                        "replicas at all (replication factor), so never will"
                    )
                found.append(
                    Consequence(
                        change.name,
                        WARN,
                        f"Raising {change.name} from {old} to {new}: {'; '.join(parts)}. "
                        "Producers with acks=all are refused there (NOT_ENOUGH_REPLICAS).",
                    )
                )
            else:
                found.append(
                    Consequence(
                        change.name,
                        INFO,
                        f"Every partition {_partition_scope(target, key)} has at least {new} "
                        "in-sync replicas now; producers with acks=all are refused on a partition "
                        f"whose ISR later shrinks below {new}.",
                    )
                )
        elif key == "cleanup.policy":
            found.append(Consequence(change.name, WARN, _policy_text(change.name, old, new)))
        elif key == "unclean.leader.election.enable" and new is True:
            found.append(
                Consequence(
                    change.name,
                    DANGER,
                    f"With {change.name}=true, a replica outside the ISR may become leader when "
                    f"no in-sync replica is left, in {_scope(target, key)}: the acknowledged "
                    "records it lacks are lost.",
                )
            )
    return found


def _policy_text(name: str, old: Any, new: Any) -> str:
    before, after = _policies(old), _policies(new)
    said = [f"{name} changes from {','.join(sorted(before))} to {','.join(sorted(after))}:"]
    if "compact" in after and "compact" not in before:
        said.append(
            "compaction keeps only the latest record of each key (older values are removed) "
            "and records without a key are refused;"
        )
    if "compact" in before and "compact" not in after:
        said.append("keys are no longer compacted;")
    if "delete" in after and "delete" not in before:
        said.append(
            "segments beyond retention.ms and retention.bytes are deleted, latest values "
            "of keys included;"
        )
    if "delete" in before and "delete" not in after:
        said.append("retention.ms and retention.bytes no longer delete anything: the log grows;")
    return " ".join(said).rstrip(";") + "."


def config_read_refusal(request: HttpRequest, target: ConfigTarget) -> HttpResponse | None:
    """403 unless the principal may DESCRIBE_CONFIGS the target (checked before existence: an
    unauthorized principal is not told whether a topic exists, as in Kafka)."""
    if may(request, AclOperation.DESCRIBE_CONFIGS, *target.acl_resource):
        return None
    return forbidden(
        request,
        section="configs",
        message=f"Not authorized to describe the configs of {target.label}.",
        requirement=CONFIG_REQUIREMENT,
    )


def config_missing(request: HttpRequest, target: ConfigTarget) -> HttpResponse:
    return render_admin(
        request,
        title=f"{target.kind.capitalize()} not found",
        section="configs",
        fragment="frontend/partials/not_found.html",
        context={"kind": target.kind, "key": target.resource_name},
        status=404,
    )


@principal_required
def config_index_view(request: HttpRequest) -> HttpResponse:
    hidden = hidden_topics(topic_visibility(request))
    query = request.GET.get("q", "")[:249]
    names = topic_name_list(exclude=hidden, contains=query)
    page = paginate(request, names, TOPICS_PAGE_SIZE)
    cluster_readable = may(
        request, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME
    )
    brokers = broker_id_list() if cluster_readable else []
    return render_admin(
        request,
        title="Configs",
        section="configs",
        fragment="frontend/partials/config_index.html",
        context={
            "cluster_readable": cluster_readable,
            "broker_configs": broker_config_table(brokers),
            "topics": topic_config_table(list(page.object_list)),
            "page_obj": page,
            "query": query,
        },
    )


@principal_required
def config_detail_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    target = config_target(kind, name, broker_id)
    refusal = config_read_refusal(request, target)
    if refusal is not None:
        return refusal
    if not config_target_exists(target):
        return config_missing(request, target)
    return render_admin(
        request,
        title=f"Configs of {target.label}",
        section="configs",
        fragment="frontend/partials/config_detail.html",
        context={
            "target": target,
            "rows": config_table(described_configs(target, stored_configs(target))),
        },
    )


@sensitive_post_parameters()
@principal_required
@require_http_methods(["GET", "POST"])
def config_edit_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    """The edit form (GET), and its diff (POST): what would change, before anything does."""
    target = config_target(kind, name, broker_id)
    refusal = config_read_refusal(request, target)
    if refusal is not None:
        return refusal
    if not config_target_exists(target):
        return config_missing(request, target)
    stored = stored_configs(target)
    rows = described_configs(target, stored)
    data = request.POST if request.method == "POST" else None
    form = ConfigEditForm(rows, target.definitions, data)
    if data is not None and form.is_valid():
        return config_confirm_page(request, target, form.changes, rows, stored)
    return render_admin(
        request,
        title=f"Edit the configs of {target.label}",
        section="configs",
        fragment="frontend/partials/config_edit.html",
        context={"target": target, "form": form, "edit_rows": form.edit_rows()},
        refresh=False,
    )


def config_confirm_page(
    request: HttpRequest,
    target: ConfigTarget,
    changes: list[ConfigChange],
    rows: list[ConfigRow],
    stored: StoredConfigs,
    *,
    problems: list[KafkaProblem] | None = None,
    warning: str = "",
    status: int = 200,
) -> HttpResponse:
    """The diff of effective values, what the changes do, and the button that applies exactly
    them."""
    diff = effective_diff(target, changes, {row.name: row for row in rows})
    form = ConfigApplyForm(
        initial={
            "changes": encode_changes(changes),
            "fingerprint": config_fingerprint(target, stored),
        }
    )
    return render_admin(
        request,
        title=f"Confirm the config changes of {target.label}",
        section="configs",
        fragment="frontend/partials/config_confirm.html",
        context={
            "target": target,
            "diff": diff,
            "consequences": config_consequences(target, diff),
            "form": form,
            "problems": problems or [],
            "warning": warning,
        },
        status=status,
    )


@sensitive_post_parameters()
@require_POST
@login_required
def config_apply_view(
    request: HttpRequest, kind: str, name: str = "", broker_id: int | None = None
) -> HttpResponse:
    """IncrementalAlterConfigs with the confirmed changes, through the API."""
    target = config_target(kind, name, broker_id)
    form = ConfigApplyForm(request.POST)
    if not form.is_valid():
        return result_page(
            request,
            title="Configs not changed",
            section="configs",
            problems=malformed("The confirmed changes are malformed; edit the configs again."),
            back_url=target.edit_url,
            status=400,
        )
    changes: list[ConfigChange] = form.cleaned_data["changes"]
    # Only a principal that may read the configs is shown them again (a stale diff, errors);
    # any other one's request still goes to the API, which refuses and audits it.
    readable = may(request, AclOperation.DESCRIBE_CONFIGS, *target.acl_resource)
    if readable:
        stored = stored_configs(target)
        if form.cleaned_data["fingerprint"] != config_fingerprint(target, stored):
            return config_confirm_page(
                request,
                target,
                changes,
                described_configs(target, stored),
                stored,
                warning="The configs changed since this diff was made: check it again.",
                status=409,
            )
    body = {
        "resources": [
            {
                "resource_type": target.resource_type,
                "resource_name": target.resource_name,
                "configs": [change.as_body() for change in changes],
            }
        ],
        "validate_only": False,
    }
    answer = rpc_call(request, "IncrementalAlterConfigs", body)
    problems = answer_problems(answer, "responses", lambda index, item: target.label)
    if not problems:
        count = len(changes)
        messages.success(
            request, f"Changed {count} config{'s' if count != 1 else ''} of {target.label}."
        )
        return HttpResponseRedirect(target.url())
    status = refusal_status(answer, problems)
    if not readable:
        return result_page(
            request,
            title="Configs not changed",
            section="configs",
            problems=problems,
            back_url=target.url(),
            status=status,
        )
    stored = stored_configs(target)
    return config_confirm_page(
        request,
        target,
        changes,
        described_configs(target, stored),
        stored,
        problems=problems,
        status=status,
    )

"""Rows of the cluster pages: brokers (with what they hold, the core's BrokerLoad) and their
metadata records; the brokers' table as its columns."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from brokers.models import Broker
from brokers.selectors import broker_as_dict
from controlplane.controller.config_schema import redact_record_data
from controlplane.controller.health import BrokerLoad, LogDirState, log_dir_states
from controlplane.models import MetadataRecord
from frontend.tables.columns import (
    Column,
    Table,
    badge,
    count,
    dash_if_empty,
    dash_if_none,
    link,
)
from frontend.tables.common import format_age, format_ms
from replicas.models import BrokerLoad as BrokerLoadRow

STATE_BADGES = {
    "UNFENCED": "ok",
    "FENCED": "danger",
    "CONTROLLED_SHUTDOWN": "warn",
}


def format_listener(listener: dict[str, Any]) -> str:
    return (
        f"{listener.get('name', '?')}://{listener.get('host', '?')}:{listener.get('port', '?')}"
        f" ({listener.get('security_protocol', '?')})"
    )


# Offline, as the health index, the API's `offline` filter and /metrics count it.
OFFLINE_REPLICAS_MEANING = "offline: on a failed log dir (AlterReplicaState) or a fenced broker"
LOG_DIR_BADGES = {
    LogDirState.ONLINE: ("ok", "online"),
    LogDirState.OFFLINE: ("danger", "offline"),
    LogDirState.UNKNOWN: ("warn", "unknown (fenced)"),
}


@dataclasses.dataclass(frozen=True, slots=True)
class LogDirRow:
    log_dir: str
    state: LogDirState

    @property
    def offline(self) -> bool:
        return self.state is LogDirState.OFFLINE

    @property
    def badge(self) -> str:
        return LOG_DIR_BADGES[self.state][0]

    @property
    def label(self) -> str:
        return LOG_DIR_BADGES[self.state][1]


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRow:
    broker_id: int
    state: str
    badge: str
    epoch: int
    incarnation_id: str
    pod: str
    rack: str | None
    listeners: list[str]
    log_dirs: list[LogDirRow]  # each with its state (controlplane.controller.health's model)
    software_version: str | None  # what it runs (KIP-1095), as it registered
    last_contact_ms: int | None
    last_heartbeat: str
    last_heartbeat_at: str
    metadata_offset: int | None
    load: BrokerLoad  # what it holds (the controller's counts): leaders, replicas, the trouble
    overloaded: bool = False  # twice the other brokers' median replicas or more

    @property
    def fenced(self) -> bool:
        return self.state == "FENCED"

    @property
    def offline_dirs(self) -> int:
        return sum(d.state is LogDirState.OFFLINE for d in self.log_dirs)

    @property
    def unknown_dirs(self) -> int:
        return sum(d.state is LogDirState.UNKNOWN for d in self.log_dirs)

    @property
    def out_of_sync(self) -> int:
        return self.load.replicas - self.load.in_sync_replicas


def broker_load(broker_id: int, stored: BrokerLoadRow | None) -> BrokerLoad:
    """The core's BrokerLoad from its stored row (a broker holding nothing has none)."""
    if stored is None:
        return BrokerLoad(broker_id)
    return BrokerLoad(**{f.name: getattr(stored, f.name) for f in dataclasses.fields(BrokerLoad)})


def broker_row(
    broker: Broker,
    sessions: dict[int, dict[str, int]],
    now_ms: int,
    load: BrokerLoadRow | None = None,
) -> BrokerRow:
    data = broker_as_dict(broker, sessions)
    states = log_dir_states(
        [str(d) for d in data["log_dirs"] or []],
        [str(d) for d in data["offline_log_dirs"] or []],
        bool(data["fenced"]),
    )
    return BrokerRow(
        broker_id=data["broker_id"],
        state=data["state"],
        badge=STATE_BADGES.get(data["state"], "muted"),
        epoch=data["broker_epoch"],
        incarnation_id=data["incarnation_id"],
        pod=data["pod"],
        rack=data["rack"],
        listeners=[format_listener(item) for item in data["listeners"] or []],
        log_dirs=[LogDirRow(d, state) for d, state in states],
        software_version=data["software_version"],
        last_contact_ms=data["last_contact_ms"],
        last_heartbeat=format_age(data["last_contact_ms"], now_ms),
        last_heartbeat_at=format_ms(data["last_contact_ms"]),
        metadata_offset=data["metadata_offset"],
        load=broker_load(data["broker_id"], load),
    )


def broker_rows(
    brokers: Iterable[Broker],
    sessions: dict[int, dict[str, int]],
    now_ms: int,
    loads: dict[int, BrokerLoadRow] | None = None,
) -> list[BrokerRow]:
    loads = loads or {}
    rows = [broker_row(b, sessions, now_ms, loads.get(b.broker_id)) for b in brokers]
    return flag_overloaded(rows)


OVERLOAD_FACTOR = 2  # a broker holding twice the others' median is flagged


def flag_overloaded(rows: list[BrokerRow]) -> list[BrokerRow]:
    """Mark each broker holding OVERLOAD_FACTOR times the median replica count of the other
    brokers or more: a skew a reassignment should fix, invisible in a column of numbers."""
    flagged = []
    for row in rows:
        others = sorted(r.load.replicas for r in rows if r is not row)
        median = others[len(others) // 2] if others else 0
        overloaded = median > 0 and row.load.replicas >= OVERLOAD_FACTOR * median
        flagged.append(dataclasses.replace(row, overloaded=overloaded) if overloaded else row)
    return flagged


def _replicas(row: BrokerRow, n: int) -> Any:
    shown = link(_partitions(broker=row.broker_id), n)
    if not row.overloaded:
        return shown
    flag = format_html(
        '<span class="badge badge-warn" data-testid="overloaded" title="{}">{}</span>',
        f"holds {OVERLOAD_FACTOR}x or more the median of the other brokers' replicas",
        f"{OVERLOAD_FACTOR}x the median",
    )
    return format_html("{} {}", shown, flag)


def _partitions(**filters: str | int) -> str:
    return f"{reverse('frontend:partition-list')}?{urlencode(filters)}"


def _by(figure: Callable[[BrokerRow], Any]) -> Callable[[BrokerRow], Any]:
    """Sorted by a figure, then by broker id."""
    return lambda r: (figure(r), r.broker_id)


def _figure(
    name: str,
    label: str,
    figure: Callable[[BrokerRow], int],
    shown: Callable[[BrokerRow, int], Any],
) -> Column:
    """A figure of what the broker holds, sorted by it (then by id), tested as `name`."""
    return Column(
        name,
        label,
        lambda r: shown(r, figure(r)),
        sort=_by(figure),
        num=True,
        testid=name.replace("_", "-"),
    )


def _log_dirs(r: BrokerRow) -> SafeString:
    """The dirs' states as the API's `offline_log_dirs` and `fenced` say them: offline ones
    first, then a fenced broker's unknown ones (never "online": no heartbeat says so)."""
    parts = []
    if r.offline_dirs:
        text = f"{r.offline_dirs} of {len(r.log_dirs)} offline"
        parts.append(badge("danger", text, testid="offline-log-dirs"))
    if r.unknown_dirs:
        text = f"{r.unknown_dirs} unknown (fenced)"
        parts.append(badge("warn", text, testid="unknown-log-dirs"))
    if not parts:
        return format_html('<span class="muted">{} online</span>', len(r.log_dirs))
    return format_html("{}", SafeString(" ".join(parts)))


BROKER_COLUMNS = (
    Column(
        "id",
        "Id",
        lambda r: link(reverse("frontend:broker-detail", args=[r.broker_id]), r.broker_id),
        sort=lambda r: r.broker_id,
        num=True,
    ),
    Column(
        "state",
        "State",
        lambda r: badge(r.badge, r.state, testid="state"),
        sort=lambda r: (r.state, r.broker_id),
    ),
    Column("log_dirs", "Log dirs", _log_dirs, testid="log-dirs"),
    _figure(
        "leaders",
        "Leaders",
        lambda r: r.load.leaders,
        lambda r, n: link(_partitions(leader=r.broker_id), n),
    ),
    _figure("replicas", "Replicas", lambda r: r.load.replicas, _replicas),
    _figure(
        "out_of_sync",
        "Out of ISR",
        lambda r: r.out_of_sync,
        lambda r, n: count(n, lambda n: badge("warn", n)),
    ),
    _figure(
        "under_replicated",
        "Under-replicated (led)",
        lambda r: r.load.under_replicated_partitions,
        lambda r, n: count(
            n,
            lambda n: link(
                _partitions(leader=r.broker_id, under_replicated="true"), badge("warn", n)
            ),
        ),
    ),
    Column(
        "offline_replicas",
        "Offline replicas",
        lambda r: count(
            r.load.offline_replicas,
            lambda n: link(_partitions(broker=r.broker_id, offline="true"), badge("danger", n)),
        ),
        sort=_by(lambda r: r.load.offline_replicas),
        num=True,
        testid="offline-replicas",
        header_title=OFFLINE_REPLICAS_MEANING,
    ),
    Column("epoch", "Epoch", num=True),
    Column(
        "software_version",
        "Version",
        lambda r: dash_if_none(r.software_version),
        sort=_by(lambda r: r.software_version or ""),
        css="mono nowrap",
        testid="software-version",
        header_title="The software version it registered with (KIP-1095)",
    ),
    Column("pod", "Pod", css="mono"),
    Column("rack", "Rack", lambda r: r.rack or "—", sort=_by(lambda r: r.rack or "")),
    Column("last_heartbeat", "Last heartbeat", title=lambda r: r.last_heartbeat_at),
    Column(
        "metadata_offset", "Metadata offset", lambda r: dash_if_none(r.metadata_offset), num=True
    ),
)
# Sorts no column's header offers (links ask for them).
BROKER_EXTRA_SORTS = {"offline_log_dirs": _by(lambda r: r.offline_dirs)}


def broker_table(rows: Sequence[BrokerRow]) -> Table:
    return Table(
        BROKER_COLUMNS,
        rows,
        testid="broker-table",
        row_attributes=lambda r: {
            "id": f"broker-{r.broker_id}",
            "data-broker-id": r.broker_id,
            "class": " ".join(
                c for c, on in (("offline", r.offline_dirs), ("fenced", r.fenced)) if on
            )
            or None,
        },
    )


@dataclasses.dataclass(frozen=True, slots=True)
class RecordRow:
    offset: int
    record_type: str
    controller_epoch: int
    time: str
    principal: str
    client_id: str
    request_id: str
    data: str


def record_rows(records: Iterable[MetadataRecord]) -> list[RecordRow]:
    return [
        RecordRow(
            offset=record.offset,
            record_type=record.record_type,
            controller_epoch=record.controller_epoch,
            time=format_ms(record.timestamp_ms),
            principal=record.principal,
            client_id=record.client_id,
            request_id=record.request_id,
            data=json.dumps(
                redact_record_data(record.record_type, record.data),
                sort_keys=True,
                indent=1,
                default=str,
            ),
        )
        for record in records
    ]


def _principal(r: RecordRow) -> Any:
    if not r.client_id:
        return r.principal
    return format_html('{}<div class="muted small">{}</div>', r.principal, r.client_id)


RECORD_COLUMNS = (
    Column("offset", "Offset", num=True),
    Column("record_type", "Type", css="mono", testid="record-type"),
    Column("controller_epoch", "Ctrl epoch", num=True, header_title="Controller epoch"),
    Column("time", "Time (UTC)", css="nowrap"),
    Column("principal", "Principal", _principal, css="mono nowrap"),
    Column("request_id", "Request id", lambda r: dash_if_empty(r.request_id), css="mono small"),
    Column(
        "data", "Data", lambda r: format_html('<pre class="data" tabindex="0">{}</pre>', r.data)
    ),
)


def record_table(rows: Sequence[RecordRow]) -> Table:
    return Table(
        RECORD_COLUMNS,
        rows,
        testid="record-table",
        row_attributes=lambda r: {"data-offset": r.offset},
    )

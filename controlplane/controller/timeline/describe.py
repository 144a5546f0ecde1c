"""One timeline entry per write: what the controller did and why, in an operator's words.

The API that asked (or the controller's own timer) says why; the records say what. Log dir
failures are one entry per report, with every partition's previous and new leader; fencings,
session expiries, controlled shutdowns and unregistrations list what they moved; any leader
elected from outside its ISR makes the entry an unclean election, said loudly whatever asked
for it.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Sequence
from typing import Any

from controlplane.controller.image import MetadataImage
from controlplane.controller.records import LOST_DIRECTORY, NO_LEADER, Record
from controlplane.controller.timeline.facts import CommitWalk, Move, Transitions, WriteFacts


class Kind(enum.StrEnum):
    LOG_DIR_FAILURE = "LOG_DIR_FAILURE"
    LOG_DIR_RECOVERY = "LOG_DIR_RECOVERY"
    REPLICA_RECOVERED = "REPLICA_RECOVERED"
    SESSION_EXPIRED = "SESSION_EXPIRED"
    FENCED = "FENCED"
    CONTROLLED_SHUTDOWN = "CONTROLLED_SHUTDOWN"
    UNFENCED = "UNFENCED"
    REGISTERED = "REGISTERED"
    UNREGISTERED = "UNREGISTERED"
    ELECTION = "ELECTION"
    UNCLEAN_ELECTION = "UNCLEAN_ELECTION"
    ISR_CHANGE = "ISR_CHANGE"
    TOPIC_CREATED = "TOPIC_CREATED"
    TOPIC_DELETED = "TOPIC_DELETED"
    PARTITIONS_ADDED = "PARTITIONS_ADDED"
    CONFIG_CHANGED = "CONFIG_CHANGED"
    ACL_CHANGED = "ACL_CHANGED"
    QUOTA_CHANGED = "QUOTA_CHANGED"
    TOKEN_CHANGED = "TOKEN_CHANGED"
    SCRAM_CHANGED = "SCRAM_CHANGED"
    OTHER = "OTHER"


KIND_LABELS: dict[Kind, str] = {
    Kind.LOG_DIR_FAILURE: "log dir failure",
    Kind.LOG_DIR_RECOVERY: "log dir back online",
    Kind.REPLICA_RECOVERED: "replica back in ISR",
    Kind.SESSION_EXPIRED: "session expiry",
    Kind.FENCED: "fencing",
    Kind.CONTROLLED_SHUTDOWN: "controlled shutdown",
    Kind.UNFENCED: "unfencing",
    Kind.REGISTERED: "registration",
    Kind.UNREGISTERED: "unregistration",
    Kind.ELECTION: "leader election",
    Kind.UNCLEAN_ELECTION: "UNCLEAN leader election",
    Kind.ISR_CHANGE: "ISR change",
    Kind.TOPIC_CREATED: "topic created",
    Kind.TOPIC_DELETED: "topic deleted",
    Kind.PARTITIONS_ADDED: "partitions added",
    Kind.CONFIG_CHANGED: "config change",
    Kind.ACL_CHANGED: "ACL change",
    Kind.QUOTA_CHANGED: "client quota change",
    Kind.TOKEN_CHANGED: "delegation token",
    Kind.SCRAM_CHANGED: "SCRAM credential",
    Kind.OTHER: "other",
}


class Severity(enum.StrEnum):
    CRITICAL = "CRITICAL"  # unclean elections, partitions left without a leader
    WARNING = "WARNING"  # replicas lost: failed log dirs, fencings, shutdowns
    INFO = "INFO"
    OK = "OK"  # things coming back


@dataclasses.dataclass(frozen=True, slots=True)
class WriteSummary:
    """What the runtime knows of one write of a commit: the API and its records' offsets."""

    api: str
    first_offset: int
    last_offset: int


@dataclasses.dataclass(frozen=True, slots=True)
class TimelineEntry:
    offset: int  # the write's first record
    last_offset: int
    api: str
    kind: Kind
    severity: Severity
    title: str
    brokers: tuple[int, ...]  # the brokers it is about, for filtering
    topics: tuple[str, ...]  # the topic names it is about (kept: a deleted topic by name)
    details: dict[str, Any]
    moves: tuple[Move, ...]

    @property
    def unclean(self) -> bool:
        return bool(self.details.get("unclean_partitions"))


def describe_commit(
    base: MetadataImage,
    replayed: Sequence[tuple[int, Record]],
    writes: Sequence[WriteSummary],
    transitions: Transitions | None = None,
) -> list[TimelineEntry]:
    """The timeline entries of a commit: `replayed` are its records (offset, record) over the
    image `base`, `writes` the writes they belong to, in order. `transitions`, when the replay
    kept them (`TopicsDelta.transitions`), are the partitions before and after each change."""
    walk = CommitWalk(base, replayed, transitions)
    entries = []
    for write in sorted(writes, key=lambda w: w.first_offset):
        if write.last_offset < write.first_offset:
            continue
        facts = walk.facts(write.first_offset, write.last_offset)
        entries.append(_entry(write, facts))
    return entries


# --- the words ------------------------------------------------------------------------------
def _plural(count: int, word: str, plural: str | None = None) -> str:
    return f"{count} {word if count == 1 else (plural or word + 's')}"


def _brokers_text(broker_ids: Sequence[int]) -> str:
    ids = ", ".join(map(str, sorted(broker_ids)))
    return f"broker {ids}" if len(broker_ids) == 1 else f"brokers {ids}"


def _consequences(facts: WriteFacts) -> str:
    """What the partition moves amounted to, e.g. '17 replicas left their ISRs, 5 leaders
    moved, 1 partition leaderless'."""
    parts = []
    departures = facts.isr_departures()
    if departures:
        parts.append(
            f"{_plural(departures, 'replica')} left {'its' if departures == 1 else 'their'} ISR"
        )
    if facts.leaders_moved:
        parts.append(f"{_plural(facts.leaders_moved, 'leader')} moved")
    if facts.left_leaderless:
        parts.append(f"{_plural(facts.left_leaderless, 'partition')} left without a leader")
    return ", ".join(parts) if parts else "no partition moved"


def _log_dir_failure(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    if facts.moves:
        reporters = sorted({b for m in facts.moves for b in m.offline_added})
        offline = sum(len(m.offline_added) for m in facts.moves)
        return (
            Kind.LOG_DIR_FAILURE,
            f"Log dir failure reported by {_brokers_text(reporters)}: "
            f"{_plural(offline, 'replica')} offline; {_consequences(facts)}",
        )
    return Kind.LOG_DIR_FAILURE, "A log dir failure report that changed nothing"


def _dirs_text(dirs: dict[int, list[str]]) -> str:
    names = [d for ds in dirs.values() for d in ds]
    return f"{'log dir' if len(names) == 1 else 'log dirs'} {', '.join(names)}"


def _heartbeat(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    parts: list[tuple[Kind, str]] = []
    went, back = _log_dir_changes(facts)
    if went:
        text = f"{_brokers_text(sorted(went)).capitalize()} reports {_dirs_text(went)} offline"
        parts.append((Kind.LOG_DIR_FAILURE, text))
    for broker_id in facts.fenced:
        why = (
            "shut down (its controlled shutdown is complete)"
            if broker_id in facts.shut_down
            else "fenced at its own request"
        )
        parts.append((Kind.FENCED, f"Broker {broker_id} {why}; {_consequences(facts)}"))
    for broker_id in facts.shutting_down:
        if broker_id not in facts.fenced:
            text = f"Broker {broker_id} began a controlled shutdown; {_consequences(facts)}"
            parts.append((Kind.CONTROLLED_SHUTDOWN, text))
    for broker_id in facts.unfenced:
        again = sum(1 for m in facts.moves if m.leader == broker_id)
        led = f"; leads {_plural(again, 'leaderless partition')} again" if again else ""
        parts.append((Kind.UNFENCED, f"Broker {broker_id} unfenced (caught up with the log){led}"))
    if back:
        text = f"{_brokers_text(sorted(back)).capitalize()}: {_dirs_text(back)} back online"
        parts.append((Kind.LOG_DIR_RECOVERY, text))
    if not parts:
        return Kind.OTHER, "Broker heartbeat"
    kind = min((k for k, _ in parts), key=HEARTBEAT_PRIORITY.index)
    return kind, "; ".join(text for _, text in parts)


HEARTBEAT_PRIORITY = [
    Kind.LOG_DIR_FAILURE,
    Kind.FENCED,
    Kind.CONTROLLED_SHUTDOWN,
    Kind.UNFENCED,
    Kind.LOG_DIR_RECOVERY,
]


def _log_dir_changes(facts: WriteFacts) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    went: dict[int, list[str]] = {}
    back: dict[int, list[str]] = {}
    for broker_id, (before, after) in facts.log_dirs.items():
        gone = [d for d in after if d not in before]
        returned = [d for d in before if d not in after]
        if gone and returned == [LOST_DIRECTORY]:
            returned = []  # the dir a report named none for, now named: not a recovery
        if gone:
            went[broker_id] = gone
        if returned:
            back[broker_id] = returned
    return went, back


def _session_expired(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    return (
        Kind.SESSION_EXPIRED,
        f"Session expired: {_brokers_text(facts.fenced)} fenced (no heartbeat within "
        f"broker.session.timeout.ms); {_consequences(facts)}",
    )


def _registration(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = []
    for broker_id, epoch, again in facts.registered:
        if again:
            moved = f"; {_consequences(facts)}" if facts.moves else ""
            texts.append(
                f"Broker {broker_id} registered a new incarnation (epoch {epoch}), fenced until "
                f"it catches up{moved}"
            )
        else:
            texts.append(
                f"Broker {broker_id} registered (epoch {epoch}), fenced until it catches up"
            )
    return Kind.REGISTERED, "; ".join(texts) or "Broker registration"


def _unregistration(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    return (
        Kind.UNREGISTERED,
        f"{_brokers_text(facts.unregistered).capitalize()} unregistered; {_consequences(facts)}",
    )


def _election(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    why = (
        "Preferred leader rebalance (auto.leader.rebalance.enable)"
        if write.api == "RebalanceLeaders"
        else "Leader election"
    )
    preferred = all(m.leader != NO_LEADER for m in facts.moves)
    return Kind.ELECTION, f"{why}: {_plural(facts.leaders_moved, 'leader')} moved" + (
        "" if preferred else f", {_consequences(facts)}"
    )


def _isr_change(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    recovered = [(m, b) for m in facts.moves for b in m.offline_cleared]
    if recovered:
        names = ", ".join(f"{m.topic_name}-{m.partition} (broker {b})" for m, b in recovered[:5])
        more = f" and {len(recovered) - 5} more" if len(recovered) > 5 else ""
        return (
            Kind.REPLICA_RECOVERED,
            f"{_plural(len(recovered), 'offline replica')} back in the ISR: {names}{more}",
        )
    changes = []
    for m in facts.moves[:5]:
        joined = sorted(set(m.isr) - set(m.previous_isr))
        left = sorted(set(m.previous_isr) - set(m.isr))
        how = ", ".join(
            part
            for part in (
                f"{_brokers_text(joined)} joined" if joined else "",
                f"{_brokers_text(left)} left" if left else "",
            )
            if part
        )
        changes.append(f"{m.topic_name}-{m.partition}: {how or 'ISR rewritten'}")
    more = f" and {len(facts.moves) - 5} more" if len(facts.moves) > 5 else ""
    return Kind.ISR_CHANGE, "ISR change by the leader (AlterPartition): " + "; ".join(
        changes
    ) + more


def _topics_created(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = [
        f"Topic {name} created: {_plural(count, 'partition')}, replication factor {rf}"
        for name, (count, rf) in facts.created_topics.items()
    ]
    return Kind.TOPIC_CREATED, "; ".join(texts) or "Topic creation"


def _topics_deleted(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = [
        f"Topic {name} deleted ({_plural(count, 'partition')})"
        for name, count in facts.removed_topics.items()
    ]
    return Kind.TOPIC_DELETED, "; ".join(texts) or "Topic deletion"


def _partitions_added(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = [
        f"{name}: {_plural(count, 'partition')} added"
        for name, count in facts.added_partitions.items()
    ]
    return Kind.PARTITIONS_ADDED, "; ".join(texts) or "Partitions added"


def _configs(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    by_resource: dict[str, list[str]] = {}
    for change in facts.configs:
        name = change["resource_name"] or "cluster default"
        resource = f"{change['resource_type']} {name}"
        # Values are in the details (pages show them in units people read), not the title.
        text = f"{change['name']} {'deleted' if change['value'] is None else 'set'}"
        by_resource.setdefault(resource, []).append(text)
    texts = [f"{resource}: {', '.join(items)}" for resource, items in by_resource.items()]
    return Kind.CONFIG_CHANGED, "Config change: " + "; ".join(texts)


def _acls(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    def describe(acl: dict[str, str]) -> str:
        return (
            f"{acl['permission_type']} {acl['principal']} {acl['operation']} on {acl['resource']}"
        )

    texts = [f"created {describe(a)}" for a in facts.acls_created[:3]]
    texts += [f"deleted {describe(a)}" for a in facts.acls_deleted[:3]]
    total = len(facts.acls_created) + len(facts.acls_deleted)
    more = f" and {total - len(texts)} more" if total > len(texts) else ""
    return Kind.ACL_CHANGED, "ACLs " + "; ".join(texts) + more


def _number(value: float) -> str:
    """1048576, not 1.04858e+06."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _quotas(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = [
        f"{q['entity']}: {q['key']} removed"
        if q["value"] is None
        else f"{q['entity']}: {q['key']} = {_number(q['value'])}"
        for q in facts.quotas
    ]
    return Kind.QUOTA_CHANGED, "Client quotas: " + "; ".join(texts)


def _tokens(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    parts = []
    if facts.tokens_created:
        parts.append(f"{_plural(len(facts.tokens_created), 'token')} created or renewed")
    if facts.tokens_removed:
        parts.append(f"{_plural(len(facts.tokens_removed), 'token')} expired")
    return Kind.TOKEN_CHANGED, "Delegation tokens: " + ", ".join(parts)


def _scram(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    texts = [
        f"{user} {mechanism} {'set' if set_ else 'deleted'}"
        for user, mechanism, set_ in facts.scram
    ]
    return Kind.SCRAM_CHANGED, "SCRAM credentials: " + "; ".join(texts)


Describer = Callable[[WriteSummary, WriteFacts], tuple[Kind, str]]
BY_API: dict[str, Describer] = {
    "AlterReplicaState": _log_dir_failure,
    "BrokerHeartbeat": _heartbeat,
    "FenceStaleBrokers": _session_expired,
    "BrokerRegistration": _registration,
    "UnregisterBroker": _unregistration,
    "ElectLeaders": _election,
    "RebalanceLeaders": _election,
    "AlterPartition": _isr_change,
    "CreateTopics": _topics_created,
    "DeleteTopics": _topics_deleted,
    "CreatePartitions": _partitions_added,
    "AlterConfigs": _configs,
    "IncrementalAlterConfigs": _configs,
    "CreateAcls": _acls,
    "DeleteAcls": _acls,
    "AlterClientQuotas": _quotas,
    "CreateDelegationToken": _tokens,
    "RenewDelegationToken": _tokens,
    "ExpireDelegationToken": _tokens,
    "ExpireDelegationTokens": _tokens,
    "AlterUserScramCredentials": _scram,
}

WARNING_KINDS = frozenset(
    {
        Kind.LOG_DIR_FAILURE,
        Kind.SESSION_EXPIRED,
        Kind.FENCED,
        Kind.CONTROLLED_SHUTDOWN,
        Kind.UNREGISTERED,
    }
)
OK_KINDS = frozenset({Kind.LOG_DIR_RECOVERY, Kind.REPLICA_RECOVERED, Kind.UNFENCED})


def _other(write: WriteSummary, facts: WriteFacts) -> tuple[Kind, str]:
    return Kind.OTHER, f"{write.api}"


def _entry(write: WriteSummary, facts: WriteFacts) -> TimelineEntry:
    kind, title = BY_API.get(write.api, _other)(write, facts)
    unclean = facts.unclean
    if unclean:
        if kind is Kind.ELECTION:
            kind = Kind.UNCLEAN_ELECTION
        title = (
            f"UNCLEAN leader election: {_plural(len(unclean), 'partition')} got a leader from "
            f"outside the ISR, possible data loss. {title}"
        )
    if unclean or facts.left_leaderless:
        severity = Severity.CRITICAL
    elif _failure_told_already(write, kind, facts):
        severity = Severity.INFO
    elif kind in WARNING_KINDS or (kind is Kind.ISR_CHANGE and facts.isr_departures()):
        severity = Severity.WARNING
    elif kind in OK_KINDS:
        severity = Severity.OK
    else:
        severity = Severity.INFO
    return TimelineEntry(
        offset=write.first_offset,
        last_offset=write.last_offset,
        api=write.api,
        kind=kind,
        severity=severity,
        title=title,
        brokers=_brokers_of(facts),
        topics=_topics_of(facts),
        details=_details(facts),
        moves=tuple(facts.moves),
    )


def _failure_told_already(write: WriteSummary, kind: Kind, facts: WriteFacts) -> bool:
    """A heartbeat naming a failed dir of a broker holding replicas: AlterReplicaState reports
    that failure's replicas (before or after it), and its entry, with every partition's
    leaders, is the incident; the heartbeat's is told, not counted twice. Not when the heartbeat
    did more (fenced, began a shutdown) or the broker holds nothing (no report follows)."""
    if write.api != "BrokerHeartbeat" or kind is not Kind.LOG_DIR_FAILURE:
        return False
    if facts.fenced or facts.shutting_down or facts.moves:
        return False
    went, _ = _log_dir_changes(facts)
    return bool(went) and set(went) <= facts.failure_told


def _brokers_of(facts: WriteFacts) -> tuple[int, ...]:
    ids: set[int] = set()
    ids.update(b for b, _, _ in facts.registered)
    ids.update(facts.fenced, facts.unfenced, facts.shutting_down, facts.unregistered)
    ids.update(facts.log_dirs)
    # A large commit has a move per partition but few distinct ISR changes (the lists are
    # shared): each pair's brokers are worked out once.
    isr_changes: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
    for move in facts.moves:
        ids.update(move.offline_added, move.offline_cleared)
        if move.leader != move.previous_leader:
            ids.add(move.previous_leader)
            ids.add(move.leader)
        if move.isr != move.previous_isr:
            isr_changes.add((move.previous_isr, move.isr))
    for before, after in isr_changes:
        ids.update(set(before) ^ set(after))
    ids.discard(NO_LEADER)
    return tuple(sorted(ids))


def _topics_of(facts: WriteFacts) -> tuple[str, ...]:
    names: set[str] = {m.topic_name for m in facts.moves}
    names.update(facts.created_topics, facts.removed_topics, facts.added_partitions)
    names.update(c["resource_name"] for c in facts.configs if c["resource_type"] == "TOPIC")
    for acl in (*facts.acls_created, *facts.acls_deleted):
        if acl["resource_type"] == "TOPIC":
            names.add(acl["resource_name"])
    return tuple(sorted(names))


def _details(facts: WriteFacts) -> dict[str, Any]:
    went, back = _log_dir_changes(facts)
    details: dict[str, Any] = {
        "partitions_changed": len(facts.moves),
        "leaders_moved": facts.leaders_moved,
        "left_leaderless": facts.left_leaderless,
        "isr_departures": facts.isr_departures(),
        "unclean_partitions": len(facts.unclean),
        "offline_replicas_added": sum(len(m.offline_added) for m in facts.moves),
        "offline_replicas_cleared": sum(len(m.offline_cleared) for m in facts.moves),
    }
    optional: dict[str, Any] = {
        "log_dirs_offline": {str(b): d for b, d in went.items()},
        "log_dirs_back": {str(b): d for b, d in back.items()},
        "fenced": facts.fenced,
        "unfenced": facts.unfenced,
        "controlled_shutdown": facts.shutting_down,
        "unregistered": facts.unregistered,
        "registered": [
            {"broker_id": b, "epoch": e, "new_incarnation": a} for b, e, a in facts.registered
        ],
        "topics_created": facts.created_topics,
        "topics_deleted": facts.removed_topics,
        "partitions_added": facts.added_partitions,
        "configs": facts.configs,
        "acls_created": facts.acls_created,
        "acls_deleted": facts.acls_deleted,
        "quotas": facts.quotas,
        "tokens_created": len(facts.tokens_created),
        "tokens_removed": len(facts.tokens_removed),
        "scram_credentials": [
            {"user": user, "mechanism": mechanism, "change": "set" if set_ else "deleted"}
            for user, mechanism, set_ in facts.scram
        ],
    }
    details.update({key: value for key, value in optional.items() if value})
    return details

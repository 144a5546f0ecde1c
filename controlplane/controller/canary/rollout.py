"""The canary rollout guard (KIP-1095: deploy to canary brokers first and let them bake).

`GET /api/v1/canary/rollout?version=V` asks whether a rollout of V may go on past the canary
brokers. The answer comes from the metadata log alone, so two controllers (or a replay) answer
the same:

* NOT_STARTED: no registered broker reports V; COMPLETE: every registered broker does.
* Otherwise the bake started when the last canary broker now running V began running it (its
  first registration reporting V since it last reported anything else). Over the time since,
  the canary brokers running V are compared with the non-canary brokers: fencings (session
  expiries among them), replicas they reported offline (AlterReplicaState) and partitions that
  lost their leader while held by them alone.
* ROLLBACK: the canary brokers had at least ROLLBACK_INCIDENTS incidents (session expiries,
  offline replicas, leaderless partitions) and more per broker than the others.
* HOLD: fewer such incidents (watch them), a canary broker running V is fenced now, V skipped
  the canary brokers, or the bake time has not passed yet.
* PROCEED: the bake time has passed and the canary brokers did no worse than the others.

Fencings alone (a planned restart fences a broker too) are shown but are not incidents.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from controlplane.controller.canary.rules import CANARY_BROKER_POD

PROCEED = "PROCEED"
HOLD = "HOLD"
ROLLBACK = "ROLLBACK"
NOT_STARTED = "NOT_STARTED"
COMPLETE = "COMPLETE"

ROLLBACK_INCIDENTS = 3  # fewer canary incidents than this are a HOLD: one may be chance
CONTROLLER_PRINCIPAL = "User:controller"  # who fences a broker whose session lapsed


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerNow:
    """A registered broker as it stands."""

    broker_id: int
    pod: str
    software_version: str | None
    fenced: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Registration:
    """A RegisterBrokerRecord of the log."""

    offset: int
    timestamp_ms: int
    broker_id: int
    pod: str
    software_version: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Fencing:
    """A BrokerRegistrationChangeRecord that fenced a broker; the controller's own (principal
    User:controller) are session expiries."""

    offset: int
    broker_id: int
    session_expiry: bool


@dataclasses.dataclass(frozen=True, slots=True)
class Bake:
    """Where the bake of a version stands: the brokers running it, since when each."""

    version: str
    running: dict[int, Registration]  # broker id -> the registration its current run began
    start: Registration | None  # the last canary broker's; None when no canary broker runs it


def bake_of(version: str, brokers: Sequence[BrokerNow], log: Iterable[Registration]) -> Bake:
    """Which brokers run `version` now, and since which registration each (a re-registration
    reporting the same version, after a lost session say, does not restart its clock)."""
    running_now = {b.broker_id for b in brokers if b.software_version == version}
    since: dict[int, Registration] = {}
    for registration in sorted(log, key=lambda r: r.offset):
        if registration.broker_id not in running_now:
            continue
        if registration.software_version != version:
            since.pop(registration.broker_id, None)
        elif registration.broker_id not in since:
            since[registration.broker_id] = registration
    canary = [
        since[b.broker_id] for b in brokers if b.pod == CANARY_BROKER_POD and b.broker_id in since
    ]
    start = max(canary, key=lambda r: r.offset) if canary else None
    return Bake(version, since, start)


@dataclasses.dataclass(slots=True)
class GroupEvidence:
    brokers: list[int]
    fenced_now: list[int]
    fencings: int = 0
    session_expiries: int = 0
    offline_replicas: int = 0
    leaderless_partitions: int = 0

    @property
    def incidents(self) -> int:
        return self.session_expiries + self.offline_replicas + self.leaderless_partitions

    @property
    def incidents_per_broker(self) -> float:
        return self.incidents / len(self.brokers) if self.brokers else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "brokers": self.brokers,
            "fenced_now": self.fenced_now,
            "fencings": self.fencings,
            "session_expiries": self.session_expiries,
            "offline_replicas": self.offline_replicas,
            "leaderless_partitions": self.leaderless_partitions,
            "incidents": self.incidents,
            "incidents_per_broker": round(self.incidents_per_broker, 3),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """What happened since the bake started, from the log."""

    fencings: Sequence[Fencing] = ()
    offline_reports: Mapping[int, int] = dataclasses.field(default_factory=dict)  # broker: n
    leaderless: Sequence[
        tuple[int, ...]
    ] = ()  # the replicas of each partition that lost its leader


def rollout_verdict(
    *,
    bake: Bake,
    brokers: Sequence[BrokerNow],
    window: Window,
    now_ms: int,
    bake_time_ms: int,
) -> dict[str, Any]:
    """The verdict on the rollout of `bake.version`, its evidence and why, in words."""
    version = bake.version
    running = sorted(bake.running)
    if not running:
        return _answer(NOT_STARTED, version, f"No registered broker reports version {version}.")
    if len(running) == len(brokers):
        return _answer(
            COMPLETE,
            version,
            f"Every registered broker ({len(brokers)}) reports version {version}: the rollout "
            "is complete.",
            running=running,
        )
    canary, others = _groups(bake, brokers)
    if bake.start is None:
        return _answer(
            HOLD,
            version,
            f"Version {version} runs on {len(running)} non-canary broker(s) but on no canary "
            "broker: deploy it to the canary brokers first and let it bake there.",
            running=running,
            evidence={"canary": canary.as_dict(), "non_canary": others.as_dict()},
        )
    _count(window, canary, others)
    elapsed = max(0, now_ms - bake.start.timestamp_ms)
    evidence = {
        "bake_time_ms": bake_time_ms,
        "bake_elapsed_ms": elapsed,
        "bake_started_ms": bake.start.timestamp_ms,
        "bake_started_offset": bake.start.offset,
        "canary": canary.as_dict(),
        "non_canary": others.as_dict(),
    }
    verdict, why = _judge(version, canary, others, elapsed, bake_time_ms)
    regular_running = [b for b in running if b not in canary.brokers]
    if regular_running:
        why += (
            f" Version {version} already runs on {len(regular_running)} non-canary broker(s) "
            f"({', '.join(map(str, regular_running))}): the rollout went past its canary stage."
        )
    return _answer(verdict, version, why, running=running, evidence=evidence)


def _groups(bake: Bake, brokers: Sequence[BrokerNow]) -> tuple[GroupEvidence, GroupEvidence]:
    """The canary brokers running the version, and every non-canary broker."""
    canary = [b for b in brokers if b.pod == CANARY_BROKER_POD and b.broker_id in bake.running]
    others = [b for b in brokers if b.pod != CANARY_BROKER_POD]
    return (
        GroupEvidence(
            sorted(b.broker_id for b in canary), sorted(b.broker_id for b in canary if b.fenced)
        ),
        GroupEvidence(
            sorted(b.broker_id for b in others), sorted(b.broker_id for b in others if b.fenced)
        ),
    )


def _count(window: Window, canary: GroupEvidence, others: GroupEvidence) -> None:
    def group(broker_id: int) -> GroupEvidence | None:
        if broker_id in canary.brokers:
            return canary
        return others if broker_id in others.brokers else None

    for fencing in window.fencings:
        found = group(fencing.broker_id)
        if found is not None:
            found.fencings += 1
            found.session_expiries += int(fencing.session_expiry)
    for broker_id, count in window.offline_reports.items():
        found = group(broker_id)
        if found is not None:
            found.offline_replicas += count
    for replicas in window.leaderless:
        # Held by canary brokers alone: theirs; held by non-canary brokers alone: the others'.
        owners = [group(r) for r in replicas]
        if owners and all(o is canary for o in owners):
            canary.leaderless_partitions += 1
        elif owners and all(o is others for o in owners):
            others.leaderless_partitions += 1


def _judge(
    version: str,
    canary: GroupEvidence,
    others: GroupEvidence,
    elapsed_ms: int,
    bake_time_ms: int,
) -> tuple[str, str]:
    troubles = _troubles(canary)
    worse = canary.incidents > 0 and canary.incidents_per_broker > others.incidents_per_broker
    compared = (
        f"{canary.incidents_per_broker:.2f} incident(s) per canary broker against "
        f"{others.incidents_per_broker:.2f} per non-canary broker"
    )
    if worse and canary.incidents >= ROLLBACK_INCIDENTS:
        return ROLLBACK, (
            f"Roll version {version} back: since the canary brokers began running it they had "
            f"{troubles} ({compared}), at least {ROLLBACK_INCIDENTS} incidents and more than "
            "the brokers that do not run it."
        )
    if worse:
        return HOLD, (
            f"Hold version {version}: the canary brokers running it had {troubles} "
            f"({compared}); fewer than {ROLLBACK_INCIDENTS} incidents may be chance, so watch "
            "them before going on."
        )
    if canary.fenced_now:
        return HOLD, (
            f"Hold version {version}: canary broker(s) {', '.join(map(str, canary.fenced_now))} "
            "running it are fenced now."
        )
    baked = f"{_duration(elapsed_ms)} of the {_duration(bake_time_ms)} bake time"
    calm = (
        "no incident"
        if canary.incidents == 0
        else f"{troubles}, no more per broker than the non-canary brokers ({compared})"
    )
    if elapsed_ms < bake_time_ms:
        return HOLD, (
            f"Hold version {version}: still baking on the canary brokers ({baked} passed); "
            f"{calm} so far."
        )
    return PROCEED, (
        f"Proceed with version {version}: it baked on canary brokers "
        f"{', '.join(map(str, canary.brokers))} for {_duration(elapsed_ms)} "
        f"(bake time {_duration(bake_time_ms)}) with {calm}."
    )


def _troubles(group: GroupEvidence) -> str:
    return (
        f"{group.session_expiries} session expir{'y' if group.session_expiries == 1 else 'ies'}, "
        f"{group.offline_replicas} offline replica(s) and "
        f"{group.leaderless_partitions} leaderless partition(s)"
    )


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _answer(
    verdict: str,
    version: str,
    explanation: str,
    *,
    running: Sequence[int] = (),
    evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "verdict": verdict,
        "version": version,
        "explanation": explanation,
        "brokers_running_version": list(running),
        "evidence": evidence or {},
    }

"""The flow's connectors and tasks as they run on a mirror node: MirrorMaker's three connectors
and their tasks, over a control plane's metadata instead of records.

- MirrorSourceConnector (one member): every `refresh.topics.interval.seconds` lists the source's
  topics, keeps those its filter selects (never internal topics, never a topic that came from
  the target: cycle detection through the replication policy), and computes its task configs
  (the topic-partitions dealt round-robin to `tasks.max` tasks). New task configs go to the
  leader, through the control plane when this member leads, else to the leader's REST server,
  signed (the KIP-710 scenario). It also syncs topic configs and topic ACLs of the replicated
  topics to the target (MirrorSourceConnector's rules), and reports the topics it replicates,
  with the filter that chose each, and those not yet on the target.
- MirrorSourceTask (any member): makes each topic-partition it is assigned exist on the target:
  the remote topic `<source><separator><topic>`, created with its source's configs, grown when
  the source grows. The tasks copy what the connector found: without the leader persisting new
  task configs, no new remote topic appears.
- MirrorHeartbeatConnector and its task: every `emit.heartbeats.interval.seconds` the task
  emits a heartbeat to the target (its `heartbeats` topic, made when missing); the time of the
  last one is the flow's heartbeat.
- MirrorCheckpointConnector: no task (a control plane keeps no consumer group offsets).

Every runner resolves its config's references with this node's providers when it is configured;
an unresolved reference stays literal and shows in its status trace. Errors (a cluster down, a
refused call) fail the runner with the reason in its trace and it retries with backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from controlplane.controller.mirror.assignment import (
    TASK_INDEX,
    assigned_partition_counts,
    source_task_configs,
)
from controlplane.controller.mirror.config import (
    CHECKPOINT_CONNECTOR,
    HEARTBEAT_CONNECTOR,
    SOURCE_CONNECTOR,
    Flow,
)
from controlplane.controller.mirror.policy import (
    HEARTBEATS_TOPIC,
    TopicSelection,
    config_sync_ops,
    creation_configs,
    target_acl,
)
from controlplane.controller.mirror.settings import (
    HeartbeatSettings,
    SettingsError,
    SourceSettings,
)
from mirror.node.clients import CallFailed, ClusterAdmin, ClusterUnreachable, Endpoint
from mirror.node.providers import Providers, Resolution

logger = logging.getLogger("mirror.node")

UNASSIGNED, RUNNING, PAUSED, FAILED = "UNASSIGNED", "RUNNING", "PAUSED", "FAILED"
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS = 36, 37
RETRY_SOON_S = 0.25
IDLE_S = 30.0
LAG_CHECK_S = 1.0
REVERIFY_S = 30.0


class Worker(Protocol):
    """What a runner asks of the flow's worker on this node."""

    flow: Flow
    worker_id: str
    providers: Providers

    def task_configs_of(self, connector: str) -> list[dict[str, str]] | None: ...

    def request_task_reconfiguration(
        self, connector: str, configs: list[dict[str, str]]
    ) -> bool: ...

    def report(self, **fields: Any) -> None: ...


class Backoff:
    def __init__(self, initial_s: float = 0.5, maximum_s: float = 30.0) -> None:
        self.initial_s, self.maximum_s = initial_s, maximum_s
        self.next_s = initial_s

    def next(self) -> float:
        delay, self.next_s = self.next_s, min(self.maximum_s, self.next_s * 2)
        return delay

    def reset(self) -> None:
        self.next_s = self.initial_s


def cluster_admin(values: Mapping[str, str], role: str, worker_id: str) -> ClusterAdmin:
    """The source or target cluster's admin client from a resolved connector config."""
    servers = values.get(f"{role}.cluster.bootstrap.servers", "")
    alias = values.get(f"{role}.cluster.alias", role)
    return ClusterAdmin(
        Endpoint(
            name=f"cluster {alias}",
            url=servers.split(",")[0].strip(),
            token=values.get(f"{role}.cluster.token", ""),
            client_id=values.get(f"{role}.cluster.client.id") or worker_id,
        )
    )


class Runner:
    """One connector or task: a thread that ticks, with Connect's states and a status trace."""

    kind = "connector"

    def __init__(self, worker: Worker, name: str, config: dict[str, str], paused: bool) -> None:
        self.worker = worker
        self.name = name
        self.config = config  # unresolved, as persisted
        self.paused = paused
        self.state = UNASSIGNED
        self.trace: str | None = None
        self.resolution: Resolution | None = None
        # `reconfigure` (another thread) bumps the version; the loop sets up again whenever the
        # version it set up from is not the latest, so a config that arrives while `setup` runs
        # on the one before is never lost.
        self._config_lock = threading.Lock()
        self._config_version = 0
        self._set_up_version: int | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._backoff = Backoff()
        self._thread = threading.Thread(
            target=self._loop, name=f"{worker.flow.name}:{name}", daemon=True
        )

    # --- control --------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=15)
        self.close()

    def reconfigure(self, config: dict[str, str]) -> None:
        with self._config_lock:
            if config != self.config:
                self.config = config
                self._config_version += 1
        self._wake.set()

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = paused
            self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def status(self) -> dict[str, Any]:
        return {"state": self.state, "trace": self.trace}

    # --- the loop -------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.paused:
                self.state, self.trace = PAUSED, None
                self._wake.wait()
                self._wake.clear()
                continue
            try:
                self._set_up_latest_config()
                delay = self.tick()
                self.state, self.trace = RUNNING, self._unresolved()
                self._backoff.reset()
            except (ClusterUnreachable, CallFailed, SettingsError, ValueError, KeyError) as error:
                delay = self._backoff.next()
                self.state = FAILED
                self.trace = "; ".join(
                    filter(None, [f"{error} (retrying in {delay:.1f}s)", self._unresolved()])
                )
                logger.warning(
                    "%s %s on %s: %s", self.kind, self.name, self.worker.flow.name, self.trace
                )
            except Exception:  # a bug: the runner fails visibly and retries
                delay = self._backoff.next()
                self.state, self.trace = FAILED, "internal error (see the node's log)"
                logger.exception("%s %s failed", self.kind, self.name)
            self._wake.wait(max(0.0, delay))
            self._wake.clear()

    def _set_up_latest_config(self) -> None:
        """Set up from the latest config unless that is the one running (a failed setup is
        tried again on the next turn)."""
        with self._config_lock:
            config, version = self.config, self._config_version
        if version == self._set_up_version:
            return
        self._set_up_version = None
        self.close()
        self.resolution = self.worker.providers.resolve(config)
        self.setup(self.resolution.values)
        self._set_up_version = version

    def _unresolved(self) -> str | None:
        return None if self.resolution is None else self.resolution.trace()

    # --- what each kind does ----------------------------------------------------------------
    def setup(self, values: Mapping[str, str]) -> None:
        """Read the resolved config (new clients, new settings)."""

    def tick(self) -> float:
        """Do the work that is due; answer how long until the next tick (seconds)."""
        return IDLE_S

    def close(self) -> None:
        """Release what `setup` made."""


class ConnectorRunner(Runner):
    """A connector: computes its task configs and gets them persisted by the leader."""

    def __init__(self, worker: Worker, name: str, config: dict[str, str], paused: bool) -> None:
        super().__init__(worker, name, config, paused)
        self.pending: list[dict[str, str]] | None = None

    def want_task_configs(self, configs: list[dict[str, str]]) -> None:
        if configs != self.worker.task_configs_of(self.name):
            self.pending = configs
        self.push_pending()

    def push_pending(self) -> bool:
        """Ask for the pending task configs (Connect's requestTaskReconfiguration); True when
        nothing is left to ask."""
        if self.pending is None:
            return True
        if self.pending == self.worker.task_configs_of(self.name):
            self.pending = None
            return True
        if self.worker.request_task_reconfiguration(self.name, self.pending):
            self.pending = None
            return True
        return False


class _BothClusters(Runner):
    """A runner that reads the source and writes the target with MirrorSourceConfig's
    settings (the source connector and its tasks)."""

    def setup(self, values: Mapping[str, str]) -> None:
        self.settings = SourceSettings.parse(values)
        flow = self.worker.flow
        self.selection = TopicSelection.of(flow.source, flow.target, self.settings)
        self.source = cluster_admin(values, "source", self.worker.worker_id)
        self.target = cluster_admin(values, "target", self.worker.worker_id)

    def close(self) -> None:
        for client in (getattr(self, "source", None), getattr(self, "target", None)):
            if client is not None:
                client.close()


class SourceConnector(_BothClusters, ConnectorRunner):
    def setup(self, values: Mapping[str, str]) -> None:
        super().setup(values)
        self.selected: dict[str, int] = {}
        now = time.monotonic()
        self.next_refresh = now
        self.next_lag_check = now
        self.next_configs = now
        self.next_acls = now

    def tick(self) -> float:
        now = time.monotonic()
        if not self.settings.enabled:
            self.worker.report(topics=[], lagging_topics=[])
            self.want_task_configs([])
            return IDLE_S
        if now >= self.next_refresh:
            self.refresh()
            interval = self.settings.refresh_topics_interval_s
            self.next_refresh = now + (interval if self.settings.refresh_topics_enabled else 1e9)
        elif now >= self.next_lag_check:
            self.report_lag(self.target.topics())
        settled = self.push_pending()
        if self.settings.sync_topic_configs_enabled and now >= self.next_configs:
            self.sync_topic_configs()
            self.next_configs = now + self.settings.sync_topic_configs_interval_s
        if self.settings.sync_topic_acls_enabled and now >= self.next_acls:
            self.sync_topic_acls()
            self.next_acls = now + self.settings.sync_topic_acls_interval_s
        due = [self.next_refresh, self.next_lag_check]
        if self.settings.sync_topic_configs_enabled:
            due.append(self.next_configs)
        if self.settings.sync_topic_acls_enabled:
            due.append(self.next_acls)
        wait = max(0.0, min(due) - time.monotonic())
        return wait if settled else min(wait, RETRY_SOON_S)

    def refresh(self) -> None:
        """MirrorSourceConnector.refreshTopicPartitions: the selected topics and their
        partitions; new task configs when they changed."""
        self.selected = {
            topic: count
            for topic, count in self.source.topics().items()
            if self.selection.matched_filter(topic) is not None
        }
        self.report_lag(self.target.topics())
        configs = source_task_configs(self.config, self.selected, self.settings.tasks_max)
        self.want_task_configs(configs)

    def report_lag(self, target_topics: Mapping[str, int]) -> None:
        self.target_topics = dict(target_topics)
        self.next_lag_check = time.monotonic() + LAG_CHECK_S
        remote = self.selection.remote_topic
        topics = [
            {
                "source_topic": topic,
                "remote_topic": remote(topic),
                "matched_filter": self.selection.matched_filter(topic) or "",
            }
            for topic in sorted(self.selected)
        ]
        lagging = sorted(t for t, n in self.selected.items() if target_topics.get(remote(t), 0) < n)
        self.worker.report(topics=topics, lagging_topics=lagging)

    def replicated(self) -> list[str]:
        """Source topics whose remote topic exists (MirrorSourceConnector.topicsBeingReplicated)."""
        known = getattr(self, "target_topics", {})
        return sorted(t for t in self.selected if self.selection.remote_topic(t) in known)

    def sync_topic_configs(self) -> None:
        topics = self.replicated()
        if not topics:
            return
        source = self.source.topic_configs(topics)
        remote = {t: self.selection.remote_topic(t) for t in topics}
        target = self.target.topic_configs(list(remote.values()))
        exclude = self.settings.config_properties_exclude
        ops = {
            remote[t]: config_sync_ops(source[t], target.get(remote[t], []), exclude)
            for t in topics
            if t in source
        }
        ops = {topic: o for topic, o in ops.items() if o}
        if ops:
            failed = [r for r in self.target.alter_topic_configs(ops) if r.get("error_code")]
            if failed:
                raise CallFailed("syncing topic configs", 200, failed[0])
            logger.info("%s: synced configs of %d topic(s)", self.worker.flow.name, len(ops))

    def sync_topic_acls(self) -> None:
        wanted = {
            tuple(sorted(acl.items())): acl
            for acl in (target_acl(a, self.selection) for a in self.source.topic_acls())
            if acl is not None
        }
        if not wanted:
            return
        present = {tuple(sorted(a.items())) for a in self.target.topic_acls()}
        missing = [acl for key, acl in wanted.items() if key not in present]
        if missing:
            failed = [r for r in self.target.create_acls(missing) if r.get("error_code")]
            if failed:
                raise CallFailed("syncing topic ACLs", 200, failed[0])
            logger.info("%s: synced %d topic ACL(s)", self.worker.flow.name, len(missing))


class SourceTask(_BothClusters):
    kind = "task"

    def setup(self, values: Mapping[str, str]) -> None:
        super().setup(values)
        self.assigned = assigned_partition_counts(values)
        self.ensured: dict[str, int] = {}
        self.verified = time.monotonic()

    def tick(self) -> float:
        if time.monotonic() - self.verified > REVERIFY_S:
            self.ensured, self.verified = {}, time.monotonic()
        remote = self.selection.remote_topic
        missing = {t: n for t, n in self.assigned.items() if self.ensured.get(remote(t), 0) < n}
        if not missing:
            return REVERIFY_S
        present = self.target.topics()
        create = sorted(t for t in missing if remote(t) not in present)
        grow = sorted(
            t for t in missing if remote(t) in present and present[remote(t)] < missing[t]
        )
        for topic in missing:
            if remote(topic) in present and present[remote(topic)] >= missing[topic]:
                self.ensured[remote(topic)] = present[remote(topic)]
        if create:
            self.create(create, missing)
        if grow:
            self.grow(grow, missing)
        still = [t for t in self.assigned if self.ensured.get(remote(t), 0) < self.assigned[t]]
        return RETRY_SOON_S if still else REVERIFY_S

    def create(self, topics: list[str], counts: Mapping[str, int]) -> None:
        configs = self.source.topic_configs(topics)
        exclude = self.settings.config_properties_exclude
        wanted = [
            {
                "name": self.selection.remote_topic(t),
                "num_partitions": counts[t],
                "replication_factor": self.settings.replication_factor,
                "configs": creation_configs(configs.get(t, []), exclude),
            }
            for t in topics
        ]
        for result in self.target.create_topics(wanted):
            code = result.get("error_code", 0)
            if code == 0:
                self.ensured[result["name"]] = int(result.get("num_partitions", 0)) or 1
                logger.info("%s: created remote topic %s", self.worker.flow.name, result["name"])
            elif code != TOPIC_ALREADY_EXISTS:  # made meanwhile: checked again next tick
                raise CallFailed(f"creating remote topic {result.get('name')}", 200, result)

    def grow(self, topics: list[str], counts: Mapping[str, int]) -> None:
        wanted: list[dict[str, Any]] = [
            {"name": self.selection.remote_topic(t), "count": counts[t]} for t in topics
        ]
        for asked, result in zip(wanted, self.target.create_partitions(wanted), strict=True):
            code = result.get("error_code", 0)
            if code in (0, INVALID_PARTITIONS):  # grown, or it has as many already
                self.ensured[asked["name"]] = int(asked["count"])
            else:
                raise CallFailed(f"growing remote topic {asked['name']}", 200, result)


class HeartbeatConnector(ConnectorRunner):
    def setup(self, values: Mapping[str, str]) -> None:
        self.settings = HeartbeatSettings.parse(values)

    def tick(self) -> float:
        configs = [{**self.config, TASK_INDEX: "0"}] if self.settings.emit_enabled else []
        self.want_task_configs(configs)
        return IDLE_S if self.pending is None else RETRY_SOON_S


class HeartbeatTask(Runner):
    kind = "task"

    def setup(self, values: Mapping[str, str]) -> None:
        self.settings = HeartbeatSettings.parse(values)
        self.target = cluster_admin(values, "target", self.worker.worker_id)
        self.replication_factor = int(values.get("heartbeats.topic.replication.factor", "3"))
        self.topic_ready = False

    def close(self) -> None:
        target = getattr(self, "target", None)
        if target is not None:
            target.close()

    def tick(self) -> float:
        response = self.target.request("GET", f"/api/v1/topics/{HEARTBEATS_TOPIC}")
        if response.status_code == 404:
            wanted = {
                "name": HEARTBEATS_TOPIC,
                "num_partitions": 1,
                "replication_factor": self.replication_factor,
            }
            (result,) = self.target.create_topics([wanted])
            if result.get("error_code") not in (0, TOPIC_ALREADY_EXISTS):
                raise CallFailed("creating the heartbeats topic", 200, result)
        elif response.status_code != 200:
            raise CallFailed("emitting a heartbeat", response.status_code, None)
        self.worker.report(emitted_heartbeat_ms=int(time.time() * 1000))
        return float(self.settings.interval_s)


class CheckpointConnector(ConnectorRunner):
    """No consumer group offsets live in a control plane: nothing to checkpoint, no task."""

    def tick(self) -> float:
        self.want_task_configs([])
        return IDLE_S if self.pending is None else RETRY_SOON_S


CONNECTOR_RUNNERS: dict[str, Callable[[Worker, str, dict[str, str], bool], Runner]] = {
    SOURCE_CONNECTOR: SourceConnector,
    HEARTBEAT_CONNECTOR: HeartbeatConnector,
    CHECKPOINT_CONNECTOR: CheckpointConnector,
}
TASK_RUNNERS: dict[str, Callable[[Worker, str, dict[str, str], bool], Runner]] = {
    SOURCE_CONNECTOR: SourceTask,
    HEARTBEAT_CONNECTOR: HeartbeatTask,
}

"""One flow's worker on a mirror node (Connect's DistributedHerder, the part MirrorMaker needs).

It serves the flow's REST server, joins the flow's group through the control plane and
heartbeats (a long poll: the answer comes as soon as the group, its task configs or the
configuration change), runs what the leader assigned it, and reports its connectors' and tasks'
states. As leader it assigns the connectors and tasks over the members (Connect's EagerAssignor)
and persists task configs: its own connectors', and those followers post to its REST server,
signed with the flow's session key. Every leader write carries its generation; a stale one is
refused and the worker follows the group's answer instead.

A posted task config is never trusted (a principal holding the session key could otherwise
point both clusters at its own URL): the leader refuses (400) any config that is
not what the connector derives from the stored configuration, persists the rest in the poster's
name, and every worker runs a task with the connector config it derives itself, taking only the
task's own keys (its index, its topic-partitions) from what was persisted.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from controlplane.controller.mirror.assignment import eager_assignment, task_id, task_index
from controlplane.controller.mirror.config import CONNECTORS, Flow, MirrorMakerConfig
from controlplane.controller.mirror.settings import WorkerSettings
from controlplane.controller.mirror.task_configs import task_config_problems, task_config_to_run
from mirror.node.clients import CallFailed, ClusterUnreachable, CoordinatorClient, Endpoint
from mirror.node.connectors import (
    CONNECTOR_RUNNERS,
    PAUSED,
    TASK_RUNNERS,
    UNASSIGNED,
    Backoff,
    Runner,
    cluster_admin,
)
from mirror.node.providers import Providers
from mirror.node.rest import Answer, RestServer, client_tls, error, server_tls
from mirror.node.signature import MEMBER_HEADER, header, signature_headers, signature_problem

logger = logging.getLogger("mirror.node")
say = logging.getLogger("mirror.node.progress")  # what the terminal shows of a node's progress

GROUP_ERRORS = {22: "ILLEGAL_GENERATION", 25: "UNKNOWN_MEMBER_ID", 27: "REBALANCE_IN_PROGRESS"}
UNKNOWN_MEMBER_ID = 25
VERSION = "0.1.0"


class FlowWorker:
    def __init__(
        self,
        *,
        flow: Flow,
        config: MirrorMakerConfig,
        providers: Providers,
        coordinator: Endpoint,
        on_config_offset: Callable[[int], None] = lambda offset: None,
    ) -> None:
        self.flow = flow
        self.config = config
        self.providers = providers
        self.on_config_offset = on_config_offset
        worker_resolution = providers.resolve(config.worker_config(flow))
        self.worker_trace = worker_resolution.trace()
        self.settings = WorkerSettings.parse(worker_resolution.values)
        host = self.settings.host
        self.rest_host = host if host not in ("", "0.0.0.0", "::") else socket.gethostname()
        self.worker_id = flow.worker_id(self.rest_host)
        self.member_id = f"{self.worker_id}-{uuid.uuid4()}"
        tls = server_tls(self.settings.tls) if self.settings.protocol == "https" else None
        self.rest = RestServer(self, host, self.settings.port, tls)
        self.rest_url = f"{self.settings.protocol}://{self.rest_host}:{self.rest.port}"
        self.peer_tls = client_tls(self.settings.tls) if tls is not None else True
        self.coordinator = CoordinatorClient(
            Endpoint(coordinator.name, coordinator.url, coordinator.token, self.worker_id),
            timeout_s=max(10.0, self.settings.heartbeat_interval_ms / 1000 + 10),
        )
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._joined = False
        self.group: dict[str, Any] = {}
        self.runners: dict[str, Runner] = {}
        self.reported: dict[str, Any] = {}
        self.target_cluster_id: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"{flow.name}:group", daemon=True)

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self.rest.start(f"{self.flow.name}:rest")
        say.info(
            "%s: REST server at %s (worker id %s)", self.flow.name, self.rest_url, self.worker_id
        )
        if self.worker_trace:
            say.warning("%s: %s", self.flow.name, self.worker_trace)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15)
        self._reconcile(stop_all=True)
        if self._joined:
            try:
                self.coordinator.group(
                    self.flow.source, self.flow.target, "leave", {"member_id": self.member_id}
                )
            except (ClusterUnreachable, CallFailed) as failure:
                logger.warning("%s: could not leave the group: %s", self.flow.name, failure)
        self.rest.stop()
        self.coordinator.close()

    def update_config(self, config: MirrorMakerConfig, providers: Providers) -> None:
        """The configuration changed (not the worker settings): connectors get their new
        configs (a filter change takes effect at the connector's next refresh, no restart)."""
        with self._lock:
            self.config, self.providers = config, providers
        self._reconcile()

    # --- group membership ------------------------------------------------------------------
    def _run(self) -> None:
        backoff = Backoff(0.25, 5.0)
        while not self._stop.is_set():
            try:
                answer = self._heartbeat() if self._joined else self._join()
                self._apply(answer)
                backoff.reset()
            except (ClusterUnreachable, CallFailed) as failure:
                delay = backoff.next()
                logger.warning(
                    "%s: group call failed: %s (retrying in %.1fs)", self.flow.name, failure, delay
                )
                self._stop.wait(delay)

    def _join(self) -> dict[str, Any]:
        body = {
            "member_id": self.member_id,
            "worker_id": self.worker_id,
            "rest_url": self.rest_url,
            "session_timeout_ms": self.settings.session_timeout_ms,
        }
        answer: dict[str, Any] = self.coordinator.group(
            self.flow.source, self.flow.target, "join", body
        )
        if answer.get("error_code") == 0:
            self._joined = True
        else:
            logger.warning("%s: join refused: %s", self.flow.name, answer.get("error_message"))
            self._stop.wait(1.0)
        return answer

    def _heartbeat(self) -> dict[str, Any]:
        with self._lock:
            body = {
                "member_id": self.member_id,
                "report": self._report(),
                "known_flow_offset": self.group.get("flow_offset", -1),
                "known_config_offset": self.group.get("config_offset", -1),
                "wait_ms": self.settings.heartbeat_interval_ms,
            }
        answer: dict[str, Any] = self.coordinator.group(
            self.flow.source, self.flow.target, "heartbeat", body
        )
        return answer

    def _apply(self, answer: dict[str, Any]) -> None:
        code = answer.get("error_code", 0)
        if code == UNKNOWN_MEMBER_ID:
            say.warning(
                "%s: no longer a member (%s): joining again",
                self.flow.name,
                answer.get("error_message"),
            )
            with self._lock:
                self._joined, self.group = False, {}
            self._reconcile(stop_all=True)
            return
        if code:
            return
        with self._lock:
            before = self.group
            self.group = {**before, **answer}
        if answer.get("generation") != before.get("generation"):
            role = "leader" if self.is_leader() else f"follower of {answer.get('leader_worker_id')}"
            say.info(
                "%s: generation %s with %d member(s), %s",
                self.flow.name,
                answer.get("generation"),
                len(answer.get("members", [])),
                role,
            )
        if "config_offset" in answer:
            self.on_config_offset(int(answer["config_offset"]))
        if self.is_leader():
            self._lead()
        self._reconcile()

    def is_leader(self) -> bool:
        with self._lock:
            return bool(self.group) and self.group.get("leader_id") == self.member_id

    # --- leading -----------------------------------------------------------------------------
    def _lead(self) -> None:
        """Assign connectors and tasks for this generation when the assignment is missing or
        out of date (members or task counts changed)."""
        with self._lock:
            group = self.group
            if "members" not in group:
                return
            members = [(m["member_id"], m["worker_id"]) for m in group["members"]]
            counts = {c: len(group.get("task_configs", {}).get(c, [])) for c in CONNECTORS}
            wanted = [
                {"member_id": a.member_id, "connectors": list(a.connectors), "tasks": list(a.tasks)}
                for a in eager_assignment(members, CONNECTORS, counts)
            ]
            if sorted(group.get("assignments", []), key=str) == sorted(wanted, key=str):
                return
            body = {
                "member_id": self.member_id,
                "generation": group["generation"],
                "assignments": wanted,
            }
        answer = self.coordinator.group(self.flow.source, self.flow.target, "sync", body)
        if answer.get("error_code") == 0:
            with self._lock:
                self.group["assignments"] = wanted
                self.group["assignment"] = answer.get("assignment")
        else:
            logger.info("%s: assignment refused: %s", self.flow.name, answer.get("error_message"))

    def task_configs_of(self, connector: str) -> list[dict[str, str]] | None:
        with self._lock:
            found = self.group.get("task_configs", {}).get(connector)
            return None if found is None else list(found)

    def request_task_reconfiguration(self, connector: str, configs: list[dict[str, str]]) -> bool:
        """Get new task configs persisted: by the control plane when this worker leads, else by
        posting them to the leader's REST server, signed (Connect's follower -> leader hop)."""
        with self._lock:
            leader_url = self.group.get("leader_url", "")
            key = self.group.get("session_key")
        if self.is_leader():
            return self._persist(connector, configs, self.member_id)[0] == 204
        if not leader_url or not key:
            return False
        body = json.dumps(configs).encode()
        headers = {
            "Content-Type": "application/json",
            MEMBER_HEADER: self.member_id,
            **signature_headers(key, body),
        }
        url = f"{leader_url}/connectors/{connector}/tasks"
        try:
            response = httpx.post(
                url, content=body, headers=headers, timeout=10, verify=self.peer_tls
            )
        except httpx.HTTPError as failure:
            logger.warning(
                "%s: leader at %s unreachable: %s",
                self.flow.name,
                leader_url,
                type(failure).__name__,
            )
            return False
        if response.status_code not in (200, 204):
            logger.info(
                "%s: leader answered %d to new task configs of %s",
                self.flow.name,
                response.status_code,
                connector,
            )
            return False
        say.info(
            "%s: new task configs of %s (%d task(s)) sent to the leader at %s",
            self.flow.name,
            connector,
            len(configs),
            leader_url,
        )
        return True

    def _persist(self, connector: str, configs: list[dict[str, str]], poster: str) -> Answer:
        """Persist task configs through the control plane, in the name of `poster` (the member
        whose connector computed them); the control plane checks them again."""
        with self._lock:
            generation = self.group.get("generation", 0)
            workers = {m["member_id"]: m["worker_id"] for m in self.group.get("members", [])}
        body = {
            "member_id": self.member_id,
            "generation": generation,
            "connector": connector,
            "task_configs": configs,
            "poster_member_id": poster,
            "poster_worker_id": workers.get(
                poster, self.worker_id if poster == self.member_id else ""
            ),
        }
        try:
            answer = self.coordinator.group(
                self.flow.source, self.flow.target, "task-configs", body
            )
        except ClusterUnreachable as failure:
            logger.warning("%s: could not persist task configs: %s", self.flow.name, failure)
            return error(503, "The control plane is unreachable")
        except CallFailed as refused:  # INVALID_CONFIG, INVALID_REQUEST: Connect's 400
            logger.warning("%s: task configs refused: %s", self.flow.name, refused)
            message = refused.body.get("error_message") if isinstance(refused.body, dict) else None
            return error(400 if refused.status == 400 else 503, message or "Refused")
        if answer.get("error_code"):
            logger.info("%s: task configs refused: %s", self.flow.name, answer.get("error_message"))
            return error(409, "Cannot complete request because of a rebalance")
        with self._lock:
            self.group.setdefault("task_configs", {})[connector] = configs
        say.info(
            "%s: persisted task configs of %s (%d task(s)) as leader, computed by %s",
            self.flow.name,
            connector,
            len(configs),
            body["poster_worker_id"] or poster,
        )
        self._lead()
        self._reconcile()
        return 204, None

    # --- what this worker runs ----------------------------------------------------------------
    def _reconcile(self, stop_all: bool = False) -> None:
        """Start, reconfigure, pause and stop runners to match this worker's assignment."""
        with self._lock:
            wanted: dict[str, dict[str, str]] = {}
            assignment = None if stop_all else self.group.get("assignment")
            if assignment:
                for name in assignment["connectors"]:
                    wanted[name] = self.config.connector_config(self.flow, name)
                for task in assignment["tasks"]:
                    connector = task.rsplit("-", 1)[0]
                    configs = self.group.get("task_configs", {}).get(connector, [])
                    if task_index(task) < len(configs):
                        wanted[task] = task_config_to_run(
                            self.config.connector_config(self.flow, connector),
                            connector,
                            configs[task_index(task)],
                        )
            states = self.group.get("target_states", {})
            gone = [self.runners.pop(n) for n in list(self.runners) if n not in wanted]
            for name, config in wanted.items():
                connector = name if name in CONNECTORS else name.rsplit("-", 1)[0]
                paused = states.get(connector) == PAUSED
                runner = self.runners.get(name)
                if runner is None:
                    make = CONNECTOR_RUNNERS if name in CONNECTORS else TASK_RUNNERS
                    runner = make[connector](self, name, config, paused)
                    self.runners[name] = runner
                    runner.start()
                    say.info("%s: running %s on %s", self.flow.name, name, self.worker_id)
                else:
                    runner.reconfigure(config)
                    runner.set_paused(paused)
        for runner in gone:
            runner.stop()

    def report(self, **fields: Any) -> None:
        """A runner's news for the next heartbeat (topics, lag, the last emitted heartbeat)."""
        with self._lock:
            self.reported.update(fields)

    def _report(self) -> dict[str, Any]:
        connectors = {n: r.status() for n, r in self.runners.items() if n in CONNECTORS}
        tasks = {n: r.status() for n, r in self.runners.items() if n not in CONNECTORS}
        report: dict[str, Any] = {
            "worker_id": self.worker_id,
            "rest_url": self.rest_url,
            "connectors": connectors,
            "tasks": tasks,
        }
        if "MirrorSourceConnector" in connectors:
            report["topics"] = self.reported.get("topics")
            report["lagging_topics"] = self.reported.get("lagging_topics")
        if any(n.startswith("MirrorHeartbeatConnector-") for n in tasks):
            report["emitted_heartbeat_ms"] = self.reported.get("emitted_heartbeat_ms")
        return report

    # --- the REST server's Herder -------------------------------------------------------------
    def server_info(self) -> dict[str, Any]:
        if self.target_cluster_id is None:
            values = self.providers.resolve(
                self.config.connector_config(self.flow, CONNECTORS[0])
            ).values
            client = cluster_admin(values, "target", self.worker_id)
            try:
                self.target_cluster_id = client.cluster_id()
            except (ClusterUnreachable, CallFailed):
                pass
            finally:
                client.close()
        return {"version": VERSION, "commit": "", "kafka_cluster_id": self.target_cluster_id}

    def connector_names(self) -> list[str]:
        return sorted(CONNECTORS)

    def connector_config(self, name: str) -> dict[str, str] | None:
        if name not in CONNECTORS:
            return None
        with self._lock:
            return self.config.connector_config(self.flow, name)

    def connector_info(self, name: str) -> dict[str, Any] | None:
        config = self.connector_config(name)
        if config is None:
            return None
        count = len(self.task_configs_of(name) or [])
        return {
            "name": name,
            "config": config,
            "tasks": [{"connector": name, "task": i} for i in range(count)],
            "type": "source",
        }

    def connector_tasks(self, name: str) -> list[dict[str, Any]] | None:
        if name not in CONNECTORS:
            return None
        return [
            {"id": {"connector": name, "task": i}, "config": config}
            for i, config in enumerate(self.task_configs_of(name) or [])
        ]

    def connector_status(self, name: str) -> dict[str, Any] | None:
        if name not in CONNECTORS:
            return None
        with self._lock:
            workers = {m["member_id"]: m["worker_id"] for m in self.group.get("members", [])}
            runs = {
                item: a["member_id"]
                for a in self.group.get("assignments", [])
                for item in (*a["connectors"], *a["tasks"])
            }
            statuses = dict(self.group.get("member_statuses", {}))
            statuses[self.member_id] = {
                "connectors": {n: r.status() for n, r in self.runners.items() if n in CONNECTORS},
                "tasks": {n: r.status() for n, r in self.runners.items() if n not in CONNECTORS},
            }
            count = len(self.group.get("task_configs", {}).get(name, []))

        def entry(item: str, kind: str) -> dict[str, Any]:
            member = runs.get(item, "")
            status = statuses.get(member, {}).get(kind, {}).get(item) or {"state": UNASSIGNED}
            found = {"state": status["state"], "worker_id": workers.get(member)}
            if status.get("trace"):
                found["trace"] = status["trace"]
            return found

        tasks = []
        for index in range(count):
            tasks.append({"id": index, **entry(task_id(name, index), "tasks")})
        return {
            "name": name,
            "connector": entry(name, "connectors"),
            "tasks": tasks,
            "type": "source",
        }

    def alter_target_state(self, name: str, state: str, authorization: str) -> Answer:
        """Pause or resume through the control plane, as the caller (its own Bearer token):
        authorized and audited as whoever asked, never as this node."""
        if name not in CONNECTORS:
            return error(404, f"Connector {name} not found")
        if not authorization:
            return error(401, "Send your control plane Bearer token in Authorization.")
        action = "pause" if state == PAUSED else "resume"
        path = f"/api/v1/mirror/flows/{self.flow.source}/{self.flow.target}/{action}"
        response = self.coordinator.request(
            "PUT", path, params={"connector": name}, headers={"Authorization": authorization}
        )
        if response.status_code == 200:
            return 202, None
        try:
            message = response.json().get("error_message") or "refused"
        except ValueError:
            message = "refused"
        return error(response.status_code, message)

    def receive_task_configs(
        self, name: str, body: bytes, headers: Mapping[str, str], forward: bool | None
    ) -> Answer:
        """POST /connectors/{name}/tasks: a follower's new task configs (Connect's
        putTaskConfigs): signed or 403; the leader persists them, a follower forwards them to
        the leader it knows (once)."""
        with self._lock:
            key = self.group.get("session_key")
            leader_url = self.group.get("leader_url", "")
        problem = signature_problem(key, body, headers)
        if problem is not None:
            logger.warning(
                "%s: refused unsigned or wrongly signed task configs for %s",
                self.flow.name,
                name[:80],
            )
            return error(403, problem)
        if self._stop.is_set():
            return error(404, f"Flow {self.flow.name} is not served here")
        if name not in CONNECTORS:
            return error(404, f"Connector {name} not found")
        try:
            configs = json.loads(body or b"null")
        except ValueError:
            return error(400, "The body is not JSON")
        if not isinstance(configs, list) or not all(
            isinstance(c, dict) and all(isinstance(v, str) for v in c.values()) for c in configs
        ):
            return error(400, "Expected a list of task configs (objects of strings)")
        if self.is_leader():
            return self._persist_posted(name, configs, header(headers, MEMBER_HEADER) or "")
        if forward is False or not leader_url:
            return error(
                409,
                "Cannot complete request because of a conflicting operation "
                "(e.g. worker rebalance)",
            )
        try:
            response = httpx.post(
                f"{leader_url}/connectors/{name}/tasks",
                params={"forward": "false"},
                content=body,
                headers={
                    k: v
                    for k, v in headers.items()
                    if k.lower().startswith(("x-connect-", "x-mirror-"))
                }
                | {"Content-Type": "application/json"},
                timeout=10,
                verify=self.peer_tls,
            )
        except httpx.HTTPError:
            return error(409, "The leader is unreachable (a rebalance is likely under way)")
        return response.status_code, (response.json() if response.content else None)

    def _persist_posted(self, name: str, configs: list[dict[str, str]], poster: str) -> Answer:
        """A follower's task configs, as leader: from a member of this generation, and exactly
        what the connector derives from the stored configuration (else 400, naming the keys)."""
        with self._lock:
            members = {m["member_id"]: m["worker_id"] for m in self.group.get("members", [])}
            runs = [
                a["member_id"] for a in self.group.get("assignments", []) if name in a["connectors"]
            ]
            config = self.config
        if not poster:
            return error(400, f"Name the posting member in {MEMBER_HEADER}")
        if poster not in members or (runs and runs[0] != poster):
            # A member this leader does not know yet, or not the one running the connector in
            # this generation: a rebalance is under way (the poster retries, or stops).
            return error(
                409,
                "Cannot complete request because of a conflicting operation "
                "(e.g. worker rebalance)",
            )
        problems = task_config_problems(config, self.flow, name, configs)
        if problems:
            logger.warning(
                "%s: refused task configs of %s posted by %s: %s",
                self.flow.name,
                name,
                members[poster],
                "; ".join(problems),
            )
            return error(
                400,
                f"Task configs of {name} are not what it derives from the stored "
                f"configuration: {'; '.join(problems)}",
            )
        return self._persist(name, configs, poster)

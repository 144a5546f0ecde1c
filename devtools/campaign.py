"""The fault campaign: the full stack under steady load, one fault at a time, checked after each.

The stack runs on a PostgreSQL cluster and a redis-server of the campaign's own (a throwaway
`initdb` in a temporary directory and a private `redis-server`, each on a free port), because the
campaign restarts them: the machine's shared services are never touched. On them: two web nodes
(the control plane's server, both listeners each), two `run_controller` processes (one active),
six simulated brokers heartbeating on web node B's internal listener, and admin writers sending
IncrementalAlterConfigs to both web nodes' public listener (each write a new value and a request id
of its own, retried on the other node with the same id until acknowledged or given up).

Faults, in order: kill -9 the active controller; SIGSTOP it past its lease, then SIGCONT (it must
not write again); restart Redis; restart PostgreSQL; kill -9 web node A (and start it again);
kill -9 the Kafka protocol listener (`serve_kafka`) while a stock client (kafka-python) creates
topics through it, and start it again (the client reconnects; nothing is applied twice); hold 50
slow connections on both public listeners for 30 s; lose two of the three racks' brokers
at once (their heartbeats stop): after the session timeout every partition with a surviving ISR
member must have a live leader, and when the racks come back their brokers rejoin the ISR and
the preferred leaders return (Celery beat's rebalance); restart every broker with a new
incarnation (kill -9 the simulator, start it again): each registers anew once its old session
lapsed, and every ISR must be whole again and every preferred leader lead again
(devtools/campaign_brokers.py has the broker faults). After each: every acknowledged write
is in the metadata log exactly once, `verify_metadata` is clean, and the time until writes were
acknowledged again is measured (and, for the controller faults, until a new controller held the
lease). Through it all, history clients (`devtools.history`) on both web nodes write and read the
same keys (topic configs as registers, ACLs and quotas as sets), recording every operation's
invocation, completion and outcome; at the end the checker (`devtools.linearizability`, Wing &
Gong's search with Lowe's memoization, as Porcupine) proves the whole history linearizable, or
names the smallest window that is not. The report (`FaultCampaign.report`) is JSON; the table
of docs/operators/fault-campaign.md is made from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from devtools import campaign_brokers
from devtools.admin_writers import AdminWriters
from devtools.history import HistoryClients
from devtools.private_services import (
    PrivatePostgres,
    PrivateRedis,
    private_services,
)
from devtools.slow_clients import SlowClients, probe
from devtools.stack import PYTHON, ROOT, Http, Stack, free_port, running_stack, wait_for
from devtools.wire_writers import WireWriter

TOPIC = "campaign"
BROKERS = 6
LEASE_MS = 2000
SESSION_TIMEOUT_MS = 6000
RACKS = 3  # the simulator puts broker i on rack-{i % RACKS}
LOG_DIRS = 2  # per broker; a replica lives in one of them
HISTORY_CLIENTS = 4  # threads recording the history the linearizability checker proves
LEADER_IMBALANCE_CHECK_S = 3  # Celery beat's preferred-leader rebalance, often for the campaign
# A service restarting is answered 503 (NOT_CONTROLLER, Retry-After) or 504: never a 500.
UNAVAILABLE = frozenset({"503", "504"})


@dataclasses.dataclass
class FaultResult:
    fault: str
    seconds: float
    writes_acknowledged: int
    recovery_s: float | None = None  # the longest the writers went without an acknowledgement
    failover_s: float | None = None  # until a new controller held the lease
    brokers_fenced: int = 0
    verify_metadata: bool = False
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


class FaultCampaign:
    def __init__(self, stack: Stack, postgres: PrivatePostgres, redis_server: PrivateRedis) -> None:
        self.stack = stack
        self.postgres = postgres
        self.redis_server = redis_server
        self.web: dict[str, Http] = {}
        self.controllers = 0
        self.results: list[FaultResult] = []
        self.writers: AdminWriters | None = None
        self.history: HistoryClients | None = None
        self.started = 0.0
        self.broker_token = stack.tokens["broker"]
        self.server_5xx_of_dead_nodes: Counter[str] = Counter()
        self.simulator: subprocess.Popen[bytes] | None = None
        self.wire_writer: WireWriter | None = None
        self.kafka_port = 0

    # --- the stack and its load ---------------------------------------------------------
    def start(self) -> None:
        self.started = time.monotonic()
        self.web["web-a"] = self.stack.start_web("web-a", workers=1, threads=8)
        self.web["web-b"] = self.stack.start_web("web-b", workers=1, threads=8)
        for _ in range(2):
            self.start_controller()
        wait_for(lambda: self.stack.lease()[0].startswith("controller-"), 60, "a controller")
        web_b = self.web["web-b"]
        self.start_simulator()
        self.stack.start_worker()
        self.stack.start_beat()
        self.kafka_port = free_port()
        self.start_kafka_listener()
        wait_for(lambda: self.unfenced() == BROKERS, 90, "every broker unfenced")
        wait_for(
            lambda: web_b.get(f"/api/v1/topics/{TOPIC}", self.stack.tokens["admin"])[0] == 200,
            60,
            "the campaign's topic",
        )
        writers = AdminWriters(
            lambda: list(self.web.values()), self.stack.tokens["admin"], topic=TOPIC
        )
        self.writers = writers
        writers.start()
        wait_for(lambda: len(writers.acknowledged()) >= 20, 60, "writes flowing")
        history = HistoryClients(
            lambda: list(self.web.values()),
            self.stack.tokens["admin"],
            threads=HISTORY_CLIENTS,
            replication_factor=3,
        )
        self.history = history
        history.start()
        wait_for(lambda: len(history.history()) >= 20, 60, "history operations flowing")
        wire = WireWriter(f"127.0.0.1:{self.kafka_port}", self.stack.tokens["admin"])
        self.wire_writer = wire
        wire.start()
        wait_for(lambda: len(wire.acknowledged) >= 3, 60, "Kafka-protocol writes flowing")

    def start_simulator(self) -> None:
        """The six simulated brokers on web node B's internal listener, commands on stdin: each
        start is a new incarnation of every broker."""
        argv = campaign_brokers.simulator_argv(
            self.web["web-b"],
            broker_token=self.broker_token,
            admin_token=self.stack.tokens["admin"],
            brokers=BROKERS,
            racks=RACKS,
            log_dirs=LOG_DIRS,
            topic=TOPIC,
        )
        self.simulator = self.stack.spawn("simulator", argv, stdin=subprocess.PIPE)

    def start_kafka_listener(self) -> None:
        """`serve_kafka` (SASL_PLAINTEXT), on the same port across restarts."""
        self.stack.spawn(
            "serve_kafka",
            [
                PYTHON,
                "manage.py",
                "serve_kafka",
                "--listener",
                f"SASL_PLAINTEXT://127.0.0.1:{self.kafka_port}",
            ],
        )
        wait_for(lambda: _listening(self.kafka_port), 30, "serve_kafka to listen")

    def start_controller(self) -> None:
        self.controllers += 1
        self.stack.start_controller(f"controller-{self.controllers}", 3000 + self.controllers)

    def unfenced(self) -> int:
        status, cluster = self.web["web-b"].get("/api/v1/cluster", self.stack.tokens["admin"])
        return int(cluster["broker_states"]["UNFENCED"]) if status == 200 else -1

    def log_end(self) -> int:
        return int(self.stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])

    def fencings_since(self, offset: int) -> int:
        rows = self.stack.sql(
            'SELECT count(*) FROM cp_metadata_record WHERE "offset" > %s'
            " AND record_type = 'BrokerRegistrationChangeRecord'"
            " AND (data->>'fenced')::int = 1",
            offset,
        )
        return int(rows[0][0])

    # --- faults -------------------------------------------------------------------------
    def run_fault(self, name: str, inject: Callable[[], dict[str, Any]]) -> FaultResult:
        writers = self.writers
        assert writers is not None
        acknowledged_before = len(writers.acknowledged())
        offset = self.log_end()
        began = time.monotonic()
        extra = inject()
        injected = time.monotonic()
        wait_for(lambda: writers.first_acknowledged_after(injected), 120, f"writes after {name}")
        # Let the cluster settle (every broker unfenced again), then check the log at rest.
        wait_for(lambda: self.unfenced() == BROKERS, 90, f"every broker unfenced after {name}")
        ended = time.monotonic()
        writers.pause()
        if self.history is not None:
            self.history.pause()
        if self.wire_writer is not None:
            self.wire_writer.pause()
        verified, problems = self.verify_metadata()
        if problems:
            extra["verify_metadata_problems"] = problems
        result = FaultResult(
            fault=name,
            seconds=round(ended - began, 1),
            writes_acknowledged=len(writers.acknowledged()) - acknowledged_before,
            recovery_s=_longest_stall(writers.ack_times(), began, ended),
            failover_s=extra.pop("failover_s", None),
            brokers_fenced=self.fencings_since(offset),
            verify_metadata=verified,
            extra=extra,
        )
        writers.resume()
        if self.history is not None:
            self.history.resume()
        if self.wire_writer is not None:
            self.wire_writer.resume()
        self.results.append(result)
        return result

    def active_controller(self) -> tuple[str, int]:
        holder, epoch, _ = self.stack.lease()
        return holder, epoch

    def _new_holder(self, old: str, old_epoch: int, began: float) -> float:
        def taken() -> bool:
            holder, epoch = self.active_controller()
            return holder not in ("", old) and epoch > old_epoch

        wait_for(taken, 60, "a new active controller", every=0.05)
        return round(time.monotonic() - began, 2)

    def kill_active_controller(self) -> dict[str, Any]:
        holder, epoch = self.active_controller()
        began = time.monotonic()
        self.stack.kill(holder, signal.SIGKILL)
        failover = self._new_holder(holder, epoch, began)
        self.start_controller()
        return {"failover_s": failover, "killed": holder}

    def pause_active_controller(self) -> dict[str, Any]:
        holder, epoch = self.active_controller()
        began = time.monotonic()
        self.stack.kill(holder, signal.SIGSTOP)
        failover = self._new_holder(holder, epoch, began)
        time.sleep(LEASE_MS / 1000)  # well past its lease
        self.stack.kill(holder, signal.SIGCONT)
        proc = self.stack.procs[holder]
        exited = wait_for(lambda: proc.poll() is not None, 60, "the paused controller to exit")
        late = self.stack.sql(
            'SELECT count(*) FROM cp_metadata_record WHERE controller_epoch = %s AND "offset" >'
            ' (SELECT min("offset") FROM cp_metadata_record WHERE controller_epoch > %s)',
            epoch,
            epoch,
        )
        self.start_controller()
        return {
            "failover_s": failover,
            "paused": holder,
            "exit_code": proc.returncode if exited else None,
            "records_written_after_losing_the_lease": int(late[0][0]),
        }

    def restart_redis(self) -> dict[str, Any]:
        self.redis_server.restart()
        return {}

    def restart_postgres(self) -> dict[str, Any]:
        self.postgres.restart()
        return {}

    def kill_web_node(self) -> dict[str, Any]:
        self.server_5xx_of_dead_nodes += self.server_errors()  # its counters die with it
        self.stack.kill("web-a", signal.SIGKILL)
        del self.web["web-a"]
        time.sleep(2)
        self.web["web-a"] = self.stack.start_web("web-a", workers=1, threads=8)
        return {}

    def kill_kafka_listener(self) -> dict[str, Any]:
        """kill -9 `serve_kafka` while the stock client writes through it, then start it again
        on the same port: the client reconnects and goes on; nothing is applied twice."""
        wire = self.wire_writer
        assert wire is not None
        before = len(wire.acknowledged)
        self.stack.kill("serve_kafka", signal.SIGKILL)
        killed = time.monotonic()
        time.sleep(1)
        self.start_kafka_listener()
        wait_for(lambda: wire.first_acknowledged_after(killed + 1), 60, "Kafka-protocol writes")
        return {
            "wire_writes_acknowledged_before": before,
            "wire_writes_resumed_after_s": round(
                min(t for t in wire.acknowledged.values() if t > killed) - killed, 2
            ),
        }

    def slow_clients(self, seconds: float = 30.0) -> dict[str, Any]:
        """50 slow connections on web node B's public listener: the process whose internal
        listener the brokers heartbeat on."""
        web_b = self.web["web-b"]
        host, port = web_b.base.removeprefix("http://").split(":")
        offset = self.log_end()
        with SlowClients(host, int(port), count=50, interval_s=5.0) as attack:
            others = probe(
                f"{web_b.base}/api/v1/whoami", self.stack.tokens["admin"], seconds=seconds
            )
            held = attack.summary()
        return {
            "slow_connections": held["connections_held"],
            "closed_by_the_server": held["closed_by_the_server"],
            "brokers_fenced_during_the_attack": self.fencings_since(offset),
            "other_requests": others,
        }

    def lose_two_racks(self) -> dict[str, Any]:
        return campaign_brokers.lose_two_racks(self, brokers=BROKERS, racks=RACKS)

    def restart_every_broker(self) -> dict[str, Any]:
        return campaign_brokers.restart_every_broker(self, brokers=BROKERS)

    def partitions(self) -> list[dict[str, Any]]:
        status, body = self.web["web-b"].get(f"/api/v1/topics/{TOPIC}", self.stack.tokens["admin"])
        return list(body["partitions"]) if status == 200 else []

    def incarnations(self, state: str | None = None) -> dict[int, str]:
        """Broker id -> its registered incarnation (of the brokers in `state`, if given)."""
        status, body = self.web["web-b"].get(
            "/api/v1/brokers?page_size=100", self.stack.tokens["admin"]
        )
        if status != 200:
            return {}
        return {
            int(b["broker_id"]): str(b["incarnation_id"])
            for b in body["results"]
            if state is None or b["state"] == state
        }

    def simulator_command(self, line: str) -> None:
        assert self.simulator is not None and self.simulator.stdin is not None
        self.simulator.stdin.write(f"{line}\n".encode())
        self.simulator.stdin.flush()

    def server_errors(self) -> Counter[str]:
        """5xx answers each web node counted (cp_http_requests_total), by status."""
        counted: Counter[str] = Counter()
        for node in self.web.values():
            try:
                with urllib.request.urlopen(f"{node.base}/metrics", timeout=10) as answer:
                    text = answer.read().decode()
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith("cp_http_requests_total{") and 'status="5' in line:
                    status = line.split('status="')[1][:3]
                    counted[status] += int(float(line.rsplit(" ", 1)[1]))
        return counted

    # --- checks -------------------------------------------------------------------------
    def verify_metadata(self) -> tuple[bool, str]:
        done = self.stack.manage("verify_metadata", check=False, timeout=300)
        return done.returncode == 0, "" if done.returncode == 0 else done.stderr[-2000:]

    def writes_in_log(self) -> dict[str, int]:
        rows = self.stack.sql(
            "SELECT request_id, count(*) FROM cp_metadata_record"
            " WHERE request_id LIKE 'campaign-%%' GROUP BY request_id"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def wire_writes_in_log(self) -> dict[str, Any]:
        """The Kafka-protocol writer's topics: each acknowledged one created once in the log."""
        assert self.wire_writer is not None
        rows = self.stack.sql(
            "SELECT data->>'name', count(*) FROM cp_metadata_record"
            " WHERE record_type = 'TopicRecord' AND data->>'name' LIKE 'wire-campaign-%%'"
            " GROUP BY data->>'name'"
        )
        created = {str(r[0]): int(r[1]) for r in rows}
        acknowledged = set(self.wire_writer.acknowledged)
        return {
            "acknowledged": len(acknowledged),
            "acknowledged_found_in_log_once": sum(1 for t in acknowledged if created.get(t) == 1),
            "duplicates": sum(1 for count in created.values() if count > 1),
            "outcomes": dict(self.wire_writer.outcomes),
        }

    def report(self) -> dict[str, Any]:
        assert self.writers is not None
        acknowledged = {w.request_id for w in self.writers.acknowledged()}
        found = self.writes_in_log()
        recoveries = [r.recovery_s for r in self.results if r.recovery_s is not None]
        failovers = [r.failover_s for r in self.results if r.failover_s is not None]
        elapsed = time.monotonic() - self.started
        statuses = dict(self.writers.statuses)
        # The web nodes' count (brokers' calls too), less the killed node's counted before.
        server_5xx = self.server_errors() + self.server_5xx_of_dead_nodes
        return {
            "campaign": "fault_campaign",
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "setup": {
                "web_nodes": 2,
                "controllers": 2,
                "brokers": BROKERS,
                "admin_writer_threads": self.writers.threads,
                "lease_ms": LEASE_MS,
                "broker_session_timeout_ms": SESSION_TIMEOUT_MS,
                "services": "a private PostgreSQL cluster and redis-server (restarted by faults)",
            },
            "faults": [dataclasses.asdict(r) for r in self.results],
            "load": {
                "seconds": round(elapsed, 1),
                "writes_acknowledged_per_s": round(len(acknowledged) / elapsed, 1),
                "brokers_heartbeating": BROKERS,
            },
            "failover_s": _spread(failovers),
            "recovery_s": _spread(recoveries),
            "writes": {
                "sent": len(self.writers.writes),
                "acknowledged": len(acknowledged),
                "acknowledged_found_in_log_once": sum(1 for i in acknowledged if found.get(i) == 1),
                "acknowledged_missing": sum(1 for i in acknowledged if i not in found),
                "duplicates": sum(1 for count in found.values() if count > 1),
                "applied_but_not_acknowledged": len(set(found) - acknowledged),
            },
            "admin_writers_saw": statuses,
            "wire_writes": self.wire_writes_in_log(),
            "server_5xx": dict(server_5xx),
            "server_500": sum(n for status, n in server_5xx.items() if status not in UNAVAILABLE),
            "verify_metadata_after_every_fault": all(r.verify_metadata for r in self.results),
            "linearizability": None if self.history is None else self.history.report(),
        }


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def _longest_stall(acks: list[float], began: float, ended: float) -> float:
    """The longest time without an acknowledged write from the last one before `began` to
    `ended`: what the clients lived through."""
    before = [t for t in acks if t <= began]
    moments = [before[-1] if before else began] + [t for t in acks if began < t <= ended]
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    return round(max(gaps, default=ended - began), 2)


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "max": None}
    return {"p50": round(statistics.median(values), 2), "max": round(max(values), 2)}


FAULTS: list[tuple[str, str]] = [
    ("kill -9 the active controller", "kill_active_controller"),
    ("SIGSTOP the active controller past its lease, then SIGCONT", "pause_active_controller"),
    ("restart Redis", "restart_redis"),
    ("restart PostgreSQL", "restart_postgres"),
    ("kill -9 a web node", "kill_web_node"),
    ("kill -9 the Kafka protocol listener during admin writes", "kill_kafka_listener"),
    ("50 slow connections on the public listener for 30 s", "slow_clients"),
    ("lose two of three racks' brokers at once, then bring them back", "lose_two_racks"),
    ("restart every broker with a new incarnation (kill -9 the simulator)", "restart_every_broker"),
]


@contextlib.contextmanager
def campaign_stack(directory: Path) -> Iterator[FaultCampaign]:
    """Private services, a stack on them, the load running."""
    with private_services(directory) as (postgres, redis_server):
        saved = {k: os.environ.get(k) for k in ("CP_TEST_POSTGRES_URL", "CP_TEST_REDIS_URL")}
        os.environ["CP_TEST_POSTGRES_URL"] = postgres.url
        os.environ["CP_TEST_REDIS_URL"] = redis_server.url
        try:
            settings = {
                "CP_CONTROLLER_LEASE_MS": str(LEASE_MS),
                "CP_BROKER_SESSION_TIMEOUT_MS": str(SESSION_TIMEOUT_MS),
                "CP_BROKER_HEARTBEAT_INTERVAL_MS": "1000",
                "CP_REQUEST_TIMEOUT_MS": "30000",
                "CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS": str(LEADER_IMBALANCE_CHECK_S),
            }
            with running_stack(directory / "logs", settings=settings) as stack:
                campaign = FaultCampaign(stack, postgres, redis_server)
                try:
                    campaign.start()
                    yield campaign
                finally:
                    if campaign.writers is not None:
                        campaign.writers.stop()
                    if campaign.history is not None:
                        campaign.history.stop()
                    if campaign.wire_writer is not None:
                        campaign.wire_writer.stop()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def run(
    directory: Path | None = None, faults: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    """The whole campaign (or only `faults`, some of FAULTS, in that order); its report."""
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        campaign = stack.enter_context(campaign_stack(directory))
        for name, method in FAULTS if faults is None else faults:
            campaign.run_fault(name, getattr(campaign, method))
        assert campaign.writers is not None and campaign.history is not None
        campaign.writers.stop()
        campaign.history.stop()
        if campaign.wire_writer is not None:
            campaign.wire_writer.stop()  # before the log is read, so every answer it got is in
        return campaign.report()


def write_report(report: dict[str, Any]) -> Path:
    path = ROOT / "bench" / "results" / "fault_campaign.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

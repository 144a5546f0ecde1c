"""The fault campaign: the full stack under steady load, one fault at a time, checked after each.

The stack runs on a PostgreSQL cluster and a redis-server of the campaign's own (a throwaway
`initdb` in a temporary directory and a private `redis-server`, each on a free port), because the
campaign restarts them: the machine's shared services are never touched. On them: two web nodes
(the control plane's server, both listeners each), two `run_controller` processes (one active;
both, and every one started after a fault, with the one controller id the real brokers know as
their quorum's voter), six simulated brokers heartbeating on web node B's internal listener,
admin writers sending IncrementalAlterConfigs to both web nodes' public listener (each write a
new value and a request id of its own, retried on the other node with the same id until
acknowledged or given up), and, when Java and the Kafka jars are here, three stock Apache Kafka
brokers (devtools/campaign_kafka.py: their own `serve_kafka` controller listener, two log dirs
each, a topic placed on them alone) with an idempotent acks=all producer writing to them all
through the campaign. The simulated brokers and the real ones are counted apart (ids below and
from `campaign_kafka.FIRST_ID`): each fault reports the fencings of each kind.

Faults, in order: kill -9 the active controller; SIGSTOP it past its lease, then SIGCONT (it must
not write again); restart Redis; restart PostgreSQL; kill -9 web node A (and start it again);
kill -9 the Kafka protocol listener (`serve_kafka`) while a stock client (kafka-python) creates
topics through it, and start it again (the client reconnects; nothing is applied twice); hold 50
slow connections on both public listeners for 30 s; 1,000 anonymous maximal frames on every client
listener of serve_kafka (devtools/campaign_hostile.py); lose two of the three racks' brokers at once
(their heartbeats stop): after the session timeout every partition with a surviving ISR member must
have a live leader, and when the racks come back their brokers rejoin the ISR and the preferred
leaders return (the controller's rebalance); restart every broker with a new incarnation (kill -9
the simulator, start it again): each registers anew once its old session lapsed, and every ISR must
be whole again and every preferred leader lead again (devtools/campaign_brokers.py has the broker
faults). Then the real brokers' faults (devtools/campaign_kafka.py): kill -9 of the one leading the
most partitions (fenced after the session timeout, every partition led by a live broker as the
brokers' own Metadata says; restarted, back in every ISR), SIGSTOP of one past its session then
SIGCONT (fenced, leadership moved; it rejoins as stock Kafka does, the ISRs whole again), and a
lost log dir (renamed away under a broker leading partitions: the dir offline, its replicas there
offline and their leadership moved with no session timeout, the broker unfenced). After each: every
acknowledged write is in the metadata log exactly once, `verify_metadata` is clean, every live real
broker's own Metadata and kafka-dump-log agree with the controller's tables, and the time
until writes were acknowledged again is measured (and, for the controller faults, until a new
controller held the lease; with the real brokers, the longest time without an acknowledged produce
and the sends that failed). At the end every message the producer was told was written is read back
from the beginning by a fresh consumer group, once. Through it all, history clients
(`devtools.history`) on both web nodes write and read the same keys (topic configs as registers,
ACLs and quotas as sets), recording every operation's invocation, completion and outcome; at the
end the checker (`devtools.linearizability`, Wing & Gong's search with Lowe's memoization, as
Porcupine) proves the whole history linearizable, or names the smallest window that is not. The
report (`FaultCampaign.report`) is JSON; the table of docs/operators/fault-campaign.md is made from
it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from devtools import campaign_brokers, campaign_hostile, campaign_kafka, campaign_report
from devtools.admin_writers import AdminWriters
from devtools.campaign_kafka import RealBrokers
from devtools.history import HistoryClients
from devtools.private_services import (
    PrivatePostgres,
    PrivateRedis,
    private_services,
)
from devtools.slow_clients import SlowClients, probe
from devtools.stack import PYTHON, Http, Stack, free_port, running_stack, wait_for
from devtools.wire_writers import WireWriter

TOPIC = "campaign"
BROKERS = 6
LEASE_MS = 2000
SESSION_TIMEOUT_MS = 6000
RACKS = 3  # the simulator puts broker i on rack-{i % RACKS}
LOG_DIRS = 2  # per broker; a replica lives in one of them
HISTORY_CLIENTS = 4  # threads recording the history the linearizability checker proves
LEADER_IMBALANCE_CHECK_S = 3  # the controller's preferred-leader rebalance, often here
# A service restarting is answered 503 (NOT_CONTROLLER, Retry-After) or 504: never a 500.
UNAVAILABLE = frozenset({"503", "504"})
# Every run_controller of the campaign runs as the one controller id the real brokers know as
# their quorum's voter (controller.quorum.voters): whichever holds the lease is its leader.
CONTROLLER_ID = campaign_kafka.CONTROLLER_ID


@dataclasses.dataclass
class FaultResult:
    fault: str
    seconds: float
    writes_acknowledged: int
    recovery_s: float | None = None  # the longest the writers went without an acknowledgement
    failover_s: float | None = None  # until a new controller held the lease
    brokers_fenced: int = 0  # the simulated brokers fenced (their sessions lapsed)
    real_brokers_fenced: int = 0  # the stock Kafka brokers fenced
    produce_stall_s: float | None = None  # the longest time without an acknowledged produce
    produce_acknowledged: int = 0  # messages acknowledged to the producer during the fault
    produce_errors: int = 0  # sends the producer was told failed, during the fault
    verify_metadata: bool = False
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


class FaultCampaign:
    def __init__(
        self,
        stack: Stack,
        postgres: PrivatePostgres,
        redis_server: PrivateRedis,
        real_brokers_work: Path | None = None,
    ) -> None:
        """`real_brokers_work`: where the stock Kafka brokers live (None: no real brokers)."""
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
        self.real: RealBrokers | None = None
        if real_brokers_work is not None:
            self.real = RealBrokers(stack, real_brokers_work, lambda: self.web["web-b"])
        self.real_report: dict[str, Any] | None = None

    # --- the stack and its load ---------------------------------------------------------
    def start(self) -> None:
        self.started = time.monotonic()
        self.web["web-a"] = self.stack.start_web("web-a", workers=1, threads=8)
        self.web["web-b"] = self.stack.start_web("web-b", workers=1, threads=8)
        for _ in range(2):
            self.start_controller()
        wait_for(lambda: self.stack.lease()[0].startswith("controller-"), 60, "a controller")
        if self.real is not None:
            self.real.prepare()  # their listener and storage, in the background
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
        if self.real is not None:
            self.real.start()  # once the campaign's topic is placed (on the simulated brokers)
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
        if self.real is not None:
            self.real.ready()  # unfenced, their topic created, the producer on

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
        self.stack.start_controller(f"controller-{self.controllers}", CONTROLLER_ID)

    def broker_states(self) -> dict[int, str] | None:
        """Broker id -> its state, as the REST API says (None when it did not answer)."""
        status, body = self.web["web-b"].get(
            "/api/v1/brokers?page_size=100", self.stack.tokens["admin"]
        )
        if status != 200:
            return None
        return {int(b["broker_id"]): str(b["state"]) for b in body["results"]}

    def unfenced(self) -> int:
        """The simulated brokers unfenced (-1: no answer); the real ones are counted apart."""
        states = self.broker_states()
        if states is None:
            return -1
        return sum(1 for b, s in states.items() if b < campaign_kafka.FIRST_ID and s == "UNFENCED")

    def settled(self) -> bool:
        """Every broker unfenced, the simulated ones and the real ones."""
        if self.unfenced() != BROKERS:
            return False
        return self.real is None or self.real.unfenced() == len(campaign_kafka.BROKER_IDS)

    def log_end(self) -> int:
        return int(self.stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])

    def fencings_since(self, offset: int) -> Counter[str]:
        """The brokers fenced after `offset`, "simulated" and "real"."""
        rows = self.stack.sql(
            "SELECT (data->>'broker_id')::int, count(*) FROM cp_metadata_record"
            " WHERE \"offset\" > %s AND record_type = 'BrokerRegistrationChangeRecord'"
            " AND (data->>'fenced')::int = 1 GROUP BY 1",
            offset,
        )
        return campaign_kafka.fencings(rows)

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
        wait_for(self.settled, 90, f"every broker unfenced after {name}")
        ended = time.monotonic()
        writers.pause()
        if self.history is not None:
            self.history.pause()
        if self.wire_writer is not None:
            self.wire_writer.pause()
        verified, problems = campaign_report.verify_metadata(self.stack)
        if problems:
            extra["verify_metadata_problems"] = problems
        extra["one_image"] = campaign_hostile.one_image(self)  # None without real brokers
        fenced = self.fencings_since(offset)
        producer = None if self.real is None else self.real.producer
        result = FaultResult(
            fault=name,
            seconds=round(ended - began, 1),
            writes_acknowledged=len(writers.acknowledged()) - acknowledged_before,
            recovery_s=campaign_report.longest_stall(writers.ack_times(), began, ended),
            failover_s=extra.pop("failover_s", None),
            brokers_fenced=fenced["simulated"],
            real_brokers_fenced=fenced["real"],
            produce_stall_s=(
                None
                if producer is None
                else campaign_report.longest_stall(producer.ack_times(), began, ended)
            ),
            produce_acknowledged=(
                0 if producer is None else producer.acknowledged_between(began, ended)
            ),
            produce_errors=0 if producer is None else producer.errors_between(began, ended),
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
        self.server_5xx_of_dead_nodes += campaign_report.server_errors(
            self.web.values()
        )  # its counters die with it
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
            "brokers_fenced_during_the_attack": sum(self.fencings_since(offset).values()),
            "other_requests": others,
        }

    def anonymous_flood(self) -> dict[str, Any]:
        return campaign_hostile.anonymous_flood(self)

    def lose_two_racks(self) -> dict[str, Any]:
        return campaign_brokers.lose_two_racks(self, brokers=BROKERS, racks=RACKS)

    def restart_every_broker(self) -> dict[str, Any]:
        return campaign_brokers.restart_every_broker(self, brokers=BROKERS)

    def kill_real_broker(self) -> dict[str, Any]:
        assert self.real is not None
        return self.real.kill_busiest()

    def pause_real_broker(self) -> dict[str, Any]:
        assert self.real is not None
        return self.real.pause_one(self.log_end())

    def lose_a_real_log_dir(self) -> dict[str, Any]:
        assert self.real is not None
        return self.real.lose_a_log_dir()

    def kill_real_broker_mid_move(self) -> dict[str, Any]:
        assert self.real is not None
        return self.real.kill_mid_move()

    def partitions(self) -> list[dict[str, Any]]:
        status, body = self.web["web-b"].get(f"/api/v1/topics/{TOPIC}", self.stack.tokens["admin"])
        return list(body["partitions"]) if status == 200 else []

    def incarnations(self, state: str | None = None) -> dict[int, str]:
        """Simulated broker id -> its registered incarnation (of the brokers in `state`, if
        given)."""
        status, body = self.web["web-b"].get(
            "/api/v1/brokers?page_size=100", self.stack.tokens["admin"]
        )
        if status != 200:
            return {}
        return {
            int(b["broker_id"]): str(b["incarnation_id"])
            for b in body["results"]
            if int(b["broker_id"]) < campaign_kafka.FIRST_ID
            and (state is None or b["state"] == state)
        }

    def simulator_command(self, line: str) -> None:
        assert self.simulator is not None and self.simulator.stdin is not None
        self.simulator.stdin.write(f"{line}\n".encode())
        self.simulator.stdin.flush()

    # --- checks -------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        assert self.writers is not None
        acknowledged = {w.request_id for w in self.writers.acknowledged()}
        found = campaign_report.writes_in_log(self.stack)
        recoveries = [r.recovery_s for r in self.results if r.recovery_s is not None]
        failovers = [r.failover_s for r in self.results if r.failover_s is not None]
        elapsed = time.monotonic() - self.started
        statuses = dict(self.writers.statuses)
        # The web nodes' count (brokers' calls too), less the killed node's counted before.
        server_5xx = (
            campaign_report.server_errors(self.web.values()) + self.server_5xx_of_dead_nodes
        )
        return {
            "campaign": "fault_campaign",
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "setup": {
                "web_nodes": 2,
                "controllers": 2,
                "brokers": BROKERS,
                "real_brokers": 0 if self.real is None else len(campaign_kafka.BROKER_IDS),
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
            "failover_s": campaign_report.spread(failovers),
            "recovery_s": campaign_report.spread(recoveries),
            "writes": {
                "sent": len(self.writers.writes),
                "acknowledged": len(acknowledged),
                "acknowledged_found_in_log_once": sum(1 for i in acknowledged if found.get(i) == 1),
                "acknowledged_missing": sum(1 for i in acknowledged if i not in found),
                "duplicates": sum(1 for count in found.values() if count > 1),
                "applied_but_not_acknowledged": len(set(found) - acknowledged),
            },
            "admin_writers_saw": statuses,
            "wire_writes": campaign_report.wire_writes_in_log(self.stack, self.wire_writer),
            "server_5xx": dict(server_5xx),
            "server_500": sum(n for status, n in server_5xx.items() if status not in UNAVAILABLE),
            "verify_metadata_after_every_fault": all(r.verify_metadata for r in self.results),
            "linearizability": None if self.history is None else self.history.report(),
            "real_brokers": self.real_report,
        }


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


FAULTS: list[tuple[str, str]] = [
    ("kill -9 the active controller", "kill_active_controller"),
    ("SIGSTOP the active controller past its lease, then SIGCONT", "pause_active_controller"),
    ("restart Redis", "restart_redis"),
    ("restart PostgreSQL", "restart_postgres"),
    ("kill -9 a web node", "kill_web_node"),
    ("kill -9 the Kafka protocol listener during admin writes", "kill_kafka_listener"),
    ("50 slow connections on the public listener for 30 s", "slow_clients"),
    ("1,000 anonymous maximal frames on every client listener of serve_kafka", "anonymous_flood"),
    ("lose two of three racks' brokers at once, then bring them back", "lose_two_racks"),
    ("restart every broker with a new incarnation (kill -9 the simulator)", "restart_every_broker"),
]
# The stock Kafka brokers' faults, run when Java and the jars are here.
REAL_BROKER_FAULTS = campaign_kafka.FAULTS
FAULTS += REAL_BROKER_FAULTS


@contextlib.contextmanager
def campaign_stack(directory: Path, real_brokers: bool = True) -> Iterator[FaultCampaign]:
    """Private services, a stack on them (with the stock Kafka brokers, `real_brokers`), the
    load running."""
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
                work = directory / "kafka" if real_brokers else None
                campaign = FaultCampaign(stack, postgres, redis_server, work)
                try:
                    campaign.start()
                    yield campaign
                finally:
                    if campaign.real is not None:
                        campaign.real.close()
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
    directory: Path | None = None,
    faults: list[tuple[str, str]] | None = None,
    real_brokers: bool | None = None,
) -> dict[str, Any]:
    """The whole campaign (or only `faults`, some of FAULTS, in that order); its report.
    `real_brokers`: with the stock Kafka brokers and their faults (None: when Java and the jars
    are here, `campaign_kafka.missing()`)."""
    if real_brokers is None:
        real_brokers = campaign_kafka.missing() is None
    if faults is None:
        faults = FAULTS if real_brokers else [f for f in FAULTS if f not in REAL_BROKER_FAULTS]
    if not real_brokers and any(f in REAL_BROKER_FAULTS for f in faults):
        raise ValueError("the real brokers' faults need the real brokers")
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        campaign = stack.enter_context(campaign_stack(directory, real_brokers))
        for name, method in faults:
            campaign.run_fault(name, getattr(campaign, method))
        assert campaign.writers is not None and campaign.history is not None
        campaign.writers.stop()
        campaign.history.stop()
        if campaign.wire_writer is not None:
            campaign.wire_writer.stop()  # before the log is read, so every answer it got is in
        if campaign.real is not None:
            campaign.real_report = campaign.real.finish()  # every message read back
        return campaign.report()


write_report = campaign_report.write_report  # the test and `make campaign` call it here


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

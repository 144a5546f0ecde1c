"""The fault campaign's stock Kafka brokers (devtools/campaign.py): three unmodified
Apache Kafka 4.1.1 brokers (stock_kafka.broker) beside the simulated ones, in the same cluster.

They follow a `serve_kafka` of their own with a CONTROLLER listener (devtools.real_brokers; the
campaign's other `serve_kafka` is killed by a fault), and name the controllers' one shared voter
id (`CONTROLLER_ID`: every `run_controller` of the campaign runs as it, so whichever holds the
lease is the quorum's leader the brokers know). Each has two log dirs (KIP-858: it places its
replicas and may lose one), heartbeats every 500 ms and writes its checkpoints every second (a
lost log dir is found by the next one). Their ids start at `FIRST_ID`: the campaign counts the
simulated brokers (ids below it) and these apart, so the simulated brokers' checks (racks' loss,
every broker's restart, fencings per fault) are what they were.

Their `serve_kafka` serves client listeners too (PLAINTEXT, SASL_PLAINTEXT), as a deployment's
does: the anonymous flood's targets (devtools/campaign_hostile.py).

Their topic (`TOPIC`: 12 partitions, RF 3, min.insync.replicas 2) is placed on them alone by an
explicit assignment, and so is `__consumer_offsets`, created here before any group needs it (the
controller's placement would stripe it over the simulated brokers, and a group's coordinator must
be a real broker). Other topics (the wire writer's, the history clients') are placed over all
nine brokers, as a mixed cluster places them: a real broker then follows simulated leaders it
cannot reach, and leads partitions whose simulated followers never fetch.

An idempotent acks=all kafka-python producer (`Producing`) sends to the topic through the whole
campaign, each acknowledgement's time kept (per fault: the longest time without one). The faults:

* `kill_busiest`: kill -9 of the broker leading the most partitions: fenced once its session
  lapsed, every partition led by a live broker as the brokers' own Metadata says; restarted (a new
  incarnation), it is unfenced, back in every ISR, and leads its preferred partitions again.
* `pause_one`: SIGSTOP of the busiest broker past its session: fenced, leadership moved; after
  SIGCONT it rejoins (reported: by resumed heartbeats or by a new registration, whichever stock
  Kafka does) and every ISR is whole again.
* `lose_a_log_dir`: one log dir of a broker leading partitions (never the one holding its metadata
  log: Kafka stops a broker that loses that) renamed away under it: the broker reports the dir
  offline in its heartbeat (when it found the dir and handed it over, read from its own log), its
  replicas there go offline and their leadership moves, with no session timeout: the broker
  stays unfenced. The dir stays lost (as in Kafka, until a restart).

At the end `consumed_back` reads the topic from the beginning with a fresh consumer group: every
acknowledged message must be there, once.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from devtools import campaign_hostile, campaign_moves
from devtools.kafka_clients import Producing, broker_metadata, directory_ids
from devtools.real_brokers import DEFAULT_CONTROLLER_ID, brokers_under, start_controller_listener
from devtools.stack import Http, Stack, wait_for
from stock_kafka import jars as kafka
from stock_kafka.broker import KafkaBroker

BROKER_IDS = (101, 102, 103)
FIRST_ID = BROKER_IDS[0]  # the simulated brokers' ids are below it
CONTROLLER_ID = DEFAULT_CONTROLLER_ID  # every controller of the campaign: the brokers' one voter
TOPIC = "campaign-real"
# Each broker leads four: one of them in its second log dir (the one it may lose) all but surely.
PARTITIONS = 12
MIN_INSYNC_REPLICAS = 2
HEARTBEAT_MS = 500
CHECKPOINT_MS = 1000
REPLICA_FETCH_BACKOFF_S = 1.0  # Kafka's replica.fetch.backoff.ms, left at its default
LISTENER = "serve_kafka_controller"
BROKER_PROPERTIES = {
    "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    # A lost log dir is found when the broker next writes a checkpoint in it (5 s by default).
    "replica.high.watermark.checkpoint.interval.ms": str(CHECKPOINT_MS),
    "offsets.topic.replication.factor": "3",  # __consumer_offsets as created here
}
LOG_LEVELS = {"kafka.server.BrokerLifecycleManager": "INFO"}  # its fencing, in broker.log
METADATA_LOG = "__cluster_metadata-0"  # in the broker's first log dir (metadata.log.dir unset)
# Kafka's DirectoryId.MIGRATING, UNASSIGNED and LOST: no log dir of the broker's (yet).
RESERVED_DIRECTORIES = frozenset(f"00000000-0000-0000-0000-00000000000{n}" for n in range(3))


def missing() -> str | None:
    """Why the real brokers cannot run here (no Java 17+, no jars), or None."""
    try:
        kafka.java_executable()
    except kafka.KafkaJarsMissing as error:
        return str(error)
    if not kafka.installed():
        return f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)"
    return None


def _since(moment: float) -> float:
    return round(time.monotonic() - moment, 2)


# Kafka's ReplicaManager.handleLogDirFailure: it logs the first as it begins (the dir found
# failed, by a checkpoint or a log created there), the second once it has stopped the dir's
# replicas and handed the dir's id to its lifecycle manager, whose next heartbeat reports it.
DIR_FAILURE_LINES = {
    "broker_found_it_after_s": "Stopping serving replicas in dir",
    "broker_reported_it_after_s": "Stopped serving replicas in dir",
}
_LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def broker_handled_dir_failure(
    broker: KafkaBroker, path: Path, began_wall: float
) -> dict[str, float | None]:
    """When the broker found the lost dir and when it had handed it to its heartbeat, in seconds
    after `began_wall` (its log's wall-clock stamps: same machine, same clock); None for a line
    it did not log. What follows the second is the controller's: the heartbeat, the commit."""
    lines = broker.output().splitlines()
    found: dict[str, float | None] = {}
    for key, text in DIR_FAILURE_LINES.items():
        wanted = f"{text} {path} "  # the dir named whole: a space follows it
        stamp = next(
            (m.group(1) for line in lines if wanted in line and (m := _LOG_TIME.match(line))),
            None,
        )
        found[key] = (
            None
            if stamp is None
            else round(
                datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() - began_wall,
                2,
            )
        )
    return found


class RealBrokers:
    """The three brokers, their topic and producer; `web()` answers a web node for REST."""

    def __init__(self, stack: Stack, work: Path, web: Callable[[], Http]) -> None:
        self.stack = stack
        self.work = work
        self.web = web
        self.brokers: list[KafkaBroker] = []
        self.port = 0
        self.client_ports = campaign_hostile.real_brokers_client_ports()  # for the flood
        self.producer: Producing | None = None
        self._prepared: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.setup_s: dict[str, float] = {}
        self._began = 0.0

    # --- start-up -----------------------------------------------------------------------
    def prepare(self) -> None:
        """In the background: the controller listener, and each broker's storage formatted
        with the cluster's id (a JVM each, in parallel), while the campaign starts the rest."""
        self._began = time.monotonic()

        def run() -> None:
            try:
                wait_for(
                    lambda: self.stack.sql("SELECT cluster_id FROM cp_cluster WHERE id = 1"),
                    60,
                    "the cluster's id",
                )
                self.port = start_controller_listener(
                    self.stack, LISTENER, client_ports=self.client_ports
                )
                self.brokers = brokers_under(
                    self.stack,
                    self.port,
                    self.work,
                    BROKER_IDS,
                    controller_id=CONTROLLER_ID,
                    overrides=BROKER_PROPERTIES,
                    log_levels=LOG_LEVELS,
                    log_dir_count=2,
                )
                formats = [
                    threading.Thread(target=b.format_storage, daemon=True) for b in self.brokers
                ]
                for thread in formats:
                    thread.start()
                for thread in formats:
                    thread.join(timeout=180)
                self.setup_s["listener_and_storage_ready"] = _since(self._began)
            except BaseException as error:  # re-raised by start()
                self._failure = error

        self._prepared = threading.Thread(target=run, name="real-brokers-prepare", daemon=True)
        self._prepared.start()

    def start(self) -> None:
        """Start the JVMs (once the campaign's own topic is placed: on the simulated brokers)."""
        assert self._prepared is not None
        self._prepared.join(timeout=240)
        if self._failure is not None:
            raise self._failure
        assert self.brokers, "the real brokers were not prepared"
        for broker in self.brokers:
            broker.start(format_storage=False)

    def ready(self) -> None:
        """Every broker unfenced; the topic and __consumer_offsets on them; the producer on."""
        self.wait(lambda: self.unfenced() == len(BROKER_IDS), 240, "the real brokers unfenced")
        self.setup_s["unfenced"] = _since(self._began)
        ids = list(BROKER_IDS)
        rotations = [ids[i % len(ids) :] + ids[: i % len(ids)] for i in range(PARTITIONS)]
        self.create_topic(
            TOPIC,
            rotations,
            {"min.insync.replicas": str(MIN_INSYNC_REPLICAS)},
        )
        self.create_topic(
            "__consumer_offsets",
            [ids],  # one partition, as the brokers' offsets.topic.num.partitions says
            {"cleanup.policy": "compact", "segment.bytes": str(100 * 1024 * 1024)},
        )
        self.wait(
            lambda: all(len(broker_metadata(b, TOPIC)) == PARTITIONS for b in self.brokers),
            60,
            "the topic in every broker's Metadata",
        )
        producer = Producing(
            self.bootstrap, f"campaign-{uuid.uuid4().hex[:6]}", TOPIC, client_id="campaign-producer"
        )
        self.producer = producer
        producer.start()
        self.wait(lambda: producer.acknowledged_count() >= 50, 90, "produced messages flowing")
        self.setup_s["producing"] = _since(self._began)

    def create_topic(self, name: str, assignment: list[list[int]], configs: dict[str, str]) -> None:
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": i, "broker_ids": replicas}
                        for i, replicas in enumerate(assignment)
                    ],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ]
        }
        token = self.stack.tokens["admin"]
        status, answer = self.web().post("/api/v1/create-topics", body, token)
        assert status == 200 and answer["topics"][0]["error_code"] == 0, (name, status, answer)

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers)

    def close(self) -> None:
        """The producer stopped (without waiting long), every JVM killed (the campaign's work
        dir goes with it: no shutdown to wait for)."""
        if self.producer is not None:
            self.producer.stop(flush_s=5)
        for broker in self.brokers:
            with contextlib.suppress(Exception):
                broker.kill()

    # --- what the controller says -------------------------------------------------------
    def rows(self) -> dict[int, dict[str, Any]]:
        """The real brokers' registrations as the controller projects them."""
        found = self.stack.sql(
            "SELECT broker_id, fenced, in_controlled_shutdown, incarnation_id, epoch,"
            " log_dirs, offline_log_dirs FROM cp_broker WHERE broker_id >= %s",
            FIRST_ID,
        )
        keys = ("fenced", "shutting_down", "incarnation", "epoch", "log_dirs", "offline_log_dirs")
        return {int(row[0]): dict(zip(keys, row[1:], strict=True)) for row in found}

    def unfenced(self) -> int:
        return sum(1 for r in self.rows().values() if not r["fenced"] and not r["shutting_down"])

    def partitions(self) -> dict[int, dict[str, Any]]:
        """The topic's partitions as the controller projects them."""
        found = self.stack.sql(
            "SELECT p.partition_index, p.leader, p.replicas, p.isr, p.offline_replicas,"
            " p.directories FROM cp_partition p JOIN cp_topic t ON t.topic_id = p.topic_id"
            " WHERE t.name = %s",
            TOPIC,
        )
        keys = ("leader", "replicas", "isr", "offline_replicas", "directories")
        return {int(row[0]): dict(zip(keys, row[1:], strict=True)) for row in found}

    def registrations_since(self, offset: int, broker_id: int) -> int:
        rows = self.stack.sql(
            'SELECT count(*) FROM cp_metadata_record WHERE "offset" > %s'
            " AND record_type = 'RegisterBrokerRecord' AND broker_id = %s",
            offset,
            broker_id,
        )
        return int(rows[0][0])

    def isr_whole(self) -> bool:
        found = self.partitions()
        return len(found) == PARTITIONS and all(
            set(p["isr"]) == set(p["replicas"]) for p in found.values()
        )

    def preferred_lead(self) -> bool:
        found = self.partitions()
        return len(found) == PARTITIONS and all(
            p["leader"] == p["replicas"][0] for p in found.values()
        )

    def busiest(self) -> KafkaBroker:
        led = [p["leader"] for p in self.partitions().values()]
        return max(self.brokers, key=lambda b: led.count(b.node_id))

    # --- what the brokers say -----------------------------------------------------------
    def live_leaders(self, live: Sequence[KafkaBroker], partitions: Sequence[int] = ()) -> bool:
        """Every partition (or those of `partitions`) led by one of `live`, as each of them says
        in its own Metadata."""
        ids = {b.node_id for b in live}
        for broker in live:
            seen = broker_metadata(broker, TOPIC)
            wanted = partitions or range(PARTITIONS)
            if len(seen) != PARTITIONS or any(seen[i].leader_id not in ids for i in wanted):
                return False
        return True

    def wait(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        """`wait_for`, the brokers' last lines in the error when it times out."""
        try:
            return wait_for(predicate, timeout, what, every=0.05)
        except AssertionError as error:
            tails = "".join(
                f"\n--- broker {b.node_id} ({'running' if b.running else 'exited'}) ---\n"
                f"{b.log_tail(25)}"
                for b in self.brokers
            )
            raise AssertionError(f"{error}{tails}") from None

    # --- the faults ---------------------------------------------------------------------
    def kill_mid_move(self) -> dict[str, Any]:
        """kill -9 of a broker in the middle of partition moves (devtools/campaign_moves.py)."""
        return campaign_moves.kill_during_moves(self, TOPIC)

    def kill_busiest(self) -> dict[str, Any]:
        victim = self.busiest()
        led = sum(1 for p in self.partitions().values() if p["leader"] == victim.node_id)
        incarnation = self.rows()[victim.node_id]["incarnation"]
        live = [b for b in self.brokers if b is not victim]
        began = time.monotonic()
        victim.kill()
        self.wait(lambda: self.rows()[victim.node_id]["fenced"], 60, "the killed broker fenced")
        fenced_s = _since(began)
        self.wait(lambda: self.live_leaders(live), 60, "a live leader for every partition")
        live_leaders_s = _since(began)
        out_of_every_isr = all(victim.node_id not in p["isr"] for p in self.partitions().values())
        restarted = time.monotonic()
        victim.start(format_storage=False)

        def unfenced_anew() -> bool:
            row = self.rows()[victim.node_id]
            return not row["fenced"] and row["incarnation"] != incarnation

        self.wait(unfenced_anew, 180, "the restarted broker unfenced as a new incarnation")
        unfenced_s = _since(restarted)
        self.wait(self.isr_whole, 120, "the restarted broker back in every ISR")
        isr_whole_s = _since(restarted)
        self.wait(self.preferred_lead, 60, "the preferred leaders back")
        return {
            "real_broker": victim.node_id,
            "partitions_it_led": led,
            "fenced_after_s": fenced_s,
            "live_leaders_after_s": live_leaders_s,
            "out_of_every_isr_when_fenced": out_of_every_isr,
            "restart_unfenced_after_s": unfenced_s,
            "isr_whole_after_s": isr_whole_s,
            "preferred_leaders_after_s": _since(restarted),
        }

    def pause_one(self, offset: int) -> dict[str, Any]:
        """`offset`: the log's end before the fault (its registrations after it are counted)."""
        victim = self.busiest()
        assert victim.pid is not None
        led = sum(1 for p in self.partitions().values() if p["leader"] == victim.node_id)
        incarnation = self.rows()[victim.node_id]["incarnation"]
        live = [b for b in self.brokers if b is not victim]
        began = time.monotonic()
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            self.wait(lambda: self.rows()[victim.node_id]["fenced"], 60, "the paused broker fenced")
            fenced_s = _since(began)
            self.wait(lambda: self.live_leaders(live), 60, "a live leader for every partition")
            live_leaders_s = _since(began)
        finally:
            resumed = time.monotonic()
            os.kill(victim.pid, signal.SIGCONT)
        paused_s = round(resumed - began, 2)
        self.wait(
            lambda: not self.rows()[victim.node_id]["fenced"], 120, "the resumed broker unfenced"
        )
        unfenced_s = _since(resumed)
        self.wait(self.isr_whole, 120, "the resumed broker back in every ISR")
        isr_whole_s = _since(resumed)
        self.wait(self.preferred_lead, 60, "the preferred leaders back")
        registered = self.registrations_since(offset, victim.node_id)
        same = self.rows()[victim.node_id]["incarnation"] == incarnation
        return {
            "real_broker": victim.node_id,
            "partitions_it_led": led,
            "paused_s": paused_s,
            "fenced_after_s": fenced_s,
            "live_leaders_after_s": live_leaders_s,
            "rejoined_by": (
                "resumed heartbeats" if registered == 0 and same else "a new registration"
            ),
            "registrations_after_sigcont": registered,
            "same_incarnation": same,
            "unfenced_after_sigcont_s": unfenced_s,
            "isr_whole_after_sigcont_s": isr_whole_s,
            "preferred_leaders_after_sigcont_s": _since(resumed),
        }

    def lose_a_log_dir(self) -> dict[str, Any]:
        def placed() -> bool:
            return all(
                len(p["directories"]) == len(p["replicas"])
                and not set(p["directories"]) & RESERVED_DIRECTORIES
                for p in self.partitions().values()
            )

        self.wait(placed, 60, "every replica placed in a log dir (AssignReplicasToDirs)")
        partitions = self.partitions()
        choices = []
        for broker in self.brokers:
            for dir_id, path in directory_ids(broker).items():
                if (path / METADATA_LOG).exists():
                    continue  # losing the metadata log's dir stops the broker
                on_it = [
                    i
                    for i, p in partitions.items()
                    if p["directories"][p["replicas"].index(broker.node_id)] == dir_id
                ]
                led = [i for i in on_it if partitions[i]["leader"] == broker.node_id]
                choices.append((len(led), len(on_it), broker.node_id, broker, dir_id, path, on_it))
        choices.sort(key=lambda c: c[:3], reverse=True)
        led_count, _, _, broker, lost, path, on_lost = choices[0]
        assert on_lost, "no partition of the topic in a dir that may be lost"
        kept = [i for i in partitions if i not in on_lost]
        live = list(self.brokers)  # the broker stays up: it leads nothing on the lost dir
        began = time.monotonic()
        began_wall = time.time()  # the broker's log lines carry the wall clock
        path.rename(path.with_name(path.name + ".lost"))
        self.wait(
            lambda: lost in (self.rows()[broker.node_id]["offline_log_dirs"] or []),
            60,
            "the lost dir reported offline",
        )
        reported_s = _since(began)
        handled = broker_handled_dir_failure(broker, path, began_wall)

        def offline_and_moved() -> bool:
            now = self.partitions()
            return all(
                broker.node_id in now[i]["offline_replicas"] and now[i]["leader"] != broker.node_id
                for i in on_lost
            )

        self.wait(offline_and_moved, 60, "its replicas there offline, their leadership moved")
        moved_s = _since(began)

        def moved_as_the_brokers_say() -> bool:
            others = [b for b in live if b is not broker]
            if not self.live_leaders(others, on_lost):
                return False
            seen = broker_metadata(broker, TOPIC)  # the broker itself knows it too
            return all(seen[i].leader_id not in (broker.node_id, -1) for i in on_lost)

        self.wait(moved_as_the_brokers_say, 60, "the moves in every broker's Metadata")
        live_leaders_s = _since(began)
        now = self.partitions()
        row = self.rows()[broker.node_id]
        return {
            "real_broker": broker.node_id,
            "lost_dir": lost,
            "partitions_in_it": len(on_lost),
            "partitions_in_it_it_led": led_count,
            **handled,
            "dir_offline_after_s": reported_s,
            "replicas_offline_and_leaders_moved_after_s": moved_s,
            "live_leaders_after_s": live_leaders_s,
            "broker_unfenced_throughout": not row["fenced"] and broker.running,
            "replicas_in_its_other_dir_offline": sum(
                1 for i in kept if broker.node_id in now[i]["offline_replicas"]
            ),
        }

    # --- the end ------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Stop the producer (every send answered), read the topic back with a fresh group."""
        producer = self.producer
        assert producer is not None
        producer.stop()
        acknowledged = set(producer.acknowledged)
        began = time.monotonic()
        seen = self.consumed(acknowledged)
        read_s = _since(began)
        lost = sorted(acknowledged - set(seen))
        return {
            "brokers": list(BROKER_IDS),
            "topic": TOPIC,
            "partitions": PARTITIONS,
            "replication_factor": len(BROKER_IDS),
            "min_insync_replicas": MIN_INSYNC_REPLICAS,
            "setup_s": self.setup_s,
            "producer": {
                "sent": producer.sent,
                "acknowledged": len(acknowledged),
                "errors": len(producer.errors),
                "first_errors": producer.errors[:5],
            },
            "consumed_back": {
                "messages_read": sum(len(where) for where in seen.values()),
                "acknowledged_found": len(acknowledged) - len(lost),
                "acknowledged_lost": len(lost),
                "lost_examples": lost[:10],
                "duplicated": sum(1 for where in seen.values() if len(where) > 1),
                "read_s": read_s,
            },
        }

    def consumed(self, expected: set[str], timeout: float = 120) -> dict[str, set[Any]]:
        """Each key read from the beginning by a fresh consumer group -> where it was read
        (partition, offset): a key at two offsets was written twice. librdkafka's consumer (it
        connects to the brokers it needs: kafka-python's asks a random known broker for
        metadata, a simulated one too, and gives up on the refused connection)."""
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"campaign-check-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "client.id": "campaign-check",
            }
        )
        seen: dict[str, set[Any]] = {}
        deadline = time.monotonic() + timeout
        try:
            consumer.subscribe([TOPIC])
            while time.monotonic() < deadline and not expected <= set(seen):
                for message in consumer.consume(num_messages=1000, timeout=1.0):
                    if message.error() is None:
                        key = bytes(message.value() or b"").decode()
                        seen.setdefault(key, set()).add((message.partition(), message.offset()))
        finally:
            consumer.close()
        return seen


def fencings(rows: Sequence[tuple[Any, ...]]) -> Counter[str]:
    """(broker id, count) rows -> fencings of the simulated and of the real brokers."""
    counted: Counter[str] = Counter()
    for broker_id, count in rows:
        counted["real" if int(broker_id) >= FIRST_ID else "simulated"] += int(count)
    return counted


# The real brokers' faults, by their FaultCampaign methods' names (devtools/campaign.py runs them
# after the simulated brokers' when Java and the jars are here).
FAULTS: list[tuple[str, str]] = [
    ("kill -9 the real broker leading the most partitions, then restart it", "kill_real_broker"),
    ("SIGSTOP a real broker past its session, then SIGCONT", "pause_real_broker"),
    (
        "kill -9 a real broker in the middle of partition moves, then restart it",
        "kill_real_broker_mid_move",
    ),
    # Last: the lost dir stays lost (as in Kafka, until the broker restarts), and a broker
    # restarted without it refuses to start.
    ("lose a log dir of a real broker leading partitions", "lose_a_real_log_dir"),
]

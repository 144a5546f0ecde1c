"""One stock Apache Kafka broker (the pinned jars, unmodified) under this control plane.

The broker is a KRaft observer of this control plane's quorum: `process.roles=broker`, the
control plane's controller id as the one static voter at its controller listener, reached with
SASL/PLAIN as a broker principal (user = the principal's name, password = its token). Its
storage is formatted with this cluster's id (`kafka.tools.StorageTool format`), its client
listener is PLAINTEXT on loopback, and it is kept light for a small machine (a 256 MiB heap,
Kafka's test kit's dedupe buffer, one partition for the internal topics, few threads).

    python -m stock_kafka.broker run --count 1 --controller 127.0.0.1:9094 \
        --cluster-id ID --credentials FILE --work-dir var/kafka-brokers

`--credentials FILE`: one `PRINCIPAL TOKEN` line per broker (the last line serves the brokers
beyond). Runs until SIGTERM or Ctrl-C, then stops the brokers (SIGTERM, then SIGKILL). No Django:
the caller says who the brokers are and where the controller listens.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from stock_kafka import jars as kafka
from stock_kafka.broker_config import (
    DEFAULT_CONTROLLER_ID,
    broker_properties,
    log4j_config,
    properties_text,
)

STORAGE_TOOL = "kafka.tools.StorageTool"
STARTED = r"\[KafkaRaftServer nodeId=\d+\] Kafka Server started"
# What the broker logs once the controller has unfenced it (BrokerLifecycleManager).
UNFENCED = r"The broker has been unfenced"
REGISTERED = r"Successfully registered broker \d+ with broker epoch"


class BrokerStartFailed(RuntimeError):
    """Formatting the storage or starting the JVM failed; the message carries the output."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class KafkaBroker:
    """One `kafka.Kafka` process: formats its storage, runs, stops, is killed, restarts.

    Its output (stdout and stderr) goes to `work_dir/broker.log`, appended across restarts;
    `wait_for_log` looks at what the current process wrote only."""

    def __init__(
        self,
        *,
        node_id: int,
        cluster_id: str,
        controller: str,
        principal: str,
        token: str,
        work_dir: Path,
        controller_id: int = DEFAULT_CONTROLLER_ID,
        port: int | None = None,
        host: str = "127.0.0.1",
        heap: str = kafka.DEFAULT_HEAP,
        overrides: Mapping[str, str] | None = None,
        log_levels: Mapping[str, str] | None = None,
        log_dir_count: int = 1,
        client_users: Mapping[str, str] | None = None,
        version: str | None = None,
    ) -> None:
        self.node_id = node_id
        # The Kafka release it runs (installed by install-kafka.sh): KAFKA_VERSION, else pinned.
        self.version = kafka.chosen_version(version)
        # Clients' SASL/PLAIN logins on a second client listener (`sasl_bootstrap`), if any.
        self.client_users = dict(client_users) if client_users is not None else None
        self.sasl_port = free_port(host) if client_users is not None else None
        self.log_dir_count = log_dir_count  # more than one: the broker assigns its replicas
        self.cluster_id = cluster_id
        self.controller = controller
        self.controller_id = controller_id
        self.principal = principal
        self.token = token
        self.work_dir = Path(work_dir).resolve()  # the JVM runs in it: every path absolute
        self.host = host
        self.port = port or free_port(host)
        self.heap = heap
        self.overrides = dict(overrides or {})
        self.log_levels = dict(log_levels or {})
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None  # time.monotonic() at the last start
        self._log_offset = 0  # where the current process's output starts in the log

    # --- Where things are ---------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        """The broker's client listener (PLAINTEXT), for `bootstrap_servers`."""
        return f"{self.host}:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        """The SASL/PLAIN client listener, when the broker has one (`client_users`)."""
        if self.sasl_port is None:
            raise RuntimeError(f"broker {self.node_id} has no SASL client listener")
        return f"{self.host}:{self.sasl_port}"

    @property
    def data_dir(self) -> Path:
        return self.work_dir / "data"

    @property
    def data_dirs(self) -> list[Path]:
        """Its `log.dirs`: the data dir, or one dir under it each when it has several."""
        if self.log_dir_count == 1:
            return [self.data_dir]
        return [self.data_dir / f"dir-{i}" for i in range(self.log_dir_count)]

    @property
    def properties_path(self) -> Path:
        return self.work_dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.work_dir / "broker.log"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def properties(self) -> dict[str, str]:
        return broker_properties(
            node_id=self.node_id,
            controller=self.controller,
            principal=self.principal,
            token=self.token,
            data_dirs=self.data_dirs,
            port=self.port,
            host=self.host,
            controller_id=self.controller_id,
            overrides=self.overrides,
            sasl_port=self.sasl_port,
            client_users=self.client_users,
        )

    def write_config(self) -> Path:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.properties_path.write_text(properties_text(self.properties()))
        self.properties_path.chmod(0o600)  # it holds the token
        if self.log_levels:
            (self.work_dir / "log4j2.properties").write_text(log4j_config(self.log_levels))
        return self.properties_path

    def _java(self, main_class: str, args: Sequence[str], heap: str) -> list[str]:
        command = kafka.java_command(
            main_class, args, heap=heap, log_dir=self.work_dir, version=self.version
        )
        if self.log_levels:
            own = f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}"
            command = [
                own if arg.startswith("-Dlog4j2.configurationFile=") else arg for arg in command
            ]
        return command

    # --- Storage -------------------------------------------------------------------------

    def formatted_cluster_id(self) -> str | None:
        """The cluster id in the log dir's meta.properties (None before the first format)."""
        try:
            text = (self.data_dirs[0] / "meta.properties").read_text()
        except FileNotFoundError:
            return None
        match = re.search(r"^cluster\.id=(.*)$", text, re.MULTILINE)
        return match.group(1).strip() if match else None

    def format_command(self) -> list[str]:
        return self._java(
            STORAGE_TOOL,
            [
                "format",
                # `=`: a cluster id may start with "-", which a separate argument would read
                # as an option (base64 ids do, one in 64).
                f"--cluster-id={self.cluster_id}",
                "-c",
                str(self.properties_path),
                "--ignore-formatted",
            ],
            heap="128m",
        )

    def format_storage(self, timeout: float = 120) -> str:
        """`StorageTool format -t <cluster id> -c server.properties --ignore-formatted`: the
        log dir's meta.properties with this cluster's id, the node id and a directory id."""
        self.write_config()
        done = subprocess.run(
            self.format_command(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        output = done.stdout + done.stderr
        if done.returncode != 0:
            raise BrokerStartFailed(
                f"StorageTool format exited {done.returncode}:\n{output.strip()[-4000:]}"
            )
        return output

    # --- The process ---------------------------------------------------------------------

    def start(self, *, format_storage: bool = True) -> KafkaBroker:
        """Format (idempotent; `format_storage=False` when the caller did) and start
        `kafka.Kafka server.properties`; returns at once."""
        if self.running:
            raise RuntimeError(f"broker {self.node_id} is running already (pid {self.pid})")
        if format_storage:
            self.format_storage()
        else:
            self.write_config()
        command = self._java("kafka.Kafka", [str(self.properties_path)], heap=self.heap)
        with open(self.log_path, "ab") as log:
            self._log_offset = log.tell()
            log.write(f"=== stock_kafka.broker: starting broker {self.node_id} ===\n".encode())
            log.flush()
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                command,
                cwd=self.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C in a terminal reaches the caller, not the JVM
            )
        return self

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (Kafka's shutdown hook: controlled shutdown, then close), SIGKILL after
        `timeout` seconds; the exit status (None when it was not running)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                return process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.kill()

    def kill(self) -> int | None:
        """SIGKILL (`kill -9`): no controlled shutdown, the session lapses at the controller."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGKILL)
        return process.wait(timeout=30)

    def restart(self, *, hard: bool = False, timeout: float = 30) -> KafkaBroker:
        """Stop (or kill, `hard`) and start again: a new process is a new incarnation."""
        if hard:
            self.kill()
        else:
            self.stop(timeout)
        return self.start()

    # --- Its log -------------------------------------------------------------------------

    def output(self) -> str:
        """What the current (or last) process wrote."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self._log_offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 100) -> str:
        """The last lines of the current process's output, less the config dumps (Kafka logs
        every config's value, one tab-indented line each, whenever it builds a config)."""
        kept = [line for line in self.output().splitlines() if not line.startswith("\t")]
        return "\n".join(kept[-lines:])

    def wait_for_log(self, pattern: str, timeout: float, *, every: float = 0.2) -> re.Match[str]:
        """The first match of `pattern` in the current process's output; BrokerStartFailed when
        the process exits first, TimeoutError (with the log's tail) after `timeout` seconds."""
        compiled = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = compiled.search(self.output())
            if match is not None:
                return match
            if self.process is not None and self.process.poll() is not None:
                raise BrokerStartFailed(
                    f"broker {self.node_id} exited {self.process.returncode} before logging "
                    f"{pattern!r}; its last lines:\n{self.log_tail()}"
                )
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"broker {self.node_id} logged no {pattern!r} within {timeout}s; its last "
                    f"lines:\n{self.log_tail()}"
                )
            time.sleep(every)

    # --- A context manager ---------------------------------------------------------------

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"KafkaBroker(node_id={self.node_id}, bootstrap={self.bootstrap}, pid={self.pid})"


# --- The command line (make run KAFKA_BROKERS=N) ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class Credential:
    principal: str
    token: str


def read_credentials(path: Path) -> list[Credential]:
    """`PRINCIPAL TOKEN` per line; blank lines and `#` comments skipped."""
    found = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        principal, _, token = line.strip().partition(" ")
        if not token.strip():
            raise ValueError(f"{path}: expected PRINCIPAL TOKEN, got {line.strip()[:40]!r}")
        found.append(Credential(principal, token.strip()))
    if not found:
        raise ValueError(f"{path}: no PRINCIPAL TOKEN line")
    return found


def token_key_properties(path: str | None) -> dict[str, str]:
    """`delegation.token.secret.key` from the file at `path` (stripped; the properties file
    it goes to is mode 0600), never on a command line; none when no path or an empty file."""
    if path is None:
        return {}
    key = Path(path).read_text().strip()
    return {"delegation.token.secret.key": key} if key else {}


def brokers_from(options: argparse.Namespace) -> list[KafkaBroker]:
    credentials = read_credentials(Path(options.credentials))
    work = Path(options.work_dir)
    overrides = dict(item.split("=", 1) for item in options.override)
    overrides.update(token_key_properties(options.delegation_token_secret_key_file))
    brokers = []
    for index in range(options.count):
        credential = credentials[min(index, len(credentials) - 1)]
        node_id = options.first_node_id + index
        brokers.append(
            KafkaBroker(
                node_id=node_id,
                cluster_id=options.cluster_id,
                controller=options.controller,
                controller_id=options.controller_id,
                principal=credential.principal,
                token=credential.token,
                work_dir=work / f"broker-{node_id}",
                heap=options.heap,
                overrides=overrides,
                version=options.kafka_version,
            )
        )
    return brokers


def forget_other_clusters(brokers: Sequence[KafkaBroker]) -> None:
    """A log dir formatted for another cluster (the control plane's database was started
    afresh) is wiped: --ignore-formatted would keep its id, and the controller would answer
    the broker INCONSISTENT_CLUSTER_ID forever."""
    for broker in brokers:
        formatted = broker.formatted_cluster_id()
        if formatted is not None and formatted != broker.cluster_id:
            print(
                f"Kafka broker {broker.node_id}: {broker.data_dir} belongs to cluster "
                f"{formatted}, not {broker.cluster_id}: formatting it afresh",
                flush=True,
            )
            shutil.rmtree(broker.data_dir)


def stop_all(brokers: Sequence[KafkaBroker], timeout: float = 15) -> None:
    """SIGTERM to every broker at once, SIGKILL to those still up `timeout` seconds later (a
    broker's controlled shutdown waits for the controller: when it is gone first, as on a
    terminal's Ctrl-C, only the kill ends it)."""
    for broker in brokers:
        if broker.running and broker.process is not None:
            with contextlib.suppress(ProcessLookupError):
                broker.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for broker in brokers:
        broker.stop(timeout=max(0.1, deadline - time.monotonic()))


@contextlib.contextmanager
def running(brokers: Sequence[KafkaBroker]) -> Iterator[Sequence[KafkaBroker]]:
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        stop_all(brokers)


def run(options: argparse.Namespace) -> int:
    try:
        brokers = brokers_from(options)
    except (OSError, ValueError, kafka.KafkaJarsMissing) as error:
        print(f"stock_kafka.broker: {error}", file=sys.stderr)
        return 2
    forget_other_clusters(brokers)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    try:
        with running(brokers):
            for broker in brokers:
                print(
                    f"Kafka broker {broker.node_id} (pid {broker.pid}): {broker.bootstrap}, "
                    f"log {broker.log_path}",
                    flush=True,
                )
            while not stop.wait(1.0):
                for broker in brokers:
                    if not broker.running and broker.process is not None:
                        print(
                            f"Kafka broker {broker.node_id} exited "
                            f"{broker.process.returncode}; its last lines:\n"
                            f"{broker.log_tail(30)}",
                            file=sys.stderr,
                            flush=True,
                        )
                        broker.process = None
                if all(broker.process is None for broker in brokers):
                    return 1  # every broker exited: nothing left to run
    except (BrokerStartFailed, kafka.KafkaJarsMissing) as error:
        print(f"stock_kafka.broker: {error}", file=sys.stderr)
        return 1
    return 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m stock_kafka.broker",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("run", help="run N stock Kafka brokers until stopped")
    command.add_argument("--count", type=int, default=1)
    command.add_argument("--controller", required=True, help="HOST:PORT of the controller listener")
    command.add_argument("--controller-id", type=int, default=DEFAULT_CONTROLLER_ID)
    command.add_argument("--cluster-id", required=True)
    command.add_argument(
        "--credentials", required=True, help="a file of PRINCIPAL TOKEN lines, one per broker"
    )
    command.add_argument("--work-dir", default=str(kafka.ROOT / "var" / "kafka-brokers"))
    command.add_argument("--first-node-id", type=int, default=100)
    command.add_argument("--heap", default=kafka.DEFAULT_HEAP)
    command.add_argument(
        "--kafka-version", default=None, help="an installed release (KAFKA_VERSION; the pinned one)"
    )
    command.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE", help="a broker property"
    )
    command.add_argument(
        "--delegation-token-secret-key-file",
        default=None,
        metavar="PATH",
        help="a file holding the control plane's delegation-token key: every broker's "
        "delegation.token.secret.key (Kafka wants the same key on every node)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    options = parser().parse_args(argv)
    if options.command == "run":
        return run(options)
    return 2  # pragma: no cover - argparse requires a command


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

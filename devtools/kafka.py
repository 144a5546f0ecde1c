"""Apache Kafka's own jars (scripts/install-kafka.sh) run as Kafka's scripts run them.

`kafka.Kafka` with a `server.properties` and a heap, or any class of the jars (`StorageTool`,
`DumpLogSegments`, `MetadataQuorumCommand`): the same `java -cp libs/*` line Kafka's
`kafka-run-class.sh` builds, with a small heap for machines that run several brokers beside
everything else.

    python -m devtools.kafka --version
    python -m devtools.kafka server config/server.properties --heap 256m
    python -m devtools.kafka run-class kafka.tools.StorageTool format -t ID -c server.properties
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "scripts" / "kafka" / "pom.xml"
LOG4J_CONFIG = ROOT / "scripts" / "kafka" / "log4j2.properties"
DEFAULT_HEAP = "256m"


class KafkaJarsMissing(RuntimeError):
    """The jars are not installed (`bash scripts/install-kafka.sh`) or no Java 17+ is found."""


def pinned_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise KafkaJarsMissing(f"{POM} names no kafka.version")
    return match.group(1)


def libs_dir() -> Path:
    """Where install-kafka.sh put the pinned version's jars (`CP_KAFKA_LIBS` overrides)."""
    override = os.environ.get("CP_KAFKA_LIBS")
    return Path(override) if override else ROOT / "var" / "kafka" / pinned_version() / "libs"


def java_executable() -> str:
    """`$JAVA_HOME/bin/java` when set, else the `java` on PATH (Kafka 4 needs Java 17+)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise KafkaJarsMissing("no java on PATH (bash scripts/install-java.sh)")
    return java


def installed() -> bool:
    return any(libs_dir().glob("kafka_2.13-*.jar"))


def java_command(
    main_class: str,
    args: Sequence[str] = (),
    *,
    heap: str = DEFAULT_HEAP,
    log_dir: Path | None = None,
) -> list[str]:
    """The JVM command line Kafka's kafka-run-class.sh would build for `main_class`."""
    if not installed():
        raise KafkaJarsMissing(f"no Kafka jars in {libs_dir()} (bash scripts/install-kafka.sh)")
    return [
        java_executable(),
        f"-Xms{heap}",
        f"-Xmx{heap}",
        # Kafka's own JVM flags (kafka-run-class.sh), less what small test machines cannot spare.
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-XX:TieredStopAtLevel=1",  # C1 only: a broker starts in half the CPU on two cores
        "-Xss512k",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
        f"-Dkafka.logs.dir={log_dir or Path(os.environ.get('TMPDIR', '/tmp'))}",
        "-cp",
        f"{libs_dir()}/*",
        main_class,
        *args,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.kafka", description=__doc__)
    parser.add_argument("--heap", default=DEFAULT_HEAP, help="the JVM's -Xms/-Xmx (256m)")
    parser.add_argument("--version", action="store_true", help="kafka.Kafka --version")
    commands = parser.add_subparsers(dest="command")
    server = commands.add_parser("server", help="run kafka.Kafka with a server.properties")
    server.add_argument("properties")
    server.add_argument(
        "overrides", nargs=argparse.REMAINDER, help="--override key=value ..., as kafka.Kafka takes"
    )
    run_class = commands.add_parser("run-class", help="run any class of the jars")
    run_class.add_argument("main_class")
    run_class.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    try:
        command = _command(options)
    except KafkaJarsMissing as error:
        print(f"devtools.kafka: {error}", file=sys.stderr)
        return 2
    if command is None:
        parser.print_help()
        return 2
    try:
        os.execv(command[0], command)
    except OSError as error:  # pragma: no cover - exec only returns on failure
        print(f"cannot run {command[0]}: {error}", file=sys.stderr)
        return 1
    return 0  # pragma: no cover


def _command(options: argparse.Namespace) -> list[str] | None:
    if options.version:
        return java_command("kafka.Kafka", ["--version"], heap=options.heap)
    if options.command == "server":
        arguments = [options.properties, *options.overrides]
        return java_command("kafka.Kafka", arguments, heap=options.heap)
    if options.command == "run-class":
        return java_command(options.main_class, options.args, heap=options.heap)
    return None


if __name__ == "__main__":
    sys.exit(main())

"""Apache Kafka's own jars (scripts/install-kafka.sh) run as Kafka's scripts run them.

`kafka.Kafka` with a `server.properties` and a heap, or any class of the jars (`StorageTool`,
`DumpLogSegments`, `MetadataQuorumCommand`): the same `java -cp libs/*` line Kafka's
`kafka-run-class.sh` builds, with a small heap for machines that run several brokers beside
everything else.

One version is pinned (`scripts/kafka/pom.xml`); any other 4.x release installed beside it
(`bash scripts/install-kafka.sh 4.4.0`) is chosen with `KAFKA_VERSION` or `--kafka-version`.
Kafka moves its tools between packages across releases, so a tool is found by its class's
simple name in the chosen jars (`tool_class("ConfigCommand")`), never by a hard-coded package.

    python -m stock_kafka --version
    python -m stock_kafka server config/server.properties --heap 256m
    python -m stock_kafka run-class kafka.tools.StorageTool format -t ID -c server.properties
    python -m stock_kafka --kafka-version 4.4.0 tool ConfigCommand --help
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import sys
import zipfile
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


# The releases the broker matrix runs (`make test-kafka-matrix`): the newest patch of each 4.x
# line served by Maven Central; the pinned one is among them.
MATRIX_VERSIONS = ("4.0.2", "4.1.1", "4.2.2", "4.3.1", "4.4.0")
_VERSION = re.compile(r"\d+\.\d+\.\d+")


def chosen_version(version: str | None = None) -> str:
    """`version`, else `KAFKA_VERSION` from the environment, else the pinned one."""
    chosen = version or os.environ.get("KAFKA_VERSION") or pinned_version()
    if not _VERSION.fullmatch(chosen):
        raise KafkaJarsMissing(f"{chosen!r} is not a Kafka release (like 4.4.0)")
    return chosen


def libs_dir(version: str | None = None) -> Path:
    """Where install-kafka.sh put a version's jars; `CP_KAFKA_LIBS` overrides the pinned one's."""
    chosen = chosen_version(version)
    override = os.environ.get("CP_KAFKA_LIBS")
    if override and chosen == pinned_version():
        return Path(override)
    return ROOT / "var" / "kafka" / chosen / "libs"


def version_tuple(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in version.split("."))
    return major, minor, patch


def java_executable() -> str:
    """`$JAVA_HOME/bin/java` when set, else the `java` on PATH (Kafka 4 needs Java 17+)."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise KafkaJarsMissing("no java on PATH (bash scripts/install-java.sh)")
    return java


def installed(version: str | None = None) -> bool:
    return any(libs_dir(version).glob("kafka_2.13-*.jar"))


def _require(version: str | None) -> Path:
    if not installed(version):
        chosen = chosen_version(version)
        raise KafkaJarsMissing(
            f"no Kafka jars in {libs_dir(version)} (bash scripts/install-kafka.sh {chosen})"
        )
    return libs_dir(version)


@functools.cache
def _classes(libs: Path) -> dict[str, tuple[str, ...]]:
    """Every class of Kafka's own jars in `libs`, by simple name (nested classes left out)."""
    found: dict[str, list[str]] = {}
    for jar in sorted(libs.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if not name.endswith(".class") or "$" in name:
                    continue
                dotted = name[: -len(".class")].replace("/", ".")
                found.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    return {simple: tuple(sorted(names)) for simple, names in found.items()}


def tool_class(simple_name: str, version: str | None = None) -> str:
    """The fully qualified class of a Kafka tool in a version's jars (`ConfigCommand` is
    `kafka.admin.ConfigCommand` in 4.1 and `org.apache.kafka.tools.ConfigCommand` in 4.4): the
    one in a tools package when several classes share the name."""
    names = _classes(_require(version)).get(simple_name, ())
    if not names:
        raise KafkaJarsMissing(f"no class {simple_name} in {libs_dir(version)}")
    tools = [n for n in names if ".tools." in n or n.startswith("kafka.admin.")]
    return (tools or list(names))[0]


def java_command(
    main_class: str,
    args: Sequence[str] = (),
    *,
    heap: str = DEFAULT_HEAP,
    log_dir: Path | None = None,
    version: str | None = None,
) -> list[str]:
    """The JVM command line Kafka's kafka-run-class.sh would build for `main_class`."""
    libs = _require(version)
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
        f"{libs}/*",
        main_class,
        *args,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stock_kafka", description=__doc__)
    parser.add_argument("--heap", default=DEFAULT_HEAP, help="the JVM's -Xms/-Xmx (256m)")
    parser.add_argument(
        "--kafka-version", default=None, help="an installed release (KAFKA_VERSION; the pinned one)"
    )
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
    tool = commands.add_parser("tool", help="run a Kafka tool by its class's simple name")
    tool.add_argument("simple_name", help="ConfigCommand, TopicCommand, FeatureCommand, ...")
    tool.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    try:
        command = _command(options)
    except KafkaJarsMissing as error:
        print(f"stock_kafka: {error}", file=sys.stderr)
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
    java = functools.partial(java_command, heap=options.heap, version=options.kafka_version)
    if options.version:
        return java("kafka.Kafka", ["--version"])
    if options.command == "server":
        return java("kafka.Kafka", [options.properties, *options.overrides])
    if options.command == "run-class":
        return java(options.main_class, options.args)
    if options.command == "tool":
        return java(tool_class(options.simple_name, options.kafka_version), options.args)
    return None


if __name__ == "__main__":
    sys.exit(main())

"""Kafka's own command-line tools (their classes from a release's jars, unmodified) run as an
operator runs them: `kafka-features.sh` is FeatureCommand, `kafka-topics.sh` TopicCommand, and
so on, found by simple name in the chosen release (stock_kafka.jars.tool_class: Kafka moves
them between packages). A small heap, a bounded wait, the output kept for the assertion."""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from stock_kafka import jars as kafka
from stock_kafka.broker_config import jaas_plain

TOOL_HEAP = "192m"
TOOL_TIMEOUT_S = 120
# As Kafka's bin/ scripts run their tools (config/tools-log4j2.yaml): warnings, to stderr, so
# stdout holds what the tool prints.
TOOLS_LOG4J = """\
status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
"""

# The scripts an operator types, by the class each runs.
SCRIPTS = {
    "kafka-topics": "TopicCommand",
    "kafka-configs": "ConfigCommand",
    "kafka-acls": "AclCommand",
    "kafka-leader-election": "LeaderElectionCommand",
    "kafka-features": "FeatureCommand",
    "kafka-metadata-quorum": "MetadataQuorumCommand",
    "kafka-delegation-tokens": "DelegationTokenCommand",
    "kafka-cluster": "ClusterTool",
    "kafka-log-dirs": "LogDirsCommand",
    "kafka-consumer-groups": "ConsumerGroupCommand",
    "kafka-transactions": "TransactionsCommand",
    "kafka-broker-api-versions": "BrokerApiVersionsCommand",
    "kafka-dump-log": "DumpLogSegments",
    "kafka-storage": "StorageTool",
    "kafka-reassign-partitions": "ReassignPartitionsCommand",
    "kafka-client-metrics": "ClientMetricsCommand",
}


@dataclasses.dataclass(frozen=True)
class Ran:
    command: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def ok(self) -> Ran:
        assert self.returncode == 0, (
            f"{' '.join(self.command[-12:])} exited {self.returncode}:\n{self.output[-4000:]}"
        )
        return self


def sasl_config(path: Path, user: str, password: str) -> Path:
    """An admin client's --command-config for SASL/PLAIN (a broker's SASL client listener, or
    a controller listener with `--bootstrap-controller`)."""
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={jaas_plain(user, password)}\n"
    )
    path.chmod(0o600)
    return path


def run(
    script: str,
    *args: str,
    version: str | None = None,
    timeout: float = TOOL_TIMEOUT_S,
    cwd: Path | None = None,
) -> Ran:
    """`script` (kafka-features, ...) of release `version` (the pinned one by default)."""
    main_class = kafka.tool_class(SCRIPTS[script], version)
    command = kafka.java_command(main_class, list(args), heap=TOOL_HEAP, version=version)
    config = Path(tempfile.gettempdir()) / "cp-tools-log4j2.properties"
    if not config.exists():
        config.write_text(TOOLS_LOG4J)
    command = [
        f"-Dlog4j2.configurationFile={config}"
        if arg.startswith("-Dlog4j2.configurationFile=")
        else arg
        for arg in command
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd
    )
    return Ran(command, done.returncode, done.stdout, done.stderr)


def versions(default: Sequence[str] = ()) -> list[str]:
    """The releases whose tools a suite runs: the pinned one and the newest installed beside it."""
    chosen = [kafka.pinned_version(), *default]
    return [v for v in dict.fromkeys(chosen) if kafka.installed(v)]

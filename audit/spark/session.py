"""One Spark session for the audit jobs: `local[*]` embedded, or a cluster's `--master`.

Spark reports a master it cannot reach by retrying for minutes and then with a Java stack
trace; a `spark://` master is checked here first, so the command says at once what is wrong.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import urllib.parse
from typing import Any

DEFAULT_MASTER = "local[*]"
APP_NAME = "kafka-controlplane-audit"
CONNECT_TIMEOUT_S = 5.0


class SparkUnavailable(Exception):
    """Spark cannot start here, or its master cannot be reached: said in words."""


def spark_session(master: str | None = None, *, app_name: str = APP_NAME) -> Any:
    """The process's Spark session (created on first use; later calls share it)."""
    master = master or DEFAULT_MASTER
    check_master(master)
    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise SparkUnavailable(
            "Java is not installed: Spark needs Java 17 (apt-get install openjdk-17-jre-headless)."
        )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    try:
        session = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", os.environ.get("CP_SPARK_PARTITIONS", "8"))
            .config("spark.driver.bindAddress", os.environ["SPARK_LOCAL_IP"])
            .getOrCreate()
        )
    except Exception as error:  # the JVM did not start: say why in one line
        raise SparkUnavailable(
            f"Spark could not start with master {master}: {_first_line(error)}"
        ) from None
    session.sparkContext.setLogLevel(os.environ.get("CP_SPARK_LOG_LEVEL", "ERROR"))
    return session


def check_master(master: str) -> None:
    """Refuse a `spark://host:port` master that does not answer, naming it."""
    if not master.startswith("spark://"):
        if master.startswith(("local", "yarn", "k8s://", "mesos://")):
            return
        raise SparkUnavailable(
            f"Unknown Spark master {master!r}: use local[*], spark://HOST:PORT, yarn or k8s://..."
        )
    for hostport in master[len("spark://") :].split(","):
        parts = urllib.parse.urlsplit(f"//{hostport}")
        host, port = parts.hostname, parts.port or 7077
        try:
            with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as error:
            problem = error.strerror or str(error)
    raise SparkUnavailable(f"Cannot reach the Spark master {master}: {problem}.")


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__

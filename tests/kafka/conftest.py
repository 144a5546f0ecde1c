"""Tests that run Apache Kafka's own jars (scripts/install-kafka.sh, `make test` installs them)."""

from __future__ import annotations

import pytest

from stock_kafka import jars as kafka
from tests.conftest import REQUIRE_SERVICES


def need_kafka_jars() -> None:
    """The pinned Kafka's jars and a Java 17+: missing fails under CP_REQUIRE_SERVICES=1."""
    try:
        kafka.java_executable()
        if kafka.installed():
            return
        message = f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh)"
    except kafka.KafkaJarsMissing as error:
        message = str(error)
    if REQUIRE_SERVICES:
        pytest.fail(f"{message} and CP_REQUIRE_SERVICES=1")
    pytest.skip(message)


@pytest.fixture
def kafka_jars() -> None:
    need_kafka_jars()

#!/usr/bin/env bash
# PySpark (the audit pipeline) and Kafka's brokers run on Java 17 or newer: use the machine's, or
# install Debian's (the JDK: bench-real-cluster-failover runs a Java client from its source).
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 || true)
if [ -n "${version}" ] && [ "${version}" -ge 17 ]; then exit 0; fi
apt_install openjdk-17-jdk-headless ||
  echo "Java 17 is missing: the audit export works, Spark reports and real Kafka brokers need it." >&2

#!/usr/bin/env bash
# PySpark (the audit pipeline) runs on Java 17 or newer: use the machine's, or install Debian's.
set -euo pipefail
version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1 || true)
if [ -n "${version}" ] && [ "${version}" -ge 17 ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "Java 17 is missing and cannot be installed here (needs root and apt-get): the audit" \
       "export works, Spark reports need it." >&2
  exit 0
fi
echo "Installing Java 17 (Debian's openjdk-17-jre-headless) for PySpark..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null

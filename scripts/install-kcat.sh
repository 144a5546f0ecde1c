#!/usr/bin/env bash
# Debian's kcat (with Debian's librdkafka 2.0.2): the oldest librdkafka an operator may point at
# the Kafka protocol listener (tests/wire/test_kcat.py), beside confluent-kafka's newer one.
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
command -v kcat >/dev/null && exit 0
apt_install kcat || echo "kcat is missing: tests/wire/test_kcat.py will fail (CI) or skip." >&2

#!/usr/bin/env bash
# kafkajs (the npm registry) for the Kafka protocol listener's conformance test, pinned by
# tests/wire/kafkajs/package-lock.json. Without Node.js the test says so (and fails in CI).
set -euo pipefail
cd "$(dirname "$0")/../tests/wire/kafkajs"
if ! command -v npm >/dev/null; then
  echo "npm is missing: tests/wire/test_kafkajs.py needs Node.js" >&2
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null

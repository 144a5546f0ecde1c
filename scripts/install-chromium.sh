#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (never a browser downloaded by a test tool).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "Chromium is missing and cannot be installed here (needs root and apt-get)." >&2
  exit 0
fi
echo "Installing Debian's chromium for the browser tests..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (never a browser downloaded by a test tool).
set -euo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"
if [ -x /usr/bin/chromium ]; then exit 0; fi
apt_install chromium || echo "Chromium is missing: the browser tests will fail (CI) or skip." >&2

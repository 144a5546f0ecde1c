#!/usr/bin/env bash
# The services `make test` needs, installed and started only when missing: PostgreSQL (Debian's
# `postgresql`, a cluster started with pg_ctlcluster, trust auth for loopback so the URLs carry no
# password, the URL's database and a `test` database) and Redis (Debian's `redis-server`, no
# persistence, loopback only). A service already answering at the URL is left as it is; a URL
# that names another host is never installed here. Under CP_REQUIRE_SERVICES=1 (CI) a service
# that is still not answering fails the command.
set -uo pipefail
# shellcheck source=lib/apt.sh
. "$(dirname "$0")/lib/apt.sh"

DATABASE_URL_FOR_TESTS=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/controlplane}
REDIS_URL_FOR_TESTS=${CP_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}

# host port database-or-db-number, from a URL (python3 is on every machine this runs on).
url_parts() {
  python3 - "$1" <<'PY'
import sys
from urllib.parse import urlsplit
url = urlsplit(sys.argv[1])
default = 6379 if url.scheme.startswith("redis") else 5432
print(url.hostname or "127.0.0.1", url.port or default, url.path.lstrip("/") or "postgres")
PY
}

is_local() { case "$1" in 127.*|localhost|::1) return 0 ;; *) return 1 ;; esac; }

read -r PG_HOST PG_PORT PG_DB < <(url_parts "$DATABASE_URL_FOR_TESTS")
read -r REDIS_HOST REDIS_PORT _ < <(url_parts "$REDIS_URL_FOR_TESTS")

postgres_ready() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT" 2>/dev/null; }
redis_ready() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

# The Debian cluster serving $PG_PORT: "version name", created when there is none.
postgres_cluster() {
  local cluster
  cluster=$(pg_lsclusters -h 2>/dev/null | awk -v port="$PG_PORT" '$3 == port {print $1, $2; exit}')
  if [ -z "$cluster" ]; then
    local version
    version=$(ls /usr/lib/postgresql | sort -n | tail -1)
    echo "Creating a PostgreSQL $version cluster on port $PG_PORT..." >&2
    pg_createcluster -p "$PG_PORT" "$version" main >/dev/null || return 1
    cluster="$version main"
  fi
  echo "$cluster"
}

# Trust auth for loopback, ahead of Debian's own lines (pg_hba.conf: the first match wins).
postgres_trust_loopback() {
  local hba="/etc/postgresql/$1/$2/pg_hba.conf" marker="# kafka-controlplane: tests connect without a password"
  grep -qF "$marker" "$hba" && return 0
  local rules
  rules=$(printf '%s\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all postgres trust\n' "$marker")
  { echo "$rules"; cat "$hba"; } >"$hba.new" && mv "$hba.new" "$hba"
  chown postgres:postgres "$hba"
  # Room for the integration stacks (web workers, controllers, Celery) beside the suite.
  echo "max_connections = 300" >"/etc/postgresql/$1/$2/conf.d/90-kafka-controlplane-tests.conf"
}

start_postgres() {
  is_local "$PG_HOST" || return 1  # another host: never installed nor started here
  command -v pg_ctlcluster >/dev/null && [ -d /usr/lib/postgresql ] || apt_install postgresql || return 1
  local cluster
  cluster=$(postgres_cluster) || return 1
  # shellcheck disable=SC2086
  postgres_trust_loopback $cluster
  echo "Starting PostgreSQL ($cluster, port $PG_PORT)..."
  # shellcheck disable=SC2086
  pg_ctlcluster --skip-systemctl-redirect $cluster start || pg_ctlcluster --skip-systemctl-redirect $cluster reload
}

create_databases() {
  local name
  for name in "$PG_DB" test; do
    psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -tAc \
      "SELECT 1 FROM pg_database WHERE datname = '$name'" 2>/dev/null | grep -q 1 ||
      psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -qc "CREATE DATABASE \"$name\"" || true
  done
}

start_redis() {
  is_local "$REDIS_HOST" || return 1
  command -v redis-server >/dev/null || apt_install redis-server || return 1
  echo "Starting Redis (port $REDIS_PORT, no persistence)..."
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir /tmp --logfile "/tmp/redis-$REDIS_PORT.log"
}

wait_until() {  # wait_until TRIES COMMAND...: half a second between tries
  local tries=$1
  shift
  for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.5; done
  return 1
}

# Waits only for what this script started; a service it left alone answers now or never.
pg_waits=1 redis_waits=1
postgres_ready || { start_postgres && pg_waits=60; }
redis_ready || { start_redis && redis_waits=60; }
status=0
if wait_until "$pg_waits" postgres_ready; then
  create_databases
else
  echo "PostgreSQL is not answering at $PG_HOST:$PG_PORT." >&2
  status=1
fi
if ! wait_until "$redis_waits" redis_ready; then
  echo "Redis is not answering at $REDIS_HOST:$REDIS_PORT." >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  if [ "${CP_REQUIRE_SERVICES:-}" = 1 ]; then
    echo "CP_REQUIRE_SERVICES=1: the tests need them." >&2
    exit 1
  fi
  echo "warning: tests that need them will skip." >&2
fi
exit 0

#!/usr/bin/env bash
# The run command's body: embedded default (SQLite, in-process controller) with a demo cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT="${PORT:-8000}"
INTERNAL_PORT="${INTERNAL_PORT:-8001}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_SASL_PORT="${KAFKA_SASL_PORT:-9093}"
# Real Apache Kafka brokers (the pinned jars, unmodified) under this control plane: 0 = none.
KAFKA_BROKERS="${KAFKA_BROKERS:-0}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9098}"  # not 9092-9097: the simulated brokers advertise those
KAFKA_BROKER_DIR="${KAFKA_BROKER_DIR:-var/kafka-brokers}"  # the real brokers' data and logs
KAFKA_FIRST_BROKER_ID=100  # the simulated brokers are 0-5
URL="http://127.0.0.1:${PORT}"
INTERNAL_URL="http://127.0.0.1:${INTERNAL_PORT}"
if [ "$PORT" = "$INTERNAL_PORT" ]; then
  echo "PORT and INTERNAL_PORT must differ (the public and the internal listener): both are ${PORT}" >&2
  exit 2
fi
case "$KAFKA_BROKERS" in
  ''|*[!0-9]*) echo "KAFKA_BROKERS must be a number of brokers: ${KAFKA_BROKERS}" >&2; exit 2 ;;
esac
mkdir -p var
if [ "$KAFKA_BROKERS" -gt 0 ]; then
  bash scripts/install-kafka.sh ${KAFKA_VERSION:-}
  if ! missing=$($PY -c 'from stock_kafka import jars as kafka
kafka.java_executable()
assert kafka.installed(), f"no Kafka jars in {kafka.libs_dir()} (bash scripts/install-kafka.sh {kafka.chosen_version()})"' 2>&1); then
    echo "KAFKA_BROKERS=${KAFKA_BROKERS} needs Java 17+ and Kafka's jars: ${missing##*: }" >&2
    exit 2
  fi
fi
unset DATABASE_URL CELERY_BROKER_URL
export CP_SUPER_USERS="${CP_SUPER_USERS:-User:admin}"
# The key that signs delegation tokens (a node setting, never a record of the metadata log):
# the operator's (CP_DELEGATION_TOKEN_SECRET_KEY or _FILE), else one made for this run. It
# lives in a file (mode 0600) the control plane and the real brokers read, never on a command
# line; tokens of an earlier run with another key are no longer accepted.
TOKEN_KEY_FILE=var/delegation-token-secret-key
TOKEN_KEY_MSG="  Delegation tokens: signed with the key in ${TOKEN_KEY_FILE} (made for this run)"
if [ -n "${CP_DELEGATION_TOKEN_SECRET_KEY_FILE:-}" ]; then
  TOKEN_KEY_FILE="$CP_DELEGATION_TOKEN_SECRET_KEY_FILE"
  TOKEN_KEY_MSG="  Delegation tokens: signed with the key in ${TOKEN_KEY_FILE}"
else
  rm -f "$TOKEN_KEY_FILE"
  if [ -n "${CP_DELEGATION_TOKEN_SECRET_KEY:-}" ]; then
    (umask 077; printf '%s\n' "$CP_DELEGATION_TOKEN_SECRET_KEY" > "$TOKEN_KEY_FILE")
    TOKEN_KEY_MSG="  Delegation tokens: signed with CP_DELEGATION_TOKEN_SECRET_KEY"
  else
    (umask 077; $PY -c 'import secrets; print(secrets.token_urlsafe(32))' > "$TOKEN_KEY_FILE")
  fi
  unset CP_DELEGATION_TOKEN_SECRET_KEY
  export CP_DELEGATION_TOKEN_SECRET_KEY_FILE="$PWD/$TOKEN_KEY_FILE"
fi
# The demo returns preferred leaders within seconds after a restart (Kafka's default: 300 s).
export CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS="${CP_LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS:-10}"
# One process, two listeners: the public one on PORT, the brokers' (internal) one on INTERNAL_PORT.
export CP_LISTENER=public CP_INTERNAL_PORT="$INTERNAL_PORT"
# Kafka's own protocol for stock admin clients, hosted by the same (embedded) process: PLAINTEXT
# is User:ANONYMOUS, SASL_PLAINTEXT takes SASL/PLAIN with a principal's name and token.
export CP_KAFKA_LISTENERS="PLAINTEXT://127.0.0.1:${KAFKA_PORT},SASL_PLAINTEXT://127.0.0.1:${KAFKA_SASL_PORT}"
# Each simulated broker at a port of its own (chosen by the OS): every client, kafkajs included,
# sees one address per node id.
export CP_KAFKA_PORT_PER_NODE=1
if [ "$KAFKA_BROKERS" -gt 0 ]; then
  # The controller's listener, where real brokers follow the metadata log (Raft Fetch) and
  # register and heartbeat: SASL/PLAIN, each broker a broker principal (name and token).
  CP_KAFKA_LISTENERS="${CP_KAFKA_LISTENERS},CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT}"
  export CP_KAFKA_LISTENER_SECURITY_PROTOCOL_MAP="CONTROLLER:SASL_PLAINTEXT"
  export CP_KAFKA_CONTROLLER_LISTENER_NAMES="CONTROLLER"
fi

$PY manage.py migrate --noinput -v0
$PY manage.py collectstatic --noinput -v0
ADMIN_TOKEN=$($PY manage.py create_principal admin --super-user | tail -n 1)
BROKER_TOKEN=$($PY manage.py create_principal demo-brokers --broker | tail -n 1)
if [ "$KAFKA_BROKERS" -gt 0 ]; then
  # One broker principal per real broker: `PRINCIPAL TOKEN` lines for stock_kafka.broker.
  mkdir -p "$KAFKA_BROKER_DIR"
  credentials="${KAFKA_BROKER_DIR}/credentials"
  (umask 077; : > "$credentials")
  for i in $(seq 0 $((KAFKA_BROKERS - 1))); do
    name="kafka-broker-$((KAFKA_FIRST_BROKER_ID + i))"
    echo "${name} $($PY manage.py create_principal "$name" --broker | tail -n 1)" >> "$credentials"
  done
fi

pids=()
kafka_pid=""
cleanup() {
  echo; echo "Stopping..."
  # The real brokers first: their controlled shutdown needs the controller.
  if [ -n "$kafka_pid" ]; then kill "$kafka_pid" 2>/dev/null || true; wait "$kafka_pid" 2>/dev/null || true; fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# The control plane's server (controlplane/server): each listener has its own thread pool, slow
# clients time out (header and body deadlines), long-polls wait without a thread.
.venv/bin/gunicorn controlplane.wsgi:application \
  --bind "127.0.0.1:${PORT}" --bind "127.0.0.1:${INTERNAL_PORT}" \
  --workers 1 --threads 16 --worker-class controlplane.server.worker.ControlPlaneWorker \
  --no-control-socket --config python:controlplane.gunicorn_conf \
  --error-logfile var/server.log &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS -o /dev/null "${URL}/metrics" 2>/dev/null \
    && curl -fsS -o /dev/null "${INTERNAL_URL}/metrics" 2>/dev/null && break
  sleep 0.2
done

# A topic (`$1`: CreateTopics' JSON of one topic), retried until created or there already.
create_topic() {
  for _ in $(seq 1 60); do
    answer=$(curl -fsS -X POST "${URL}/api/v1/create-topics" \
      -H "Authorization: Bearer ${ADMIN_TOKEN}" -H "Content-Type: application/json" \
      -d "{\"topics\":[$1]}" 2>/dev/null || true)
    case "$answer" in
      *'"error_code":0'*|*'"error_code": 0'*|*TOPIC_ALREADY_EXISTS*|*'"error_code":36'*) break ;;
    esac
    sleep 0.5
  done
}

# Simulated brokers, unless real ones run instead: a real broker's clients learn every broker's
# address from it, and nothing listens at a simulated broker's.
DEMO_MSG="  Demo cluster: 6 simulated brokers (5 broker + 1 canary-broker, 3 racks) and the topic
  demo-orders (12 partitions, RF 3); simulator log in var/simulator.log"
if [ "$KAFKA_BROKERS" -eq 0 ]; then
  $PY manage.py simulate_brokers --internal-url "$INTERNAL_URL" --url "$URL" --token "$BROKER_TOKEN" \
    --brokers 5 --canary 1 --racks 3 --software-version 3.9.0 --canary-software-version 3.9.1 \
    > var/simulator.log 2>&1 &
  pids+=($!)

  # A demo topic once every simulated broker is unfenced (leaders go to unfenced brokers only).
  for _ in $(seq 1 60); do
    curl -fsS -H "Authorization: Bearer ${ADMIN_TOKEN}" "${URL}/api/v1/cluster" 2>/dev/null \
      | grep -q '"UNFENCED":6' && break
    sleep 0.5
  done
  create_topic '{"name":"demo-orders","num_partitions":12,"replication_factor":3}'
fi

KAFKA_MSG=""
if [ "$KAFKA_BROKERS" -gt 0 ]; then
  cluster_id=""
  for _ in $(seq 1 60); do
    cluster_id=$(curl -fsS -H "Authorization: Bearer ${ADMIN_TOKEN}" "${URL}/api/v1/cluster" 2>/dev/null \
      | $PY -c 'import json, sys; print(json.load(sys.stdin).get("cluster_id") or "")' 2>/dev/null || true)
    [ -n "$cluster_id" ] && break
    sleep 0.5
  done
  $PY -m stock_kafka.broker run --count "$KAFKA_BROKERS" \
    --controller "127.0.0.1:${KAFKA_CONTROLLER_PORT}" --controller-id "${CP_CONTROLLER_ID:-3000}" \
    --cluster-id="$cluster_id" --credentials "${KAFKA_BROKER_DIR}/credentials" \
    --work-dir "$KAFKA_BROKER_DIR" --first-node-id "$KAFKA_FIRST_BROKER_ID" \
    --delegation-token-secret-key-file "$CP_DELEGATION_TOKEN_SECRET_KEY_FILE" \
    > var/kafka-brokers.log 2>&1 &
  kafka_pid=$!
  # Each broker registers, catches up and is unfenced (a JVM's start: some seconds each).
  last_id=$((KAFKA_FIRST_BROKER_ID + KAFKA_BROKERS - 1))
  for _ in $(seq 1 $((60 + 30 * KAFKA_BROKERS))); do
    state=$(curl -fsS -H "Authorization: Bearer ${ADMIN_TOKEN}" "${URL}/api/v1/brokers/${last_id}" 2>/dev/null || true)
    case "$state" in *'"state":"UNFENCED"'*|*'"state": "UNFENCED"'*) break ;; esac
    kill -0 "$kafka_pid" 2>/dev/null || break
    sleep 1
  done
  # Their topic, on their ids (a database of an earlier run may hold demo-orders on simulated
  # brokers' ids): real-orders, 3 partitions at RF up to 3.
  rf=$(( KAFKA_BROKERS < 3 ? KAFKA_BROKERS : 3 ))
  assignments=$($PY -c "import json, sys
n, first, rf = map(int, sys.argv[1:])
print(json.dumps([{'partition_index': p, 'broker_ids': [first + (p + k) % n for k in range(rf)]} for p in range(3)]))" \
    "$KAFKA_BROKERS" "$KAFKA_FIRST_BROKER_ID" "$rf")
  create_topic "{\"name\":\"real-orders\",\"num_partitions\":-1,\"replication_factor\":-1,\"assignments\":${assignments}}"
  bootstrap=$(grep -o '^Kafka broker [0-9]* (pid [0-9]*): [0-9.]*:[0-9]*' var/kafka-brokers.log \
    | sed 's/.*: //' | paste -sd, -)
  DEMO_MSG="  Demo cluster: ${KAFKA_BROKERS} real Kafka broker(s) instead of the simulated ones, and the topic
  real-orders on them (3 partitions, RF ${rf})"
  KAFKA_MSG="
  Real Kafka brokers (Apache Kafka $($PY -c 'from stock_kafka import jars as kafka; print(kafka.chosen_version())'), stock jars), controller listener CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT} (SASL/PLAIN):
$(grep '^Kafka broker [0-9]* (pid' var/kafka-brokers.log | sed 's/^/    /')
    Each broker's own log: ${KAFKA_BROKER_DIR}/broker-ID/broker.log; the launcher's: var/kafka-brokers.log
    Their state: curl -H \"Authorization: Bearer ${ADMIN_TOKEN}\" ${URL}/api/v1/brokers/${KAFKA_FIRST_BROKER_ID}
    Produce to real-orders, then consume it, with a stock client (a consumer group takes some seconds to join):
      .venv/bin/python -c \"from kafka import KafkaProducer; p = KafkaProducer(bootstrap_servers='${bootstrap}', acks='all'); [p.send('real-orders', b'hello %d' % i) for i in range(10)]; p.flush(); print('10 sent')\"
      .venv/bin/python -c \"from kafka import KafkaConsumer; c = KafkaConsumer('real-orders', bootstrap_servers='${bootstrap}', group_id='demo', auto_offset_reset='earliest', consumer_timeout_ms=20000); print([m.value.decode() for m in c])\"
"
fi

cat <<MSG

  Kafka control plane running (embedded: SQLite, in-process controller)
    Public listener:    ${URL}   (admin API, UI, docs, metrics)
    Internal listener:  ${INTERNAL_URL}   (the brokers' API: /internal/v1/..., metrics)
    UI:        ${URL}/ui/        (log in as "admin" with the token below)
    API docs:  ${URL}/api/docs/
    Metrics:   ${URL}/metrics
    Kafka protocol: PLAINTEXT 127.0.0.1:${KAFKA_PORT} (User:ANONYMOUS), SASL_PLAINTEXT 127.0.0.1:${KAFKA_SASL_PORT} (SASL/PLAIN)
${DEMO_MSG}
${TOKEN_KEY_MSG}
${KAFKA_MSG}
  Admin token (User:admin, super user):
${ADMIN_TOKEN}

  Try: curl -H "Authorization: Bearer ${ADMIN_TOKEN}" ${URL}/api/v1/cluster
  Or, with a stock Kafka client (kafka-python), list the topics over Kafka's protocol:
    .venv/bin/python -c "from kafka import KafkaAdminClient; print(KafkaAdminClient(bootstrap_servers='127.0.0.1:${KAFKA_SASL_PORT}', security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN', sasl_plain_username='admin', sasl_plain_password='${ADMIN_TOKEN}').list_topics())"
  Ctrl-C stops everything.
MSG
wait

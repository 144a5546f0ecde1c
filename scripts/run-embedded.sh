#!/usr/bin/env bash
# The run command's body: embedded default (SQLite, in-process controller) with a demo cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
PORT="${PORT:-8000}"
INTERNAL_PORT="${INTERNAL_PORT:-8001}"
KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_SASL_PORT="${KAFKA_SASL_PORT:-9093}"
URL="http://127.0.0.1:${PORT}"
INTERNAL_URL="http://127.0.0.1:${INTERNAL_PORT}"
if [ "$PORT" = "$INTERNAL_PORT" ]; then
  echo "PORT and INTERNAL_PORT must differ (the public and the internal listener): both are ${PORT}" >&2
  exit 2
fi
mkdir -p var
unset DATABASE_URL CELERY_BROKER_URL
export CP_SUPER_USERS="${CP_SUPER_USERS:-User:admin}"
# One process, two listeners: the public one on PORT, the brokers' (internal) one on INTERNAL_PORT.
export CP_LISTENER=public CP_INTERNAL_PORT="$INTERNAL_PORT"
# Kafka's own protocol for stock admin clients, hosted by the same (embedded) process: PLAINTEXT
# is User:ANONYMOUS, SASL_PLAINTEXT takes SASL/PLAIN with a principal's name and token.
export CP_KAFKA_LISTENERS="PLAINTEXT://127.0.0.1:${KAFKA_PORT},SASL_PLAINTEXT://127.0.0.1:${KAFKA_SASL_PORT}"
# Each simulated broker at a port of its own (chosen by the OS): every client, kafkajs included,
# sees one address per node id.
export CP_KAFKA_PORT_PER_NODE=1

$PY manage.py migrate --noinput -v0
$PY manage.py collectstatic --noinput -v0
ADMIN_TOKEN=$($PY manage.py create_principal admin --super-user | tail -n 1)
BROKER_TOKEN=$($PY manage.py create_principal demo-brokers --broker | tail -n 1)

pids=()
cleanup() {
  echo; echo "Stopping..."
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
for _ in $(seq 1 60); do
  answer=$(curl -fsS -X POST "${URL}/api/v1/create-topics" \
    -H "Authorization: Bearer ${ADMIN_TOKEN}" -H "Content-Type: application/json" \
    -d '{"topics":[{"name":"demo-orders","num_partitions":12,"replication_factor":3}]}' \
    2>/dev/null || true)
  case "$answer" in
    *'"error_code":0'*|*'"error_code": 0'*|*TOPIC_ALREADY_EXISTS*|*'"error_code":36'*) break ;;
  esac
  sleep 0.5
done

cat <<MSG

  Kafka control plane running (embedded: SQLite, in-process controller)
    Public listener:    ${URL}   (admin API, UI, docs, metrics)
    Internal listener:  ${INTERNAL_URL}   (the brokers' API: /internal/v1/..., metrics)
    UI:        ${URL}/ui/        (log in as "admin" with the token below)
    API docs:  ${URL}/api/docs/
    Metrics:   ${URL}/metrics
    Kafka protocol: PLAINTEXT 127.0.0.1:${KAFKA_PORT} (User:ANONYMOUS), SASL_PLAINTEXT 127.0.0.1:${KAFKA_SASL_PORT} (SASL/PLAIN)
  Demo cluster: 6 simulated brokers (5 broker + 1 canary-broker, 3 racks) and the topic
  demo-orders (12 partitions, RF 3); simulator log in var/simulator.log

  Admin token (User:admin, super user):
${ADMIN_TOKEN}

  Try: curl -H "Authorization: Bearer ${ADMIN_TOKEN}" ${URL}/api/v1/cluster
  Or, with a stock Kafka client (kafka-python), list the topics over Kafka's protocol:
    .venv/bin/python -c "from kafka import KafkaAdminClient; print(KafkaAdminClient(bootstrap_servers='127.0.0.1:${KAFKA_SASL_PORT}', security_protocol='SASL_PLAINTEXT', sasl_mechanism='PLAIN', sasl_plain_username='admin', sasl_plain_password='${ADMIN_TOKEN}').list_topics())"
  Ctrl-C stops everything.
MSG
wait

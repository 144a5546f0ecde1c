#!/usr/bin/env bash
# A stock Apache Kafka broker following this control plane as its KRaft controller: the entrypoint
# docker/compose.yaml gives Apache's own image (apache/kafka, its jars and scripts unmodified),
# mounted read-only. As an operator would by hand (docs/operators/real-brokers.md), it
#
#   1. waits for the control plane's internal listener to answer the broker's own token and reads
#      the cluster id there (GET /internal/v1/metadata: a broker principal's CLUSTER_ACTION is
#      enough; GET /api/v1/cluster would need DESCRIBE, which broker principals do not hold);
#   2. writes server.properties: a broker-only node whose one voter is the control plane's
#      controller listener (controller.quorum.voters=<CP_CONTROLLER_ID>@host:port), reached with
#      SASL/PLAIN as the broker principal; the properties stock_kafka/broker_config.py gives
#      the brokers of the tests (a small cleaner buffer and few threads, as Kafka's test kit);
#   3. formats the log dirs once with that cluster id (kafka-storage.sh format --ignore-formatted;
#      a log dir of another cluster stops it: the control plane's database was started afresh);
#   4. execs Kafka's own kafka-server-start.sh.
#
# The token is read from BROKER_TOKEN_FILE (or BROKER_TOKEN) and written to server.properties
# alone (mode 600); it is never printed, and never on a command line (the HTTP request is written
# by bash itself, to /dev/tcp).
#
# Environment (compose sets it):
#   BROKER_NODE_ID              node.id (required)
#   CONTROLLER_ADDRESS          HOST:PORT of the control plane's CONTROLLER listener (serve_kafka)
#   CONTROLLER_ID               the voter id: the control plane's CP_CONTROLLER_ID (3000)
#   BROKER_TOKEN_FILE           a file holding the broker principal's token (else BROKER_TOKEN)
#   BROKER_PRINCIPAL            its name (kafka-broker-<node id>)
#   CONTROLPLANE_INTERNAL_URL   http://HOST:PORT, the internal listener (cluster id)
#   CLUSTER_ID                  when set, no look-up
#   BROKER_HOST                 the host advertised on PLAINTEXT (this container's hostname)
#   BROKER_PORT                 PLAINTEXT, the inter-broker listener (9092)
#   BROKER_EXTERNAL_PORT        if set, a listener EXTERNAL on it, advertised at
#   BROKER_EXTERNAL_HOST        this host (localhost): for clients outside Compose's network
#   BROKER_LOG_DIRS             log.dirs (/var/lib/kafka/data, the image's volume)
#   BROKER_EXTRA_PROPERTIES     KEY=VALUE lines written last (they win)
#   BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE  a file holding the control plane's delegation-token
#                               key (else BROKER_DELEGATION_TOKEN_SECRET_KEY): the broker's
#                               delegation.token.secret.key; unset or empty: tokens disabled
#   BROKER_WAIT_S               how long to wait for the control plane (600) before exiting 1
#   KAFKA_HOME                  Kafka's directory in the image (/opt/kafka)
#   KAFKA_HEAP_OPTS             Kafka's own (kafka-run-class.sh)
#
# Usage: broker-entrypoint.sh                        run the broker (the container's entrypoint)
#        broker-entrypoint.sh --write-properties FILE  write server.properties there, nothing else
#        broker-entrypoint.sh --print-cluster-id       wait for the control plane, print the id
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) fails the script too

KAFKA_HOME=${KAFKA_HOME:-/opt/kafka}
PROPERTIES_FILE=${BROKER_PROPERTIES_FILE:-$KAFKA_HOME/config/server.properties}
CONTROLLER_LISTENER=CONTROLLER
# Kafka's test kit (KafkaClusterTestKit) lowers the cleaner's 128 MiB dedupe buffer to 2 MiB.
DEDUPE_BUFFER_BYTES=$((2 * 1024 * 1024))
METADATA_PATH="/internal/v1/metadata?max_records=1&wait_ms=0"

log() { printf 'broker-entrypoint: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

need() {  # NAME...: each variable set and not empty
  local name
  for name in "$@"; do
    [[ -n ${!name:-} ]] || die "$name is not set"
  done
}

node_id() {
  need BROKER_NODE_ID
  [[ $BROKER_NODE_ID =~ ^[0-9]+$ ]] || die "BROKER_NODE_ID=$BROKER_NODE_ID is not a node id"
  printf '%s' "$BROKER_NODE_ID"
}

principal() { printf '%s' "${BROKER_PRINCIPAL:-kafka-broker-$(node_id)}"; }

read_token() {  # sets TOKEN (a global: never echoed)
  if [[ -n ${BROKER_TOKEN_FILE:-} ]]; then
    [[ -r $BROKER_TOKEN_FILE ]] || die "cannot read BROKER_TOKEN_FILE=$BROKER_TOKEN_FILE"
    TOKEN=$(<"$BROKER_TOKEN_FILE")
  else
    TOKEN=${BROKER_TOKEN:-}
  fi
  TOKEN=${TOKEN//[$'\r\n\t ']/}
  [[ -n $TOKEN ]] || die "no token: set BROKER_TOKEN_FILE (or BROKER_TOKEN)"
}

read_token_key() {  # sets TOKEN_KEY (a global: never echoed), empty when none is given
  if [[ -n ${BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE:-} ]]; then
    [[ -r $BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE ]] ||
      die "cannot read BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE=$BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE"
    TOKEN_KEY=$(<"$BROKER_DELEGATION_TOKEN_SECRET_KEY_FILE")
  else
    TOKEN_KEY=${BROKER_DELEGATION_TOKEN_SECRET_KEY:-}
  fi
  # Surrounding whitespace stripped, as the control plane reads its setting.
  TOKEN_KEY=${TOKEN_KEY#"${TOKEN_KEY%%[![:space:]]*}"}
  TOKEN_KEY=${TOKEN_KEY%"${TOKEN_KEY##*[![:space:]]}"}
}

# --- server.properties -----------------------------------------------------------------------

BACKSLASH='\'
QUOTE='"'

jaas_quoted() {  # as stock_kafka.broker_config._jaas_quoted: \ and " escaped
  local value=${1//"$BACKSLASH"/"$BACKSLASH$BACKSLASH"}
  value=${value//"$QUOTE"/"$BACKSLASH$QUOTE"}
  printf '"%s"' "$value"
}

jaas_plain() {  # USERNAME PASSWORD: the client side of SASL/PLAIN
  printf 'org.apache.kafka.common.security.plain.PlainLoginModule required username=%s password=%s;' \
    "$(jaas_quoted "$1")" "$(jaas_quoted "$2")"
}

property() {  # KEY VALUE: a Java properties line (backslashes and line breaks escaped)
  local value=${2//"$BACKSLASH"/"$BACKSLASH$BACKSLASH"}
  value=${value//$'\n'/"${BACKSLASH}n"}
  printf '%s=%s\n' "$1" "$value"
}

properties() {  # server.properties on stdout (it holds the token: callers write it to a file)
  local id host port voter endpoints advertised protocols
  id=$(node_id)
  need CONTROLLER_ADDRESS
  [[ $CONTROLLER_ADDRESS =~ ^[^:]+:[0-9]+$ ]] || die "CONTROLLER_ADDRESS=$CONTROLLER_ADDRESS: want HOST:PORT"
  voter="${CONTROLLER_ID:-3000}@$CONTROLLER_ADDRESS"
  host=${BROKER_HOST:-$(hostname)}
  port=${BROKER_PORT:-9092}
  endpoints="PLAINTEXT://0.0.0.0:$port"
  advertised="PLAINTEXT://$host:$port"
  protocols="PLAINTEXT:PLAINTEXT,$CONTROLLER_LISTENER:SASL_PLAINTEXT"
  if [[ -n ${BROKER_EXTERNAL_PORT:-} ]]; then
    endpoints+=",EXTERNAL://0.0.0.0:$BROKER_EXTERNAL_PORT"
    advertised+=",EXTERNAL://${BROKER_EXTERNAL_HOST:-localhost}:$BROKER_EXTERNAL_PORT"
    protocols+=",EXTERNAL:PLAINTEXT"
  fi
  property process.roles broker
  property node.id "$id"
  property listeners "$endpoints"
  property advertised.listeners "$advertised"
  property inter.broker.listener.name PLAINTEXT
  property controller.listener.names "$CONTROLLER_LISTENER"
  property listener.security.protocol.map "$protocols"
  property controller.quorum.voters "$voter"
  property sasl.mechanism.controller.protocol PLAIN
  property "listener.name.${CONTROLLER_LISTENER,,}.plain.sasl.jaas.config" \
    "$(jaas_plain "$(principal)" "$TOKEN")"
  property log.dirs "${BROKER_LOG_DIRS:-/var/lib/kafka/data}"
  # The internal topics at RF 1, one partition each (BROKER_EXTRA_PROPERTIES raises them).
  property offsets.topic.replication.factor 1
  property offsets.topic.num.partitions 1
  property transaction.state.log.replication.factor 1
  property transaction.state.log.min.isr 1
  property transaction.state.log.num.partitions 1
  property share.coordinator.state.topic.replication.factor 1
  property share.coordinator.state.topic.min.isr 1
  property group.initial.rebalance.delay.ms 0
  # Light on a small machine beside the control plane.
  property log.cleaner.dedupe.buffer.size "$DEDUPE_BUFFER_BYTES"
  property log.cleaner.threads 1
  property num.network.threads 1
  property num.io.threads 2
  property background.threads 2
  property num.replica.fetchers 1
  property num.recovery.threads.per.data.dir 1
  property num.partitions 1
  property auto.create.topics.enable false
  read_token_key
  if [[ -n $TOKEN_KEY ]]; then  # the same key as every node of the control plane
    property delegation.token.secret.key "$TOKEN_KEY"
  fi
  if [[ -n ${BROKER_EXTRA_PROPERTIES:-} ]]; then
    printf '%s\n' "$BROKER_EXTRA_PROPERTIES"
  fi
}

write_properties() {  # FILE: written whole (mode 600), then moved into place
  local file=$1 text
  read_token
  text=$(properties)
  (
    umask 077
    printf '%s\n' "$text" >"$file.partial"
  )
  mv "$file.partial" "$file"
}

# --- the cluster id --------------------------------------------------------------------------

http_get() {  # HOST PORT PATH: the raw reply (HTTP/1.0, so never chunked); 1 when nobody answers
  (
    exec 3<>"/dev/tcp/$1/$2" || exit 1
    printf 'GET %s HTTP/1.0\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\nAccept: application/json\r\n\r\n' \
      "$3" "$1" "$2" "$TOKEN" >&3
    line=""
    while IFS= read -r -t 15 line <&3 || [[ -n $line ]]; do
      printf '%s\n' "$line"
      line=""
    done
  ) 2>/dev/null
}

cluster_id() {  # waits for the control plane; prints the cluster id
  if [[ -n ${CLUSTER_ID:-} ]]; then
    printf '%s' "$CLUSTER_ID"
    return
  fi
  need CONTROLPLANE_INTERNAL_URL
  local url=${CONTROLPLANE_INTERNAL_URL%/} host port reply status state said=""
  [[ $url =~ ^http://([^:/]+)(:([0-9]+))?$ ]] ||
    die "CONTROLPLANE_INTERNAL_URL=$CONTROLPLANE_INTERNAL_URL: want http://HOST:PORT"
  host=${BASH_REMATCH[1]}
  port=${BASH_REMATCH[3]:-80}
  read_token
  local deadline=$((SECONDS + ${BROKER_WAIT_S:-600}))
  while :; do
    reply=$(http_get "$host" "$port" "$METADATA_PATH") || reply=""
    status=""
    if [[ $reply =~ ^HTTP/[0-9.]+\ ([0-9]{3}) ]]; then
      status=${BASH_REMATCH[1]}
    fi
    if [[ $status == 200 && $reply =~ \"cluster_id\"[[:space:]]*:[[:space:]]*\"([^\"]+)\" ]]; then
      printf '%s' "${BASH_REMATCH[1]}"
      return
    fi
    case $status in
      "") state="no answer from $url yet" ;;
      401 | 403) state="$url refuses $(principal)'s token (HTTP $status): is it a broker principal (manage.py create_principal $(principal) --broker), its token current?" ;;
      *) state="$url answers HTTP $status" ;;
    esac
    if [[ $state != "$said" ]]; then
      log "$state; waiting"
      said=$state
    fi
    ((SECONDS < deadline)) || die "gave up after ${BROKER_WAIT_S:-600} s: $state"
    sleep "${BROKER_WAIT_INTERVAL_S:-2}"
  done
}

# --- storage and start -----------------------------------------------------------------------

check_log_dirs() {  # CLUSTER_ID: no log dir formatted for another cluster
  local dir formatted dirs
  IFS=, read -r -a dirs <<<"${BROKER_LOG_DIRS:-/var/lib/kafka/data}"
  for dir in "${dirs[@]}"; do
    [[ -f $dir/meta.properties ]] || continue
    formatted=$(sed -n 's/^cluster\.id=//p' "$dir/meta.properties")
    if [[ -n $formatted && $formatted != "$1" ]]; then
      die "$dir belongs to cluster $formatted, not $1 (the control plane's database was started" \
        "afresh): remove this broker's data volume to format it for $1"
    fi
  done
}

run() {
  local node cluster
  node=$(node_id)
  need CONTROLLER_ADDRESS
  read_token
  log "broker $node ($(principal)): waiting for the control plane's cluster id"
  cluster=$(cluster_id)
  log "cluster $cluster; its controller ${CONTROLLER_ID:-3000}@$CONTROLLER_ADDRESS (SASL/PLAIN)"
  write_properties "$PROPERTIES_FILE"
  check_log_dirs "$cluster"
  # `=`: a cluster id may start with "-", which a separate argument would read as an option.
  "$KAFKA_HOME/bin/kafka-storage.sh" format "--cluster-id=$cluster" -c "$PROPERTIES_FILE" \
    --ignore-formatted
  exec "$KAFKA_HOME/bin/kafka-server-start.sh" "$PROPERTIES_FILE"
}

case ${1:-} in
  "") run ;;
  --write-properties)
    [[ $# -eq 2 ]] || die "usage: $0 --write-properties FILE"
    write_properties "$2"
    ;;
  --print-cluster-id)
    cluster=$(cluster_id)
    printf '%s\n' "$cluster"
    ;;
  *) die "usage: $0 [--write-properties FILE | --print-cluster-id]" ;;
esac

# `make run` and `make test` are the two commands; every target that runs the project's Python
# installs what it runs first (install, install-test-python or install-test).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
INTERNAL_PORT ?= 8001
KAFKA_PORT ?= 9092
KAFKA_SASL_PORT ?= 9093
# make run KAFKA_BROKERS=N: N stock Apache Kafka brokers (Java 17+, the pinned jars) under the
# control plane, at its controller listener on KAFKA_CONTROLLER_PORT.
KAFKA_BROKERS ?= 0
KAFKA_CONTROLLER_PORT ?= 9098
# The newest Kafka 4.x release: its tools run beside the pinned release's in the suite.
KAFKA_NEWEST ?= 4.4.0
# The releases `make test-kafka-matrix` runs the real-broker suite on (stock_kafka.jars.MATRIX_VERSIONS).
KAFKA_MATRIX ?= 4.0.2 4.1.1 4.2.2 4.3.1 4.4.0
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/controlplane

.PHONY: run install install-test-python install-test services lint format typecheck test test-fast test-kafka-matrix campaign bench bench-heartbeats bench-replicas bench-fanout bench-converge bench-scale bench-commit bench-shutdown bench-image-memory bench-admin bench-canary bench-audit bench-mirror bench-ui bench-linearizability bench-wire bench-raft-fetch bench-real-broker bench-real-cluster-failover bench-reassign bench-rolling-upgrade bench-wire-hostile-frame bench-health-fence bench-scram bench-hostile-peers bench-failover-writes clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

## install: the project in .venv, and Java 17 when the machine has none
install: $(PY)
	$(PY) -m pip install -q -e .
	bash scripts/install-java.sh

## install-test-python: the project with its test extras in .venv (pytest, hypothesis, the linters)
install-test-python: $(PY)
	$(PY) -m pip install -q -e '.[test]'

## install-test: install-test-python, then Java, Chromium, kafkajs, Kafka's jars and kcat
install-test: install-test-python
	bash scripts/install-java.sh
	bash scripts/install-chromium.sh
	bash scripts/install-kafkajs.sh
	bash scripts/install-kafka.sh
	bash scripts/install-kafka.sh $(KAFKA_NEWEST)
	bash scripts/install-kcat.sh

## services: PostgreSQL and Redis for the tests, when nothing answers
services:
	bash scripts/ensure-services.sh

## run: set everything up and start the control plane (embedded default) with a demo cluster
run: install
	PORT=$(PORT) INTERNAL_PORT=$(INTERNAL_PORT) KAFKA_PORT=$(KAFKA_PORT) KAFKA_SASL_PORT=$(KAFKA_SASL_PORT) \
		KAFKA_BROKERS=$(KAFKA_BROKERS) KAFKA_CONTROLLER_PORT=$(KAFKA_CONTROLLER_PORT) bash scripts/run-embedded.sh

## lint: ruff, the formatting check and the import contracts
lint: install-test-python
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

## format: ruff's formatter and fixes
format: install-test-python
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## typecheck: mypy
typecheck: install-test-python
	$(VENV)/bin/mypy .

## test: install what the tests need, then lint, type checks and the whole suite
test: install-test services lint typecheck
	DATABASE_URL=$(TEST_DATABASE_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
		$(VENV)/bin/pytest -p no:cacheprovider --durations=30 $(PYTEST_ARGS)

## test-fast: the pure core, API and server-rendered UI tests (no services, no browser, no Spark)
test-fast: install-test-python
	DJANGO_ALLOW_ASYNC_UNSAFE=true \
		$(VENV)/bin/pytest -p no:cacheprovider -m "not integration and not browser and not spark" $(PYTEST_ARGS)

## test-kafka-matrix: the real-broker suite (tests/kafka) on each Kafka 4.x release of KAFKA_MATRIX
test-kafka-matrix: install-test services
	bash scripts/install-kafka.sh $(KAFKA_MATRIX)
	set -e; for version in $(KAFKA_MATRIX); do \
		echo "=== the real-broker suite on Kafka $$version"; \
		KAFKA_VERSION=$$version DATABASE_URL=$(TEST_DATABASE_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
			$(VENV)/bin/pytest -p no:cacheprovider tests/kafka $(PYTEST_ARGS); \
	done

## campaign: the fault campaign on private PostgreSQL and Redis (bench/results/fault_campaign.json)
campaign: install-test services
	DATABASE_URL=$(TEST_DATABASE_URL) DJANGO_ALLOW_ASYNC_UNSAFE=true \
		$(VENV)/bin/pytest -p no:cacheprovider -m campaign -s tests/campaign $(PYTEST_ARGS)

## bench: benchmarks, figures as JSON under bench/results/
bench: bench-heartbeats bench-replicas bench-fanout bench-converge bench-scale bench-commit bench-shutdown bench-image-memory bench-admin bench-canary bench-audit bench-mirror bench-ui bench-linearizability bench-wire bench-raft-fetch bench-real-broker bench-real-cluster-failover bench-reassign bench-rolling-upgrade bench-wire-hostile-frame bench-health-fence bench-scram bench-hostile-peers bench-failover-writes

## bench-heartbeats: heartbeats on the internal listener and whoami on the public one, on the real stack
bench-heartbeats: install-test services
	$(PY) -m bench.heartbeats

## bench-replicas: 10,000-partition topic creation and log dir failure (KIP-589)
bench-replicas: install-test services
	$(PY) -m bench.replica_state

## bench-fanout: one AlterReplicaState (10,000 then 100,000 partitions) to 60 long-polling brokers
bench-fanout: install-test services
	$(PY) -m bench.fanout $(BENCH_ARGS)

## bench-converge: a mass fencing of 60 and 100 brokers over 100,000 partitions, then every broker back at once (both heartbeat shapes): time until every broker is unfenced and every partition led
bench-converge: install-test services
	$(PY) -m bench.converge $(BENCH_ARGS)

## bench-scale: 10,000 and 100,000 partitions (1M: BENCH_ARGS="--sizes 1000000 --shapes 10000"):
## creation, controller RSS, controlled shutdown, bootstrap, kill -9 of the active controller
bench-scale: install-test services
	$(PY) -m bench.scale $(BENCH_ARGS)

## bench-commit: the controller's commit of 10,000 and 100,000 partition changes, step by step; then its pure Python steps alone (bench.commit_core)
bench-commit: install-test services
	$(PY) -m bench.commit_scale $(BENCH_ARGS)
	$(PY) -m bench.commit_core

## bench-shutdown: a controlled shutdown of a broker leading 2 % of 100,000 and 1,000,000 partitions
## in one process (the real runtime and commit on PostgreSQL), step by step
bench-shutdown: install-test services
	$(PY) -m bench.shutdown_scale $(BENCH_ARGS)

## bench-image-memory: the controller's RSS for an image of 100,000 and 1,000,000 partitions,
## built by replaying records, per part of the image
bench-image-memory: install-test
	$(PY) -m bench.image_memory $(BENCH_ARGS)

## bench-canary: a 10,000-partition topic at 3.125 % on 60 brokers (6 canary) vs isolation off
bench-canary: install-test services
	$(PY) -m bench.canary_placement $(BENCH_ARGS)

## bench-health-fence: what fencing one broker costs the health index at 100k and 1M partitions
bench-health-fence: install
	$(PY) -m bench.health_fence $(BENCH_ARGS)

## bench-wire: the Kafka protocol listener vs REST through kafka-python: Metadata of 1,000 x 10, CreateTopics, ListPartitionReassignments of 3,000
bench-wire: install-test services
	$(PY) -m bench.wire_protocol $(BENCH_ARGS)

## bench-scram: a SCRAM-SHA-256/512 login on the control plane's Kafka listener against PLAIN
bench-scram: install-test services
	$(PY) -m bench.scram_login $(BENCH_ARGS)

## bench-hostile-peers: brokers' Raft Fetch and heartbeats while 1,000 anonymous connections announce maximal frames
bench-hostile-peers: install-test services
	$(PY) -m bench.hostile_peers $(BENCH_ARGS)

## bench-real-broker: a stock Kafka broker from start to registered, caught up, unfenced; kill -9 to fenced; restart
bench-real-broker: install-test services
	$(PY) -m bench.real_broker $(BENCH_ARGS)

## bench-real-cluster-failover: three stock brokers lose the busiest (kill -9, then SIGTERM), the controller is killed, Kafka's AdminClient reassigns 3,000 partitions and creates 1,000 topics x 10 through one, here and under Kafka's own controller
bench-real-cluster-failover: install-test services
	$(PY) -m bench.real_cluster_failover $(BENCH_ARGS)

## bench-rolling-upgrade: three stock brokers restarted one at a time from Kafka 4.1.1 to 4.4.0, clients running: the longest producer stall and consumer lag
bench-rolling-upgrade: install-test services
	bash scripts/install-kafka.sh 4.1.1 4.4.0
	$(PY) -m bench.rolling_upgrade $(BENCH_ARGS)

## bench-reassign: 1,000 and 10,000 moves on simulated brokers; 3,000 on three real brokers here and under Kafka's controller
bench-reassign: install-test services
	$(PY) -m bench.reassign $(BENCH_ARGS)

## bench-wire-hostile-frame: what an 11.6 MB CreateAcls of 150,000 creations costs the listener (refused unread)
bench-wire-hostile-frame: install-test services
	$(PY) -m bench.wire_hostile_frame $(BENCH_ARGS)

## bench-raft-fetch: a broker catching up through the Raft Fetch against the REST fetch
bench-raft-fetch: install-test services
	$(PY) -m bench.raft_fetch $(BENCH_ARGS)

## bench-admin: admin writes direct vs forwarded in an Envelope (KIP-590): latency, writes/s
bench-admin: install-test services
	$(PY) -m bench.admin_forwarding $(BENCH_ARGS)

## bench-failover-writes: admin writes back to back while the active controller is killed: the slowest write
bench-failover-writes: install-test services
	$(PY) -m bench.failover_writes $(BENCH_ARGS)

## bench-audit: the audit pipeline: export rate of 1M records + 200k audit events, report times
bench-audit: install-test services
	$(PY) -m bench.audit_pipeline $(BENCH_ARGS)

## bench-mirror: new source topic -> remote topic through the follower -> leader hop (KIP-710)
bench-mirror: install-test services
	$(PY) -m bench.mirror $(BENCH_ARGS)

## bench-ui: the console's pages on a 10,000-partition cluster, whole and as the refresh fetches them
bench-ui: install-test services
	$(PY) -m bench.ui_pages $(BENCH_ARGS)

## bench-linearizability: the linearizability checker on simulated histories (ops/s)
bench-linearizability: install-test
	$(PY) -m bench.linearizability $(BENCH_ARGS)

## clean: delete the SQLite database, the audit export and reports, benchmark results, caches
clean:
	rm -rf var/*.sqlite3* var/audit var/audit-reports bench/results/*.json .mypy_cache .ruff_cache

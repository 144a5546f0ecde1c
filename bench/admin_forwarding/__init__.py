"""Benchmark: admin writes sent directly vs forwarded by a broker in an Envelope (KIP-590).

The real stack: PostgreSQL, Redis, gunicorn (the control plane's worker, 3 workers x 8 threads:
cores + 1 workers, and threads enough to cover the time each admin write waits for the
controller; the heartbeat benchmark's 5 x 2 is `--workers 5 --threads 2`) and one
`run_controller` process (the only consumer of the controller's request channel). Three
brokers are registered and kept alive; one topic is created. The write is
IncrementalAlterConfigs SET retention.ms on that topic, a new value on every request (so each
one writes a ConfigRecord), sent two ways in the same run:

* direct: an admin client (the super user's token) -> `POST /api/v1/incremental-alter-configs`;
* envelope: a broker redirecting that client's request -> `POST /internal/v1/envelope` with the
  broker's token, `request_principal` User:admin and `forwarding_broker_id` (the body built by
  `simulator.envelope_request`, exactly what a simulated broker sends).

Measured, in one run:

1. sequential latency: one request at a time, the two ways taking turns every 50 requests; p50
   and p99 of each and their ratio envelope/direct;
2. closed-loop throughput (writes acknowledged per second) at a few concurrencies, the ways
   taking turns in short rounds (so whatever else runs on the machine hits both alike), with
   errors, the CPU each process group spent per write and the writes per commit;
3. a short run through the broker simulator's own `forward_admin_request`;
4. where the time goes: a PostgreSQL commit and a Redis ping (floors), round trips to the
   controller through `controller_call` and over the Celery queue (a no-op event and a write),
   the web views in-process (Django's test client: wall,
   CPU, profile), and the controller in-process (the controller process stopped, this process
   takes the lease: one event, batches of 8 and 32, SQL statements, profile).

At the end the metadata log must hold exactly one ConfigRecord per acknowledged write (by request
id), every forwarded write must be audited as User:admin with its broker, and `verify_metadata`
must pass.

The load client is lean: asyncio over raw sockets, HTTP/1.1 keep-alive, a request line and a
small JSON body built per request, the answer parsed only to count acknowledgements.

    make bench-admin      # or: .venv/bin/python -m bench.admin_forwarding [--help]
Writes bench/results/admin_forwarding.json and prints it; progress goes to stderr.
"""

"""Benchmark: a cluster of 10,000, 100,000 and 1,000,000 partitions .

PostgreSQL + Redis, an active and a standby `run_controller` (lease 6 s), one web node, a Celery
worker (the snapshots are its tasks), 100 brokers registered and heartbeating every 2 s. Per
size and shape (topics of 10,000 partitions: 100 x 10,000 at 1M; topics of 100: 10,000 x 100 at
1M; many topics must not cost more than many partitions), RF 3, on a fresh database:

1. Creation: one CreateTopics a topic (explicit assignments; broker 7 leads 2 % of the
   partitions, 20,000 at 1M), total and per topic (first, last, median, max).
2. Memory and disk: VmRSS and VmHWM of the active and the standby controller (goal: each under
   1 GiB) and of the web node's processes; pg_database_size.
3. Controlled shutdown of broker 7 (a heartbeat with want_shut_down): the controller's commit
   and answer, then when every broker's follower (100, long-polling the metadata fetch in
   MessagePack + zstd, as bench.fanout's) had a new leader for every partition broker 7 led
   (goal: 2 s), and when the controller let it go (should_shut_down).
4. A fresh broker bootstrapping: from the whole log (the baseline, always), and from the latest
   snapshot + the log after it (GET /internal/v1/metadata/snapshot, .../snapshots/{end_offset}
   and simulator's bootstrap_from_snapshot; a snapshot is made by lowering
   metadata.log.max.record.bytes.between.snapshots on BROKER ""): time and bytes (goal: 10 s),
   the image compared partition by partition with the controller's state tables. Reported as
   skipped where the product serves no snapshot.
5. kill -9 of the active controller while a CreateTopics of 10 % of the partitions (topics of
   the shape) is in flight (killed as soon as PostgreSQL runs its commit's write of the log):
   the standby takes over; from the lease's lapse to its activation, to its first batch
   handled (its records' stamp) and committed (its commit line), how it loaded its image (its
   log line), an IncrementalAlterConfigs retried until acknowledged (goal: lease + 3 s from the
   kill), the change retried with its request id applied exactly once (its records counted in
   the log). A controller that exits on its own (run_controller does when it loses its lease)
   is started again, as a deployment's supervisor would: every exit is in the figures.
6. `verify_metadata` clean; brokers fenced; database size at the end.

The growth of every figure from size to size, per shape, is in `growth`.

    make bench-scale                  # 10,000 and 100,000, both shapes
    python -m bench.scale --sizes 10000 --shapes 10000          # a quick run
    python -m bench.scale --sizes 1000000 --shapes 10000 --output scale_1m.json
Writes bench/results/scale.json (after each run) and prints it; progress on stderr.
"""

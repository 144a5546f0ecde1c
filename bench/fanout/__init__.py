"""Benchmark: one AlterReplicaState fanned out to 60 long-polling brokers.

gunicorn + PostgreSQL + Redis + one `run_controller`, 60 brokers registered and kept alive with
heartbeats every 2 s. Broker 7 leads 10,000 partitions (one topic), broker 11 leads 100,000 (10
topics of 10,000), RF 3. 60 followers, one per broker, long-poll `GET /internal/v1/metadata`,
each with its own keep-alive connection (plain asyncio streams, `raw_http`: the followers stand
for brokers on hosts of their own and take as little as they can of the server's cores), in 3 OS
processes of 20 (one asyncio process cannot decode 60 x 100,000 records on two cores without
measuring itself).

Per size, once every follower is long-polling at the log's head, the failed broker sends ONE
AlterReplicaState naming every partition of its topics (t0 = just before sending; the request
is queued for the controller, so `acknowledged_s` comes before the commit). Figures: the
controller commit's parts (handle, encode, transaction, image apply: its log line), the time
until the first and until every broker has a new leader for every partition, the bytes and
answers per broker, and where the machine's CPU went until every broker had the change
(`cpu_until_all_brokers`). A follower only reads the last record's offset while measuring (msgspec
skips the rest in C; its decode time per answer is reported); it keeps every raw body, and after
the measurement the bodies are decoded in full: a follower's time is the arrival of the answer
that completed its set of new leaders. The followers' decoding shares the two cores with the
server: `client_cpu_ms_per_answer` times 20 is how long one process's followers queue behind
each other (`completed_s_by_process` shows the spread inside each process).

Goals (the issue's): all 60 brokers within 1 s at 10k and 3 s at 100k; the slowest broker within
1.3x of the first; the commit's time per partition at 100k at most 1.2x that at 10k;
`verify_metadata` clean; no broker fenced, no follower request without an answer.

    make bench-fanout        # or: python -m bench.fanout --sizes 10000 --encoding json
Writes bench/results/fanout.json and prints it; progress on stderr.
"""

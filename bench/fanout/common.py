"""The benchmark's settings and goals."""

from __future__ import annotations

TOPIC_PARTITIONS = 10_000
FAILING_BROKERS = (7, 11, 13, 17)  # the broker whose log dir fails, per size in order
MAX_BODY_BYTES = 16 << 20  # a 100,000-partition AlterReplicaState, with room
SERVER_MAX_RECORDS = 10_000  # what a server without the clamp accepts (it refuses more: 400)
METADATA_PATH = "/internal/v1/metadata"
MSGPACK = "application/msgpack"
ACCEPT = {
    "msgpack": {"Accept": f"{MSGPACK}, application/json;q=0.5", "Accept-Encoding": "zstd, gzip"},
    "json": {"Accept": "application/json", "Accept-Encoding": "identity"},
}
RETRY_S = 0.2  # after a failed fetch: the server is not hammered while it is down
NO_LEADER_CHANGE = -2
ALL_BROKERS_GOAL_S = {10_000: 1.0, 100_000: 3.0}  # every broker has every new leader
SLOWEST_TO_FIRST_GOAL = 1.3
COMMIT_GROWTH_GOAL = 1.2  # the commit's time per partition, 100k vs 10k

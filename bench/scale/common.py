"""The benchmark's settings, goals and pure helpers (no stack: tests/unit/test_bench_scale.py)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

SIZES = (10_000, 100_000, 1_000_000)
# Partitions per topic: 100 topics x 10,000 and 10,000 topics x 100 at 1M (many topics must
# not cost more than many partitions).
SHAPES = (10_000, 100)
BROKERS = 100
REPLICATION_FACTOR = 3
HEAVY_BROKER = 7  # the broker whose controlled shutdown is measured
HEAVY_SHARE = 50  # it leads one partition in 50 (2 %: 20,000 at 1M)
IN_FLIGHT_SHARE = 10  # the change the active controller is killed in: 10 % of the partitions
LEASE_MS = 6000  # the lease (CP_CONTROLLER_LEASE_MS)
MAX_BODY_BYTES = 16 << 20  # a 10,000-partition CreateTopics with its assignments, with room
ACTIVE, STANDBY = "controller-a", "controller-b"
CONTROLLER_IDS = {ACTIVE: 3000, STANDBY: 3001}

GIB = 1 << 30
GOALS: dict[str, Any] = {
    "controller_rss_bytes": GIB,  # active and standby, each
    "controlled_shutdown_s": 2.0,  # every leader moved and seen by every broker
    "bootstrap_s": 10.0,  # a fresh broker from snapshot + log
    "admin_write_after_kill_s": LEASE_MS / 1000 + 3.0,  # acknowledged again within lease + 3 s
}

COMMIT_LINE = re.compile(r"committed (\d+) records of (\d+) event\(s\)")
ACTIVATION_LINE = re.compile(
    r"controller (\S+) active with epoch (\d+) at offset (-?\d+) \(image from (.+) in (\d+) ms\)"
)


@dataclasses.dataclass(frozen=True)
class Layout:
    """One size in one shape: `partitions` in topics of `per_topic`."""

    partitions: int
    per_topic: int

    @property
    def name(self) -> str:
        return f"{self.partitions}x{self.per_topic}"

    def topics(self, prefix: str = "t") -> list[tuple[str, int]]:
        """(name, partitions) per topic, in creation order; the last one may be smaller."""
        sizes: list[tuple[str, int]] = []
        left = self.partitions
        while left > 0:
            sizes.append((f"{prefix}-{len(sizes):05d}", min(left, self.per_topic)))
            left -= self.per_topic
        return sizes

    def heavy_leaderships(self) -> int:
        """How many partitions the heavy broker leads (`replica_sets`' rule)."""
        return -(-self.partitions // HEAVY_SHARE)

    def in_flight(self) -> list[tuple[str, int]]:
        """The change in flight at the kill: topics of the shape, 10 % of the partitions."""
        return Layout(max(1, self.partitions // IN_FLIGHT_SHARE), self.per_topic).topics("inflight")


def replica_set(index: int, brokers: int = BROKERS, heavy: int = HEAVY_BROKER) -> list[int]:
    """The replicas of the cluster's `index`-th partition (counted over every topic in creation
    order), its leader first: the heavy broker leads one in HEAVY_SHARE, the others lead the rest
    in turn; the followers rotate over every broker but the leader."""
    others = [b for b in range(brokers) if b != heavy]
    leader = heavy if index % HEAVY_SHARE == 0 else others[index % len(others)]
    ring = [b for b in range(brokers) if b != leader]
    first = (index // len(others)) % len(ring)
    second = (first + 1 + len(ring) // 2) % len(ring)
    return [leader, ring[first], ring[second]][:REPLICATION_FACTOR]


def assignments(start: int, count: int, brokers: int = BROKERS) -> list[dict[str, Any]]:
    """A CreateTopics topic's `assignments` for the cluster's partitions start..start+count."""
    return [
        {"partition_index": i, "broker_ids": replica_set(start + i, brokers)} for i in range(count)
    ]


# --- /proc -----------------------------------------------------------------------------------


def memory_of(status_text: str) -> dict[str, int]:
    """VmRSS and VmHWM (bytes) from a /proc/<pid>/status text."""
    found = {}
    for line in status_text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found


def process_group_of(stat_text: str) -> int:
    """The process group id from a /proc/<pid>/stat text (the command may hold spaces)."""
    return int(stat_text.rsplit(")", 1)[1].split()[2])


# --- the controllers' logs ---------------------------------------------------------------


def activations(text: str) -> list[dict[str, Any]]:
    """Every 'controller X active with epoch N ... (image from HOW in M ms)' line."""
    return [
        {
            "node": m[1],
            "epoch": int(m[2]),
            "offset": int(m[3]),
            "image_from": m[4],
            "image_ms": int(m[5]),
        }
        for m in ACTIVATION_LINE.finditer(text)
    ]


# --- figures -----------------------------------------------------------------------------


def spread(values: Sequence[float], digits: int = 4) -> dict[str, Any] | None:
    """first, last, median and max of per-item times (in the order they were taken)."""
    if not values:
        return None
    ordered = sorted(values)
    return {
        "count": len(values),
        "first": round(values[0], digits),
        "last": round(values[-1], digits),
        "median": round(ordered[len(ordered) // 2], digits),
        "max": round(ordered[-1], digits),
        "total": round(sum(values), digits),
    }


def goal(figure: float | None, bound: float) -> dict[str, Any]:
    """A figure against an upper bound: met only when measured and within it."""
    return {"figure": figure, "goal": bound, "met": figure is not None and figure <= bound}


def growth(by_size: Mapping[int, float | None]) -> dict[str, dict[str, float | None]]:
    """How a figure grows from each size to the next (ratio of figures, and of figure per
    partition): '10000->100000': {'x': 9.1, 'per_partition_x': 0.91}."""
    out: dict[str, Any] = {}
    sizes = sorted(by_size)
    for small, big in itertools.pairwise(sizes):
        a, b = by_size[small], by_size[big]
        ratio = None if not a or b is None else round(b / a, 3)
        out[f"{small}->{big}"] = {
            "x": ratio,
            "per_partition_x": None if ratio is None else round(ratio * small / big, 3),
        }
    return out


def dig(result: Mapping[str, Any], path: str) -> Any:
    """result['a']['b'] for 'a.b'; None when any step is missing."""
    value: Any = result
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


# The growth table of docs/operators/benchmarks.md, per shape: the figure's path in one result.
GROWTH_FIGURES = {
    "create_s": "create.total_s",
    "create_partitions_per_s": "create.partitions_per_s",
    "active_controller_rss": "memory.after_create.active.VmRSS",
    "standby_controller_rss": "memory.after_create.standby.VmRSS",
    "database_bytes": "database_bytes.after_create",
    "controlled_shutdown_s": "controlled_shutdown.all_brokers_s",
    "controlled_shutdown_committed_s": "controlled_shutdown.committed_and_answered_s",
    "bootstrap_s": "bootstrap.seconds",
    "bootstrap_bytes": "bootstrap.bytes",
    "whole_log_replay_s": "bootstrap.whole_log.seconds",
    "whole_log_bytes": "bootstrap.whole_log.wire_bytes",
    "failover_s": "failover.lease_lapse_to_first_records_s",
    "failover_commit_s": "failover.lease_lapse_to_first_commit_s",
    "admin_write_after_kill_s": "failover.admin_write_acknowledged_s",
    "verify_metadata_s": "verify_metadata.seconds",
}


def growth_table(runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per shape, per figure: its value at each size and how it grows."""
    by_shape: dict[int, dict[str, dict[int, Any]]] = {}
    for run in runs:
        shape, size = run["per_topic"], run["partitions"]
        figures = by_shape.setdefault(shape, {})
        for name, path in GROWTH_FIGURES.items():
            figures.setdefault(name, {})[size] = dig(run, path)
    return {
        f"topics_of_{shape}": {
            name: {
                "by_size": {str(s): v for s, v in sorted(values.items())},
                "growth": growth(
                    {s: v for s, v in values.items() if isinstance(v, int | float) or v is None}
                ),
            }
            for name, values in figures.items()
        }
        for shape, figures in sorted(by_shape.items(), reverse=True)
    }


# --- a bootstrapped broker's image against the controller's state tables ------------------

PartitionRow = tuple[int, int, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]


def image_differences(
    image: Mapping[tuple[str, int], PartitionRow],
    tables: Mapping[tuple[str, int], PartitionRow],
    *,
    examples: int = 5,
) -> dict[str, Any]:
    """Partitions missing on either side or different (leader, leader epoch, partition epoch,
    replicas, ISR, offline replicas): an image equal to the tables has none."""
    missing = [key for key in tables if key not in image]
    extra = [key for key in image if key not in tables]
    different = [key for key, row in tables.items() if key in image and image[key] != row]
    return {
        "partitions": len(tables),
        "missing": len(missing),
        "extra": len(extra),
        "different": len(different),
        "equal": not (missing or extra or different),
        "examples": [
            {"partition": list(key), "image": image.get(key), "tables": tables.get(key)}
            for key in (missing + extra + different)[:examples]
        ],
    }


# Many topics must not cost more than many partitions: each cost figure with topics of 100
# against topics of 10,000, at one size (a little noise allowed: the machine is shared).
SHAPE_RATIO_GOAL = 1.2
HIGHER_IS_BETTER = frozenset({"create_partitions_per_s"})


def shape_comparison(runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per size run in both shapes: each figure's ratio, the most topics' run over the fewest
    topics' (a rate inverted, so that above 1 always costs more), against SHAPE_RATIO_GOAL."""
    by_size: dict[int, dict[int, Mapping[str, Any]]] = {}
    for run in runs:
        by_size.setdefault(run["partitions"], {})[run["per_topic"]] = run
    out: dict[str, Any] = {}
    for size, shapes in sorted(by_size.items()):
        if len(shapes) < 2:
            continue
        many_topics, many_partitions = shapes[min(shapes)], shapes[max(shapes)]
        figures: dict[str, Any] = {}
        for name, path in GROWTH_FIGURES.items():
            a, b = dig(many_topics, path), dig(many_partitions, path)
            if not isinstance(a, int | float) or not isinstance(b, int | float) or not a or not b:
                figures[name] = {"ratio": None, "goal": SHAPE_RATIO_GOAL, "met": None}
                continue
            ratio = round(b / a if name in HIGHER_IS_BETTER else a / b, 3)
            figures[name] = {
                "ratio": ratio,
                "goal": SHAPE_RATIO_GOAL,
                "met": ratio <= SHAPE_RATIO_GOAL,
            }
        out[f"{size}: topics of {min(shapes)} vs of {max(shapes)}"] = figures
    return out

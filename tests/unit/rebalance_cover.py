"""What the property tests check of the preferred-leader rebalance's candidates (it reads them
from the image's groups instead of scanning every partition)."""

from __future__ import annotations

from controlplane.controller.canary.rules import canary_brokers_of, preferred_leader
from controlplane.controller.image import MetadataDelta
from controlplane.controller.replication.elections import rebalance_topics


def assert_rebalance_candidates_cover(view: MetadataDelta) -> None:
    """Every partition not led by its preferred replica is in one of the rebalance's topics,
    which come by name as a scan of every topic meets them: on a fresh view of the image, and
    on a delta's changes over it."""
    canary = canary_brokers_of(view)
    scanned = [
        (tp, partition)
        for topic in sorted(view.all_topics(), key=lambda t: t.name)
        for tp, partition in view.topic_partitions(topic)
    ]
    topics = rebalance_topics(view, canary)
    assert [t.name for t in topics] == sorted(t.name for t in topics)
    chosen = {tp for topic in topics for tp, _ in view.topic_partitions(topic)}
    off = [tp for tp, p in scanned if p.leader != preferred_leader(p, canary)]
    assert set(off) <= chosen, set(off) - chosen

"""The Redis session store: atomic epoch check + touch, its recovery paths, and the mirror."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.controller.image import BrokerStatus
from controlplane.sessions import RedisSessionStore
from tests.conftest import need_service

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_client() -> Iterator[Any]:
    need_service("Redis", "127.0.0.1", 6379)
    import redis

    client = redis.Redis.from_url("redis://127.0.0.1:6379/13")
    client.flushdb()
    yield client
    client.flushdb()


def test_touch_only_with_the_mirrored_epoch_and_recover_from_a_script_flush(redis_client):
    store = RedisSessionStore(redis_client)
    store.replace_mirror([BrokerStatus(1, 5, False, False), BrokerStatus(2, 8, True, False)])
    # First call: Redis has never seen the script (NOSCRIPT), the full client path loads it.
    assert store.touch_if_current(1, 5, now_ms=10, metadata_offset=3) == BrokerStatus(
        1, 5, False, False
    )
    assert store.touch_if_current(1, 5, now_ms=11, metadata_offset=4) is not None
    assert (store.get(1).last_contact_ms, store.get(1).metadata_offset) == (11, 4)  # type: ignore[union-attr]
    redis_client.script_flush()
    assert store.touch_if_current(1, 5, now_ms=12, metadata_offset=5) is not None
    assert store.get(1).last_contact_ms == 12  # type: ignore[union-attr]
    # A stale epoch answers the mirror but touches nothing.
    assert store.touch_if_current(1, 4, now_ms=13, metadata_offset=6).epoch == 5  # type: ignore[union-attr]
    assert store.get(1).last_contact_ms == 12  # type: ignore[union-attr]
    assert store.touch_if_current(3, 0, now_ms=14, metadata_offset=0) is None
    assert store.get(3) is None


def test_mirror_updates_and_removals(redis_client):
    store = RedisSessionStore(redis_client)
    store.replace_mirror([BrokerStatus(1, 5, False, False)])
    store.mirror({1: None, 4: BrokerStatus(4, 9, False, True, 12)})
    assert store.touch_if_current(1, 5, now_ms=1, metadata_offset=0) is None
    status = store.touch_if_current(4, 9, now_ms=1, metadata_offset=0)
    assert status == BrokerStatus(4, 9, False, True, 12)
    store.replace_mirror([])
    assert store.touch_if_current(4, 9, now_ms=2, metadata_offset=0) is None
    assert set(store.snapshot()) == {4}


def test_a_dropped_connection_falls_back_and_reconnects(redis_client):
    store = RedisSessionStore(redis_client)
    store.replace_mirror([BrokerStatus(1, 5, False, False)])
    store.touch_if_current(1, 5, now_ms=1, metadata_offset=0)
    store.touch_if_current(1, 5, now_ms=2, metadata_offset=0)
    redis_client.client_kill_filter(_type="normal", skipme=True)  # cut every other connection
    assert store.touch_if_current(1, 5, now_ms=3, metadata_offset=0) is not None
    assert store.get(1).last_contact_ms == 3  # type: ignore[union-attr]

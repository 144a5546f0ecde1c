"""The Redis session store: atomic epoch check + touch, its recovery paths, and the mirror.

The Redis is shared with other runs: the store's keys go under the test's own prefix, a script
Redis does not know is a variant of the store's script it has never seen (never SCRIPT FLUSH),
and only the store's own connections are cut (never every client's).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from controlplane.controller.image import BrokerStatus
from controlplane.runtime.sessions import TOUCH_IF_CURRENT, RedisSessionStore
from devtools.stack import redis_url

pytestmark = pytest.mark.integration


@pytest.fixture
def redis_client(key_prefix: str) -> Iterator[Any]:
    """The store's client, named so that its connections (and no one else's) can be cut."""
    import redis

    client = redis.Redis.from_url(redis_url(), client_name=f"{key_prefix}store")
    yield client
    client.close()


def forget_script(store: RedisSessionStore) -> None:
    """Redis no longer knows the store's script (as after a restart or a SCRIPT FLUSH): the store
    gets a variant of it, with a SHA this server has never seen. Other runs' scripts stay."""
    variant = f"{TOUCH_IF_CURRENT}-- {uuid.uuid4().hex}\n"
    store._touch_if_current = store._redis.register_script(variant)


def cut_connections(client: Any) -> None:
    """Kill the client's connections to Redis, its own per-thread one included."""
    import redis

    name = client.connection_pool.connection_kwargs["client_name"]
    with redis.Redis.from_url(redis_url()) as admin:
        for entry in admin.client_list(_type="normal"):
            if entry.get("name") == name:
                admin.client_kill_filter(_id=entry["id"])


def test_touch_only_with_the_mirrored_epoch_and_recover_from_a_script_flush(
    redis_client, key_prefix
):
    store = RedisSessionStore(redis_client, key_prefix=key_prefix)
    forget_script(store)
    store.replace_mirror([BrokerStatus(1, 5, False, False), BrokerStatus(2, 8, True, False)])
    # First call: Redis has never seen the script (NOSCRIPT), the full client path loads it.
    assert store.touch_if_current(1, 5, now_ms=10, metadata_offset=3) == BrokerStatus(
        1, 5, False, False
    )
    assert store.touch_if_current(1, 5, now_ms=11, metadata_offset=4) is not None
    assert (store.get(1).last_contact_ms, store.get(1).metadata_offset) == (11, 4)
    forget_script(store)
    assert store.touch_if_current(1, 5, now_ms=12, metadata_offset=5) is not None
    assert store.get(1).last_contact_ms == 12
    # A stale epoch answers the mirror but touches nothing.
    assert store.touch_if_current(1, 4, now_ms=13, metadata_offset=6).epoch == 5
    assert store.get(1).last_contact_ms == 12
    assert store.touch_if_current(3, 0, now_ms=14, metadata_offset=0) is None
    assert store.get(3) is None


def test_mirror_updates_and_removals(redis_client, key_prefix):
    store = RedisSessionStore(redis_client, key_prefix=key_prefix)
    store.replace_mirror([BrokerStatus(1, 5, False, False)])
    store.mirror({1: None, 4: BrokerStatus(4, 9, False, True, 12)})
    assert store.touch_if_current(1, 5, now_ms=1, metadata_offset=0) is None
    status = store.touch_if_current(4, 9, now_ms=1, metadata_offset=0)
    assert status == BrokerStatus(4, 9, False, True, 12)
    store.replace_mirror([])
    assert store.touch_if_current(4, 9, now_ms=2, metadata_offset=0) is None
    assert set(store.snapshot()) == {4}


def test_a_dropped_connection_falls_back_and_reconnects(redis_client, key_prefix):
    store = RedisSessionStore(redis_client, key_prefix=key_prefix)
    store.replace_mirror([BrokerStatus(1, 5, False, False)])
    store.touch_if_current(1, 5, now_ms=1, metadata_offset=0)
    store.touch_if_current(1, 5, now_ms=2, metadata_offset=0)
    cut_connections(redis_client)  # the store's connections only: the Redis is shared
    assert store.touch_if_current(1, 5, now_ms=3, metadata_offset=0) is not None
    assert store.get(1).last_contact_ms == 3

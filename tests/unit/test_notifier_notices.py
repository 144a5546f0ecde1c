"""The commit's two notices over Redis, as another process hears them: the log's moves the
generation that long-polls wait on, the tables' the one that readers of the tables key on."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from controlplane.redis_client import key_prefix, redis_client
from controlplane.runtime.notifier import CHANNEL, MetadataNotifier
from devtools.stack import redis_url, unique_key_prefix
from tests.conftest import need_redis


@pytest.fixture
def over_redis() -> Iterator[None]:
    need_redis()
    redis_client.cache_clear()
    with override_settings(CP_REDIS_URL=redis_url(), CP_REDIS_KEY_PREFIX=unique_key_prefix()):
        yield
    redis_client.cache_clear()


def eventually(predicate: object, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.01)
    return False


def committing_and_listening() -> tuple[MetadataNotifier, MetadataNotifier]:
    """A committing process's notifier, and another process's, listening on the channel."""
    committing, other = MetadataNotifier(), MetadataNotifier()
    other.wait(other.generation, 0)  # starts its listener thread
    client = redis_client()
    assert client is not None
    channel = key_prefix() + CHANNEL
    assert eventually(lambda: client.pubsub_numsub(channel)[0][1] >= 1)
    return committing, other


def test_another_process_tells_the_log_notice_from_the_tables_notice(over_redis: None) -> None:
    committing, other = committing_and_listening()

    committing.publish(41)
    assert eventually(lambda: other.generation == 1)
    assert other.tables_generation == 0  # the tables have not followed yet

    committing.publish_tables(41)
    assert eventually(lambda: other.tables_generation == 1)
    assert other.generation == 1
    assert other.wait_tables(0, 0) and not other.wait_tables(1, 0.05)
    # The committing process's own generations moved as it sent each notice.
    assert (committing.generation, committing.tables_generation) == (1, 1)


def test_another_process_hears_the_acls_notice_only_for_a_commit_that_changed_acls(
    over_redis: None,
) -> None:
    committing, other = committing_and_listening()

    committing.publish_tables(41)  # a commit that changed no ACL
    assert eventually(lambda: other.tables_generation == 1)
    assert other.acl_generation == 0
    committing.publish_tables(42, acls_changed=True)
    assert eventually(lambda: other.tables_generation == 2)
    # The ACLs' notice goes first: once the tables' is heard, so was it.
    assert other.acl_generation == 1
    assert other.generation == 0  # neither is the log's
    assert (committing.acl_generation, committing.tables_generation) == (1, 2)

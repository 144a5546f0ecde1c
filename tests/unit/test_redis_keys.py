"""Redis key names: the default prefix keeps the names deployments use; a prefix moves them all.

No Redis is needed: clients connect lazily and a script's SHA is computed locally.
"""

from __future__ import annotations

import redis
from django.conf import settings

from controlplane.runtime.channel import ChannelConsumer, ControllerChannel
from controlplane.runtime.sessions import RedisSessionStore

URL = "redis://127.0.0.1:6379/0"


def names(prefix: str) -> list[str]:
    channel = ControllerChannel(URL, longest_wait_s=1, key_prefix=prefix)
    consumer = ChannelConsumer(URL, lambda events, on_logged=None: [], key_prefix=prefix)
    store = RedisSessionStore(redis.Redis.from_url(URL), key_prefix=prefix)
    assert (consumer.requests_key, consumer.reply_prefix) == (
        channel.requests_key,
        channel.reply_prefix,
    )
    return [channel.requests_key, channel.reply_prefix, store.sessions_key, store.status_key]


def test_the_default_prefix_keeps_the_key_names() -> None:
    assert settings.CP_REDIS_KEY_PREFIX == "cp:"
    assert names(settings.CP_REDIS_KEY_PREFIX) == [
        "cp:controller:requests",
        "cp:controller:reply:",
        "cp:broker-sessions",
        "cp:broker-status",
    ]


def test_every_key_goes_under_the_prefix() -> None:
    assert all(name.startswith("cp-it-1:") for name in names("cp-it-1:"))


def test_celery_keys_keep_their_names_unless_a_prefix_is_set() -> None:
    assert settings.CP_CELERY_KEY_PREFIX == ""
    assert not hasattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS")
    assert not hasattr(settings, "CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS")

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Generic, TypeVar

import redis
from django.conf import settings

Store = TypeVar("Store")


@functools.cache
def redis_client() -> redis.Redis | None:
    """The shared Redis connection pool, or None when running embedded without Redis."""
    if not settings.CP_REDIS_URL:
        return None
    return redis.Redis.from_url(settings.CP_REDIS_URL, socket_timeout=5, health_check_interval=30)


def key_prefix() -> str:
    """What every Redis key and channel of the control plane starts with (`CP_REDIS_KEY_PREFIX`)."""
    return str(settings.CP_REDIS_KEY_PREFIX)


class SharedStore(Generic[Store]):
    """The store a process reads and writes state the cluster's processes share (broker
    sessions, mirror members, listener lags): over Redis when there is one, built on first use
    with the key prefix; else `local`, this process's own (embedded: every role is here)."""

    def __init__(self, local: Store, over_redis: Callable[[redis.Redis, str], Store]) -> None:
        self.local = local
        self._over_redis = over_redis
        self._shared: Store | None = None

    def __call__(self) -> Store:
        client = redis_client()
        if client is None:
            return self.local
        if self._shared is None:
            self._shared = self._over_redis(client, key_prefix())
        return self._shared

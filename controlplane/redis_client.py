from __future__ import annotations

import functools

import redis
from django.conf import settings


@functools.cache
def redis_client() -> redis.Redis | None:
    """The shared Redis connection pool, or None when running embedded without Redis."""
    if not settings.CP_REDIS_URL:
        return None
    return redis.Redis.from_url(settings.CP_REDIS_URL, socket_timeout=5, health_check_interval=30)


def key_prefix() -> str:
    """What every Redis key and channel of the control plane starts with (`CP_REDIS_KEY_PREFIX`)."""
    return str(settings.CP_REDIS_KEY_PREFIX)

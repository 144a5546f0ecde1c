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

"""Where a (user, client id)'s `controller_mutation_rate` comes from (KIP-599): the client quota
projection, by Kafka's precedence, cached per process until a commit changes client quotas (their
notice, which the process listens to from its first read on) or a few seconds at most.
`controlplane.throttling` enforces it; this app owns the quotas."""

from __future__ import annotations

import threading
import time

from configs.projection import client_quota_map
from controlplane.controller.quotas.control import CONTROLLER_MUTATION_RATE
from controlplane.controller.quotas.describe import precedence
from controlplane.controller.records import QuotaEntity
from controlplane.runtime.notifier import notifier

CACHE_TTL_S = 5.0


class _QuotaCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._quotas: dict[QuotaEntity, dict[str, float]] | None = None
        self._generation = -1
        self._loaded_at = 0.0

    def quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        generation = notifier.watched_quota_generation()
        fresh = time.monotonic() - self._loaded_at < CACHE_TTL_S
        if self._quotas is not None and generation == self._generation and fresh:
            return self._quotas
        quotas = client_quota_map()
        with self._lock:
            self._quotas, self._generation = quotas, generation
            self._loaded_at = time.monotonic()
        return quotas

    def clear(self) -> None:
        with self._lock:
            self._quotas = None


quota_cache = _QuotaCache()


def controller_mutation_rate(user: str, client_id: str) -> float | None:
    """The most specific `controller_mutation_rate` that applies, or None (no quota)."""
    quotas = quota_cache.quotas()
    if not quotas:
        return None
    for entity in precedence(user, client_id):
        value = quotas.get(entity, {}).get(CONTROLLER_MUTATION_RATE)
        if value is not None:
            return value
    return None

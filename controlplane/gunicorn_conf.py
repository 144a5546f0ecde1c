"""gunicorn settings shared by every way the web listeners are started (`-c python:...`)."""

from __future__ import annotations

import gc
import os
from typing import Any


def post_worker_init(worker: Any) -> None:
    """Load everything a request needs, then hide it from the cyclic garbage collector.

    A full collection otherwise rescans the whole application (hundreds of thousands of
    long-lived objects) in the middle of some request, which shows up as tail latency.
    """
    from django.conf import settings
    from django.urls import get_resolver

    # Both listeners' URL confs: a process may serve the internal port beside the public one.
    for urlconf in (settings.ROOT_URLCONF, settings.CP_INTERNAL_URLCONF):
        get_resolver(urlconf).url_patterns  # noqa: B018  (imports every view and serializer now)
    gc.collect()
    gc.freeze()


def child_exit(server: Any, worker: Any) -> None:
    """Multi-process metrics: forget a dead worker's live gauges."""
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]

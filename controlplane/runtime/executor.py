"""Embedded or distributed: the one seam, chosen once when the process starts.

Embedded (no Celery broker configured, `settings.EMBEDDED`), the process is the controller: an
event is handled in this process, background work runs here (a task inline or in a thread), and
the controller's timer does what Celery beat would. Distributed, events travel to the active
controller on the request channel (a Redis list, see controlplane.runtime.channel) or on the
Celery queue `controller` where the broker is not Redis, and background work is sent to the
Celery workers as tasks named by their name, so a service never imports its app's tasks module.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from typing import Any, Protocol

from celery import current_app
from celery.exceptions import TimeoutError as CeleryTimeout
from django.conf import settings
from django.db import connection, transaction

from controlplane.controller.errors import ApiError, Errors
from controlplane.models import Cluster
from controlplane.runtime.channel import ControllerChannel
from controlplane.runtime.controller import get_runtime
from controlplane.runtime.conversation import ControllerAnswer, ControllerEvent
from controlplane.selectors import controller_active

logger = logging.getLogger(__name__)

ATTEMPT_TIMEOUT_MS = 5000  # the longest one attempt waits for the controller's answer
CONTROLLER_QUEUE = "controller"


class Executor(Protocol):
    @property
    def in_process(self) -> bool:
        """Whether this process is the controller and runs the background work itself."""

    def call(self, event: ControllerEvent, timeout_ms: int) -> ControllerAnswer | None:
        """One attempt: the controller's answer, or None when none came in time."""

    def require_controller(self) -> None:
        """NOT_CONTROLLER unless a controller is active to take work."""

    def send_task(
        self, name: str, *args: Any, queue: str | None = None, long_running: bool = False
    ) -> None:
        """Run the Celery task `name`: distributed, on a worker (`queue`) once the current
        transaction commits; embedded, in this process, at once (as Celery's eager mode), or
        when `long_running` in a thread of its own once the transaction commits."""


class EmbeddedExecutor:
    in_process = True

    def call(self, event: ControllerEvent, timeout_ms: int) -> ControllerAnswer:
        return get_runtime().handle(event)

    def require_controller(self) -> None:
        get_runtime().ensure_active()

    def send_task(
        self, name: str, *args: Any, queue: str | None = None, long_running: bool = False
    ) -> None:
        task = _task_named(name)
        if long_running:
            transaction.on_commit(lambda: _in_thread(name, task, args))
        else:
            task(*args)


class DistributedExecutor:
    in_process = False

    def __init__(self, channel: ControllerChannel | None) -> None:
        self.channel = channel

    def call(self, event: ControllerEvent, timeout_ms: int) -> ControllerAnswer | None:
        if self.channel is not None:
            return self.channel.request(event, timeout_ms)
        # The event may carry a secret (a config value, an HMAC): what Celery shows of it
        # (worker logs, `celery inspect`) is only its API and request id.
        shown = f"({{'api': {event.api!r}, 'request_id': {event.context.request_id!r}}},)"
        result = current_app.send_task(
            "controlplane.tasks.controller_event",
            args=[event.to_wire()],
            queue=CONTROLLER_QUEUE,
            argsrepr=shown,
        )
        try:
            return ControllerAnswer.from_wire(result.get(timeout=timeout_ms / 1000))
        except CeleryTimeout:
            logger.warning("controller did not answer %s within %d ms", event.api, timeout_ms)
            return None
        finally:
            result.forget()

    def require_controller(self) -> None:
        cluster = Cluster.objects.filter(pk=1).first()
        if cluster is None or not controller_active(cluster):
            raise ApiError(Errors.NOT_CONTROLLER, "No controller is active.")

    def send_task(
        self, name: str, *args: Any, queue: str | None = None, long_running: bool = False
    ) -> None:
        transaction.on_commit(lambda: current_app.send_task(name, args=list(args), queue=queue))


@functools.cache
def executor() -> Executor:
    """This process's executor, chosen once from the settings."""
    if settings.EMBEDDED:
        return EmbeddedExecutor()
    channel = None
    if settings.CP_REDIS_URL:
        channel = ControllerChannel(
            settings.CP_REDIS_URL,
            longest_wait_s=ATTEMPT_TIMEOUT_MS / 1000,
            key_prefix=settings.CP_REDIS_KEY_PREFIX,
        )
    return DistributedExecutor(channel)


def _task_named(name: str) -> Any:
    """The task `name` (`<module>.<function>`), imported: embedded, nothing else loads it."""
    module, _, function = name.rpartition(".")
    return getattr(importlib.import_module(module), function)


def _in_thread(name: str, task: Any, args: tuple[Any, ...]) -> None:
    def run() -> None:
        try:
            task(*args)
        except Exception:
            logger.exception("background task %s failed", name)
        finally:
            connection.close()

    threading.Thread(target=run, name=name.rpartition(".")[2], daemon=True).start()

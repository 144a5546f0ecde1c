"""A controller process: standby until it holds the lease, then the active controller.

Only the active controller consumes the Celery queue `controller`: a standby consumes nothing, so
no event can reach a node that would have to refuse it. Events that wait together are handled
in one batch and one commit (group commit). Losing the lease ends the process (as a
Kafka controller resigns); the supervisor starts it again as a standby.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser
from django.db.backends.signals import connection_created

from controlplane.celery import app
from controlplane.runtime.controller import get_runtime, tune_controller_process
from controlplane.runtime.lease import Lease
from controlplane.runtime.presence import Presence
from controlplane.runtime.standby_loop import wait_until_active
from controlplane.runtime.timer import start_timer_thread

logger = logging.getLogger("controlplane.controller")


class Command(BaseCommand):
    help = "Run a controller: standby until it takes the lease, then consume the controller queue."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args: Any, **options: Any) -> None:
        connection_created.connect(_end_stalled_transactions)
        tune_controller_process()
        runtime = get_runtime()
        runtime.on_deactivate = _exit_on_lost_lease
        stop = threading.Event()
        # Held until the process ends: standbys take over the moment its session does.
        self.presence = Presence(runtime.node_id)
        self.presence.start(stop)
        lease = wait_until_active(runtime, stop, self.presence)
        self.stdout.write(
            f"controller {runtime.node_id} active with epoch {lease.epoch}", ending="\n"
        )
        self.stdout.flush()
        start_timer_thread(runtime)
        runtime.start_batching()
        if settings.CP_REDIS_URL:
            runtime.start_channel(settings.CP_REDIS_URL, settings.CP_REDIS_KEY_PREFIX)
        app.worker_main(
            [
                "worker",
                "--queues",
                "controller",
                # Consumers only wait: each hands its event to the runtime's one batching
                # thread, so events that arrive together commit together.
                "--pool",
                "threads",
                "--concurrency",
                str(settings.CP_CONTROLLER_CONSUMERS),
                "--hostname",
                f"controller-{runtime.node_id}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                options["loglevel"],
            ]
        )


def _end_stalled_transactions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """A controller stopped in the middle of a commit (SIGSTOP, a VM pause) holds the cluster
    row lock: standbys would wait on it instead of taking the lapsed lease. PostgreSQL ends such
    a session once it has been idle in its transaction for half a lease, releasing the lock
    before the lease lapses; a live commit never idles that long."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SET idle_in_transaction_session_timeout = %s", [max(settings.CP_LEASE_MS // 2, 500)]
        )


def _exit_on_lost_lease(lease: Lease) -> None:
    logger.error("controller epoch %d lost its lease; exiting so a standby takes over", lease.epoch)
    os._exit(3)

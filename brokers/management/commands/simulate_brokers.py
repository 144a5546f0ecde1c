"""Run simulated brokers against a control plane: `manage.py simulate_brokers --help`.

The brokers talk to the control plane's internal listener (--internal-url); --url (the public
listener) is used only for --topic's CreateTopics.

N regular brokers plus M canary brokers (ids first-id .. first-id+N+M-1, canary ones last), spread
round robin over R racks, each with --log-dirs log directories. Runs until Ctrl-C / SIGTERM or
--duration, then shuts every broker down cleanly (controlled shutdown). A second Ctrl-C stops at
once. With --topic NAME (and an admin token: --admin-token or $CP_ADMIN_TOKEN) it creates that
topic once the brokers are unfenced: the load for the log-dir commands. Commands on stdin (when it
is a TTY, or with --control stdin): stop ID, resume ID, shutdown ID, deploy ID VERSION,
fail-dir ID [DIR], repair-dir ID [DIR], forward ID API JSON [--as User:NAME] [--client-id C]
[--host H], status, quit (quit lets running commands finish first). Brokers report
--software-version (canary ones --canary-software-version) at registration; `deploy` restarts
one with another version (KIP-1095's canary rollouts).

`forward 0 IncrementalAlterConfigs {"resources": [...]} --as User:alice`: broker 0 redirects an
old client's admin request to the controller in an Envelope (KIP-590), as that client (default
User:alice, client id adminclient-1 at 127.0.0.1); retried on NOT_CONTROLLER with the same request
id until --forward-timeout. API: a forwardable RPC's name, path (incremental-alter-configs) or
apiKey (44). The answer is printed as the client would get it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.management.simulator_session import SimulatorSession
from simulator import BrokerSimulator, SimulatorError
from simulator.catch_up import DEFAULT_BYTES_PER_S, DEFAULT_PARTITION_BYTES


class Command(BaseCommand):
    help = (
        "Simulate Kafka brokers against the control plane's internal API: register, heartbeat, "
        "follow the metadata log, unfence, controlled shutdown. Commands on stdin: stop ID, "
        "resume ID, shutdown ID, deploy ID VERSION, fail-dir ID [DIR], repair-dir ID [DIR], "
        "status, quit, and "
        "forward ID API JSON [--as User:NAME] [--client-id C] [--host H]: broker ID redirects a "
        "client's admin request (API: a forwardable RPC's name, path or apiKey, e.g. "
        "IncrementalAlterConfigs) to the controller in an Envelope (KIP-590) as that client "
        "(default User:alice), retrying NOT_CONTROLLER with the same request id until "
        "--forward-timeout, and prints the client's answer."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--internal-url",
            default=f"http://127.0.0.1:{settings.CP_INTERNAL_PORT or 8001}",
            help="the control plane's internal listener, where the brokers' API is (default "
            "http://127.0.0.1:$CP_INTERNAL_PORT, %(default)s)",
        )
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000",
            help="the control plane's public listener, for --topic's CreateTopics "
            "(default %(default)s)",
        )
        parser.add_argument(
            "--token", default=None, help="a broker principal's token (default: $CP_BROKER_TOKEN)"
        )
        parser.add_argument(
            "--brokers",
            type=int,
            default=3,
            help="regular brokers, pod 'broker' (default %(default)s)",
        )
        parser.add_argument(
            "--canary",
            type=int,
            default=0,
            help="canary brokers, pod 'canary-broker', in addition to --brokers",
        )
        parser.add_argument(
            "--racks",
            type=int,
            default=0,
            help="racks rack-0..rack-R-1, round robin over the ids; 0: no rack",
        )
        parser.add_argument("--first-id", type=int, default=0, help="the first broker id")
        parser.add_argument(
            "--software-version",
            default=None,
            help="the software_version the brokers report at registration (default: none)",
        )
        parser.add_argument(
            "--canary-software-version",
            default=None,
            help="the canary brokers' software_version (default: --software-version)",
        )
        parser.add_argument(
            "--heartbeat-ms",
            type=int,
            default=settings.CP_BROKER_HEARTBEAT_INTERVAL_MS,
            help="broker.heartbeat.interval.ms (default $CP_BROKER_HEARTBEAT_INTERVAL_MS "
            "or %(default)s)",
        )
        parser.add_argument(
            "--duration",
            type=float,
            default=None,
            help="run this many seconds, then shut down cleanly (default: until Ctrl-C or SIGTERM)",
        )
        parser.add_argument(
            "--control",
            choices=["auto", "stdin", "none"],
            default="auto",
            help="read commands from stdin: auto = when it is a TTY",
        )
        parser.add_argument(
            "--status-every",
            type=float,
            default=5.0,
            help="seconds between status lines (default %(default)s)",
        )
        parser.add_argument(
            "--connect-timeout",
            type=float,
            default=30.0,
            help="give up (exit 1) when the server never answers in this many "
            "seconds (default %(default)s)",
        )
        parser.add_argument(
            "--shutdown-timeout",
            type=float,
            default=30.0,
            help="seconds to wait for the controlled shutdown (default %(default)s)",
        )
        parser.add_argument(
            "--client-id",
            default="broker-simulator",
            help="X-Client-ID prefix (default %(default)s)",
        )
        parser.add_argument(
            "--listener-host",
            default="127.0.0.1",
            help="host in the brokers' PLAINTEXT listeners (port 9092 + id)",
        )
        parser.add_argument(
            "--log-dirs",
            type=int,
            default=2,
            help="log directories per broker (JBOD); each replica lives in one of them "
            "(default %(default)s)",
        )
        parser.add_argument(
            "--topic",
            default=None,
            help="create this topic once the brokers are unfenced (needs an admin token)",
        )
        parser.add_argument(
            "--partitions",
            type=int,
            default=-1,
            help="--topic's partitions (default: the server's num.partitions)",
        )
        parser.add_argument(
            "--replication-factor",
            type=int,
            default=-1,
            help="--topic's replication factor (default: the server's default.replication.factor)",
        )
        parser.add_argument(
            "--admin-token",
            default=None,
            help="an admin principal's token, for --topic (default: $CP_ADMIN_TOKEN)",
        )
        parser.add_argument(
            "--dir-timeout",
            type=float,
            default=60.0,
            help="seconds fail-dir / repair-dir wait for the controller (default %(default)s)",
        )
        parser.add_argument(
            "--partition-bytes",
            type=int,
            default=DEFAULT_PARTITION_BYTES,
            help="what each simulated partition holds: a replica a reassignment adds copies "
            "this much before it joins the ISR (default %(default)s)",
        )
        parser.add_argument(
            "--catch-up-rate",
            type=float,
            default=DEFAULT_BYTES_PER_S,
            help="bytes/s a new replica copies at without a replication throttle "
            "(default %(default)s)",
        )
        parser.add_argument(
            "--forward-timeout",
            type=float,
            default=30.0,
            help="seconds `forward` retries an Envelope (NOT_CONTROLLER, 5xx, connection "
            "errors) before the client gets REQUEST_TIMED_OUT (default %(default)s)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        token = options["token"] or os.environ.get("CP_BROKER_TOKEN", "")
        if not token:
            raise CommandError("No broker token: pass --token or set CP_BROKER_TOKEN.")
        admin_token = options["admin_token"] or os.environ.get("CP_ADMIN_TOKEN", "") or None
        if options["topic"] and not admin_token:
            raise CommandError("--topic needs an admin token: --admin-token or CP_ADMIN_TOKEN.")
        verbosity = int(options["verbosity"])
        logging.getLogger("simulator").setLevel(
            logging.WARNING if verbosity <= 1 else logging.INFO if verbosity == 2 else logging.DEBUG
        )
        # httpx logs every request at INFO: only at -v 3.
        for name in ("httpx", "httpcore"):
            logging.getLogger(name).setLevel(logging.DEBUG if verbosity >= 3 else logging.WARNING)
        try:
            simulator = BrokerSimulator(
                options["url"],
                token,
                internal_url=options["internal_url"],
                brokers=options["brokers"],
                canary=options["canary"],
                racks=options["racks"],
                first_id=options["first_id"],
                heartbeat_interval_ms=options["heartbeat_ms"],
                client_id=options["client_id"],
                listener_host=options["listener_host"],
                connect_timeout_s=options["connect_timeout"],
                log_dirs=options["log_dirs"],
                admin_token=admin_token,
                software_version=options["software_version"],
                canary_software_version=options["canary_software_version"],
                partition_bytes=options["partition_bytes"],
                catch_up_bytes_per_s=options["catch_up_rate"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        control = options["control"] == "stdin" or (
            options["control"] == "auto" and sys.stdin is not None and sys.stdin.isatty()
        )
        session = SimulatorSession(self, simulator, options, control=control)
        try:
            clean = asyncio.run(session.run())
        except SimulatorError as error:
            raise CommandError(str(error)) from None
        except asyncio.CancelledError:  # a second Ctrl-C: stopped without a clean shutdown
            raise CommandError(
                "Interrupted; brokers stopped without a controlled shutdown.", returncode=130
            ) from None
        if not clean:
            self.stderr.write("Some brokers did not finish their controlled shutdown.")

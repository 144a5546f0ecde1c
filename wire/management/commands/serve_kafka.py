"""`manage.py serve_kafka --listener PLAINTEXT://HOST:PORT [--listener SASL_PLAINTEXT://...]`:
Kafka's own protocol for stock admin clients, on this control plane's controller, authorizer
and audit trail (wire.server)."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from prometheus_client import start_http_server

from controlplane.server.ingress_lag import IngressLagReporter, node_name, report_until
from wire.apis import load_all
from wire.listeners import parse_listeners
from wire.metrics import scraped_registry
from wire.server import Limits, WireServer, ssl_context

DEFAULTS = Limits()


class Command(BaseCommand):
    help = "Serve Kafka's wire protocol for admin clients (kafka-python, librdkafka, kafkajs...)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--listener",
            action="append",
            required=True,
            help="NAME://HOST:PORT (repeatable): NAME is a security protocol (PLAINTEXT, SSL, "
            "SASL_PLAINTEXT, SASL_SSL) or a name --listener-security-protocol-map maps to one; "
            "the names in --controller-listener-names serve brokers (Envelope), the others "
            "clients",
        )
        parser.add_argument(
            "--listener-security-protocol-map",
            default=None,
            metavar="NAME:PROTOCOL[,...]",
            help="Kafka's listener.security.protocol.map (CONTROLLER is PLAINTEXT unless mapped)",
        )
        parser.add_argument(
            "--controller-plaintext-principal",
            default=None,
            metavar="NAME",
            help="the principal a PLAINTEXT controller listener's connections are (a broker "
            "principal), for a controller listener bound to loopback or a private address only; "
            "without it they are User:ANONYMOUS",
        )
        parser.add_argument(
            "--controller-listener-names",
            default=None,
            metavar="NAME[,...]",
            help="Kafka's controller.listener.names (default: CONTROLLER)",
        )
        parser.add_argument(
            "--advertised-host",
            default=None,
            help="the host clients are told to reconnect to (default: the listener's host)",
        )
        parser.add_argument(
            "--port-per-node",
            action="store_true",
            help="advertise each node id at a port of its own on each listener (chosen by the "
            "OS), as a Kafka proxy does: for clients that key connections by address (kafkajs)",
        )
        parser.add_argument(
            "--metrics-port",
            type=int,
            default=None,
            help="serve this process's Prometheus metrics at http://0.0.0.0:PORT/ (a process of "
            "its own on another machine or container; on the web node's machine, a shared "
            "PROMETHEUS_MULTIPROC_DIR joins them to the web node's /metrics)",
        )
        parser.add_argument("--ssl-certfile", default=None)
        parser.add_argument("--ssl-keyfile", default=None)
        parser.add_argument("--ssl-cafile", default=None, help="CA of client certificates")
        parser.add_argument(
            "--ssl-client-auth",
            choices=("none", "requested", "required"),
            default=None,
            help="Kafka's ssl.client.auth (default: requested with --ssl-cafile, else none)",
        )
        parser.add_argument(
            "--ssl-principal-mapping-rules",
            default="DEFAULT",
            help="Kafka's ssl.principal.mapping.rules: a client certificate's distinguished "
            "name to a principal (DEFAULT: the whole name; RULE:pattern/replacement/[L|U])",
        )
        parser.add_argument("--max-frame-bytes", type=int, default=DEFAULTS.max_frame_bytes)
        parser.add_argument("--idle-timeout-s", type=float, default=DEFAULTS.idle_timeout_s)
        parser.add_argument(
            "--authentication-timeout-s", type=float, default=DEFAULTS.authentication_timeout_s
        )
        parser.add_argument(
            "--queued-max-request-bytes",
            type=int,
            default=DEFAULTS.queued_max_request_bytes,
            help="Kafka's queued.max.request.bytes: the bytes of requests held at once, all "
            "client connections together, charged as they arrive (each connection holds one "
            "request at a time)",
        )
        parser.add_argument(
            "--controller-queued-max-request-bytes",
            type=int,
            default=DEFAULTS.controller_queued_max_request_bytes,
            help="the same for controller listeners, a pool of their own",
        )
        parser.add_argument(
            "--memory-wait-timeout-s",
            type=float,
            default=DEFAULTS.memory_wait_timeout_s,
            help="how long a connection may wait for request memory before it is closed",
        )
        parser.add_argument(
            "--frame-timeout-s",
            type=float,
            default=DEFAULTS.frame_timeout_s,
            help="how long a frame may take to arrive once its size is read",
        )
        parser.add_argument(
            "--max-connections-per-ip", type=int, default=DEFAULTS.max_connections_per_ip
        )
        parser.add_argument("--max-connections", type=int, default=DEFAULTS.max_connections)
        parser.add_argument("--threads", type=int, default=DEFAULTS.threads)
        parser.add_argument(
            "--controller-threads",
            type=int,
            default=DEFAULTS.controller_threads,
            help="handler threads of the controller listeners, which client load never takes",
        )
        parser.add_argument(
            "--heartbeat-threads",
            type=int,
            default=settings.CP_HEARTBEAT_THREADS,
            help="the controller listeners' threads for BrokerHeartbeat and BrokerRegistration, "
            "which no Fetch or other request takes (CP_HEARTBEAT_THREADS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.EMBEDDED:
            raise CommandError(
                "serve_kafka needs the distributed setup (CELERY_BROKER_URL): embedded, the web "
                "process is the controller and hosts the listener itself (CP_KAFKA_LISTENERS)"
            )
        try:
            listeners = parse_listeners(
                options["listener"],
                options["listener_security_protocol_map"],
                options["controller_listener_names"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        context = None
        if any(listener.tls for listener in listeners):
            if not (options["ssl_certfile"] and options["ssl_keyfile"]):
                raise CommandError("SSL listeners need --ssl-certfile and --ssl-keyfile")
            try:
                context = ssl_context(
                    options["ssl_certfile"],
                    options["ssl_keyfile"],
                    options["ssl_cafile"],
                    options["ssl_client_auth"],
                )
            except ValueError as error:
                raise CommandError(str(error)) from None
        limits = Limits(
            max_frame_bytes=options["max_frame_bytes"],
            idle_timeout_s=options["idle_timeout_s"],
            authentication_timeout_s=options["authentication_timeout_s"],
            queued_max_request_bytes=options["queued_max_request_bytes"],
            controller_queued_max_request_bytes=options["controller_queued_max_request_bytes"],
            memory_wait_timeout_s=options["memory_wait_timeout_s"],
            frame_timeout_s=options["frame_timeout_s"],
            max_connections_per_ip=options["max_connections_per_ip"],
            max_connections=options["max_connections"],
            threads=options["threads"],
            controller_threads=options["controller_threads"],
            heartbeat_threads=options["heartbeat_threads"],
            heartbeat_rate=settings.CP_HEARTBEAT_RATE_LIMIT,
            heartbeat_burst=settings.CP_HEARTBEAT_RATE_BURST,
            max_long_polls_per_peer=settings.CP_LONG_POLL_MAX_PER_PEER,
        )
        if options["metrics_port"] is not None:
            start_http_server(options["metrics_port"], registry=scraped_registry())
        load_all()
        try:
            server = WireServer(
                listeners,
                limits=limits,
                ssl_context=context,
                advertised_host=options["advertised_host"],
                port_per_node=options["port_per_node"],
                principal_mapping_rules=options["ssl_principal_mapping_rules"],
                controller_plaintext_principal=options["controller_plaintext_principal"],
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        asyncio.run(self._serve(server))

    async def _serve(self, server: WireServer) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        for bound in await server.start():
            listener = bound.listener
            self.stdout.write(
                f"Kafka protocol listener {listener.listener_name}://{bound.host}:{bound.port} "
                f"({listener.protocol}, {listener.role})",
            )
        self.stdout.flush()
        # The fencing rule hears how late this listener answers brokers' heartbeats.
        lag = IngressLagReporter([server], node_name(kafka_listener=True))
        reporting = asyncio.create_task(report_until(lag, stop))
        await stop.wait()
        await reporting
        await server.close()

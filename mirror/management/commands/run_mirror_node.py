"""`python manage.py run_mirror_node --url URL --token TOKEN [--clusters ALIAS ...]`: one dedicated
MirrorMaker 2 node (KIP-710), its own process, as `connect-mirror-maker.sh mm2.properties
--clusters B` runs one. The control plane at URL holds the configuration; the node serves the
flows whose target is among `--clusters` (default: all) and follows the configuration's changes.
Ctrl-C or SIGTERM leaves every group and stops."""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mirror.node.node import MirrorNode


class Command(BaseCommand):
    help = "Run a dedicated MirrorMaker 2 node against the control plane that holds its config."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True, help="the control plane's base URL")
        parser.add_argument(
            "--token",
            default=os.environ.get("CP_MIRROR_TOKEN", ""),
            help="its Bearer token (default: $CP_MIRROR_TOKEN)",
        )
        parser.add_argument("--clusters", nargs="+", default=[], metavar="ALIAS")
        parser.add_argument("--loglevel", default="INFO")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["token"]:
            raise CommandError("--token (or CP_MIRROR_TOKEN) is required")
        _progress_to_stdout(options["loglevel"])
        node = MirrorNode(url=options["url"], token=options["token"], clusters=options["clusters"])
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: node.stop())
        node.run()


def _progress_to_stdout(level: str) -> None:
    """The node's progress (joins, leaders, REST URLs, topics created) on stdout, line by line."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    for name in ("mirror.node", "mirror.node.progress"):
        log = logging.getLogger(name)
        log.handlers = [handler]
        log.propagate = False
        log.setLevel(level.upper())
    logging.getLogger("httpx").setLevel(logging.WARNING)  # never request lines (tokens in URLs)

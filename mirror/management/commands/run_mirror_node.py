"""`python manage.py run_mirror_node --url URL --token TOKEN [--clusters ALIAS ...]`: one dedicated
MirrorMaker 2 node (KIP-710), its own process, as `connect-mirror-maker.sh mm2.properties
--clusters B` runs one. The control plane at URL holds the configuration; the node serves the
flows whose target is among `--clusters` (default: all) and follows the configuration's changes.
Ctrl-C or SIGTERM leaves every group and stops; SIGUSR1 writes every thread's stack to stderr
(as a JVM's SIGQUIT thread dump) and the node goes on.

The stored text declares config providers (a super user's), but what this node reads from its
own host is its operator's to bound, here, as Kafka's worker is bounded by the
`org.apache.kafka.automatic.config.providers` system property and KIP-993's `allowed.paths`:
`--config-providers`, `--env-allowlist` and `--allowed-paths`, each also from the environment
(the option wins)."""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mirror.node.node import MirrorNode
from mirror.node.providers import NodePolicy, PolicyError

# Each bound's option and the environment variable it falls back to.
POLICY_SOURCES = {
    "config_providers": "CP_MIRROR_CONFIG_PROVIDERS",
    "env_allowlist": "CP_MIRROR_ENV_ALLOWLIST",
    "allowed_paths": "CP_MIRROR_ALLOWED_PATHS",
}


class Command(BaseCommand):
    help = "Run a dedicated MirrorMaker 2 node against the control plane that holds its config."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", required=True, help="the control plane's base URL")
        parser.add_argument(
            "--token",
            default=os.environ.get("CP_MIRROR_TOKEN", ""),
            help="its Bearer token (default: $CP_MIRROR_TOKEN). A stored text can never "
            "resolve it through ${env:CP_MIRROR_TOKEN} unless --env-allowlist admits the name.",
        )
        parser.add_argument("--clusters", nargs="+", default=[], metavar="ALIAS")
        parser.add_argument("--loglevel", default="INFO")
        parser.add_argument(
            "--config-providers",
            default=None,
            metavar="KINDS",
            help="the config provider kinds this node instantiates, comma-separated: env, file, "
            "directory (or Kafka's class names), or none; a declared provider of another kind "
            "is never instantiated and its references stay literal, as with Kafka's "
            "org.apache.kafka.automatic.config.providers (default: "
            "$CP_MIRROR_CONFIG_PROVIDERS, else every kind the stored text declares)",
        )
        parser.add_argument(
            "--env-allowlist",
            default=None,
            metavar="REGEX",
            help="the environment variables ${env:NAME} may resolve on this node: a name must "
            "match this pattern and the text's allowlist.pattern, whole (default: "
            "$CP_MIRROR_ENV_ALLOWLIST, else the text's pattern alone). Without it the house's "
            "own CP_* variables, this node's token CP_MIRROR_TOKEN among them, never resolve; "
            "with it, only when the pattern admits their names: keep them out of it.",
        )
        parser.add_argument(
            "--allowed-paths",
            default=None,
            metavar="PATHS",
            help="the absolute paths, comma-separated, under which the file and directory "
            "providers read on this node, by name and by where links lead, as KIP-993's "
            "allowed.paths; a path must also be under the text's own allowed.paths when it sets "
            "them (default: $CP_MIRROR_ALLOWED_PATHS, else the text's allowed.paths alone)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["token"]:
            raise CommandError("--token (or CP_MIRROR_TOKEN) is required")
        try:
            policy = node_policy(options, os.environ)
        except PolicyError as refused:
            raise CommandError(str(refused)) from None
        _progress_to_stdout(options["loglevel"])
        node = MirrorNode(
            url=options["url"],
            token=options["token"],
            clusters=options["clusters"],
            policy=policy,
        )
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: node.stop())
        faulthandler.register(signal.SIGUSR1, all_threads=True)
        node.run()


def node_policy(options: Mapping[str, Any], environ: Mapping[str, str]) -> NodePolicy:
    """The operator's bound: each option as given, else its environment variable, else none."""
    given = {
        name: options.get(name) if options.get(name) is not None else environ.get(variable)
        for name, variable in POLICY_SOURCES.items()
    }
    return NodePolicy.parse(**given)


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

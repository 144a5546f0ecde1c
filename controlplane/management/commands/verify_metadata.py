from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from controlplane.runtime.lease import cluster_read
from controlplane.runtime.replay import metadata_verify


class Command(BaseCommand):
    help = (
        "Replay the metadata log and report every difference from the state tables, and every "
        "request id applied more than once (exit 1)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        problems = metadata_verify()
        cluster = cluster_read()
        if cluster.projected_offset < cluster.last_offset:
            self.stdout.write(
                f"The state tables stand at offset {cluster.projected_offset} and the log ends "
                f"at {cluster.last_offset}: compared through the tables' offset (a commit's "
                "tables follow its log; a controller taking over catches them up)."
            )
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            self.stderr.write(f"{len(problems)} problem(s) between the log and the state.")
            raise SystemExit(1)
        self.stdout.write(
            "The metadata log replays to exactly the state tables; every request id was "
            "applied at most once."
        )

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from controlplane.runtime.replay import metadata_verify


class Command(BaseCommand):
    help = (
        "Replay the metadata log and report every difference from the state tables, and every "
        "request id applied more than once (exit 1)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        problems = metadata_verify()
        for problem in problems:
            self.stderr.write(problem)
        if problems:
            self.stderr.write(f"{len(problems)} problem(s) between the log and the state.")
            raise SystemExit(1)
        self.stdout.write(
            "The metadata log replays to exactly the state tables; every request id was "
            "applied at most once."
        )

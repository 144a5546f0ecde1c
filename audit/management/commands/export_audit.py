from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from audit.export import BATCH_ROWS, audit_export_run
from audit.progress import TerminalProgress
from audit.spark.session import SparkUnavailable, spark_session
from audit.spark.storage import ExportError, is_uri


class Command(BaseCommand):
    help = (
        "Append what is new in the metadata log and the audit trail since the last export to "
        "Parquet datasets (metadata_log/, audit_events/, by date) at a path or Hadoop URI; "
        "exactly once, however often a run is killed and rerun."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--to",
            default=None,
            help=f"export path or Hadoop-compatible URI (default {settings.CP_AUDIT_EXPORT_PATH})",
        )
        parser.add_argument(
            "--master",
            default=None,
            help="Spark master for the Hadoop file system of a URI (default local[*])",
        )
        parser.add_argument(
            "--batch-rows", type=int, default=BATCH_ROWS, help="rows per file at most"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        target = options["to"] or str(settings.CP_AUDIT_EXPORT_PATH)
        if options["batch_rows"] < 1:
            raise CommandError("--batch-rows must be at least 1.")
        progress = TerminalProgress(self.stdout)
        try:
            spark = None
            if is_uri(target) or options["master"]:
                spark = spark_session(options["master"] or settings.CP_SPARK_MASTER)
            result = audit_export_run(
                target=target,
                spark=spark,
                on_progress=progress,
                batch_rows=options["batch_rows"],
            )
        except (ExportError, SparkUnavailable) as error:
            raise CommandError(str(error)) from None
        except DatabaseError as error:
            first = (
                str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            )
            raise CommandError(f"Cannot read the metadata store: {first}") from None
        progress.finish()
        if result.commit is None:
            self.stdout.write(f"Nothing new to export to {result.path}.")
            return
        rows = ", ".join(f"{n:,} {name}" for name, n in result.rows.items())
        self.stdout.write(
            f"committed export {result.commit} to {result.path}: {rows} rows in {result.files} "
            f"file(s), {result.seconds:.1f} s ({result.rows_per_second:,.0f} rows/s)"
        )

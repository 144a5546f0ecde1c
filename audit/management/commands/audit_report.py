from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.spark.job import report_run
from audit.spark.params import ReportError
from audit.spark.render import FORMATS
from audit.spark.reports import REPORTS
from audit.spark.session import SparkUnavailable
from audit.spark.storage import ExportError


class Command(BaseCommand):
    help = (
        "Run a PySpark audit report over the Parquet export (export_audit): "
        + ", ".join(REPORTS)
        + ". Times are ISO 8601 or epoch milliseconds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", metavar="NAME", help="the report: " + ", ".join(REPORTS))
        parser.add_argument(
            "--data",
            default=None,
            help=f"export path or URI (default {settings.CP_AUDIT_EXPORT_PATH})",
        )
        parser.add_argument("--from", dest="from_text", help="period start (inclusive)")
        parser.add_argument("--to", dest="to_text", help="period end (inclusive)")
        parser.add_argument("--at", dest="at_text", help="state-at: the moment (default now)")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, help="output format")
        parser.add_argument("--out", help="output file (a directory for parquet)")
        parser.add_argument("--master", help=f"Spark master (default {settings.CP_SPARK_MASTER})")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report_run(
                options["name"],
                data=options["data"] or str(settings.CP_AUDIT_EXPORT_PATH),
                from_text=options["from_text"],
                to_text=options["to_text"],
                at_text=options["at_text"],
                fmt=options["fmt"],
                out=options["out"],
                master=options["master"] or settings.CP_SPARK_MASTER,
                progress=lambda line: self.stderr.write(line),
                stdout=self.stdout,
            )
        except (ReportError, SparkUnavailable, ExportError) as error:
            raise CommandError(str(error)) from None

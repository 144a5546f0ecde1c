"""The audit report job, runnable without Django:

    python -m audit.spark.job NAME [--data PATH_OR_URI] [--from T] [--to T] [--at T]
        [--format csv|parquet|html|json] [--out PATH] [--master URL]
    spark-submit [--master URL] audit/spark/job.py NAME ...

Times are ISO 8601 or epoch milliseconds. Progress goes to stderr; without --out the rows are
printed as a table (the first 50 and a count). Bad input (an unknown report, a bad time, no
export, a damaged or corrupt file, a master that cannot be reached) is one line, `error: ...`,
and exit code 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file (spark-submit audit/spark/job.py): import it as a package
    _here = Path(__file__).resolve().parent
    sys.path[:] = [str(_here.parents[1])] + [
        p for p in sys.path if p and Path(p).resolve() != _here
    ]

import argparse
import contextlib
import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

from audit.spark.params import ReportError, params_parse
from audit.spark.reader import export_check, export_read, reading
from audit.spark.render import FORMATS, TextSink, out_check, report_write, table_print
from audit.spark.reports import REPORTS, report_build
from audit.spark.session import SparkUnavailable, spark_session
from audit.spark.storage import ExportError, is_uri

# The export's default path: var/audit under the project, as settings has it
# (docs/operators/audit-reports.md).
DEFAULT_DATA = str(Path(__file__).resolve().parents[2] / "var" / "audit")
EXIT_BAD_INPUT = 2

Progress = Callable[[str], None]


def report_run(
    name: str,
    *,
    data: str,
    from_text: str | None = None,
    to_text: str | None = None,
    at_text: str | None = None,
    fmt: str | None = None,
    out: str | None = None,
    master: str | None = None,
    progress: Progress | None = None,
    stdout: TextSink | None = None,
    spark: Any = None,
) -> int:
    """Run report `name` over the export at `data` and write it to `out` (or print it as a
    table); returns the number of rows. Raises ReportError (or SparkUnavailable) for bad input.
    """
    say = progress or (lambda line: None)
    report = REPORTS.get(name)
    if report is None:
        raise ReportError(f"unknown report {name!r}: known reports are {', '.join(REPORTS)}")
    params = params_parse(from_text=from_text, to_text=to_text, at_text=at_text)
    if report.at_moment and params.from_ms is not None:
        raise ReportError(f"{name} is the state at one moment: give --at, not --from")
    if not report.at_moment and params.at_ms is not None:
        raise ReportError(f"{name} covers a period: give --from/--to (--at is for state-at)")
    if out:
        fmt = fmt or _format_of(out)
        out_check(out, fmt)
    elif fmt:
        raise ReportError(f"--format {fmt} needs --out PATH (without it the rows are printed)")
    started = time.monotonic()
    if not is_uri(data):
        export_check(data)  # a missing or damaged export is said before Spark starts
    session = spark or spark_session(master or _submitted_master())
    say(f"spark {session.version} on {session.sparkContext.master}")
    export = export_read(session, data, on_progress=say)
    with reading(export), _cache_cleared(session):
        say(f"computing {name}")
        frame = report_build(name, export, params)
        if out:
            say(f"writing {fmt} to {out}")
            rows = report_write(
                frame,
                report=report,
                params=params,
                fmt=str(fmt),
                out=out,
                source=export.location,
                spark=session,
            )
        else:
            rows = table_print(frame, stdout or sys.stdout)
    say(f"done: {rows} row{'' if rows == 1 else 's'} in {time.monotonic() - started:.1f} s")
    return rows


def _submitted_master() -> str | None:
    """The master `spark-submit` was given, when it launched this job (its JVM then waits on a
    gateway for us): the job runs where spark-submit sent it unless --master says otherwise."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # joins that gateway: the conf is spark-submit's
    master: str | None = SparkConf().get("spark.master", None)
    return master


@contextlib.contextmanager
def _cache_cleared(session: Any) -> Iterator[None]:
    """What a report cached for its own plan is dropped when it is written."""
    try:
        yield
    finally:
        session.catalog.clearCache()


def _format_of(out: str) -> str:
    suffix = out.rstrip("/").rsplit(".", 1)[-1].lower() if "." in out else ""
    return suffix if suffix in FORMATS else "csv"


class _Parser(argparse.ArgumentParser):
    """argparse, but a mistake is a ReportError (one line, exit code 2), not usage text."""

    def error(self, message: str) -> NoReturn:
        raise ReportError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="audit.spark.job",
        description="Run an audit report over an export_audit export.",
        epilog="Reports: " + ", ".join(REPORTS),
    )
    p.add_argument("name", metavar="NAME", help="the report: " + ", ".join(REPORTS))
    p.add_argument("--data", default=None, help=f"export path or URI (default {DEFAULT_DATA})")
    p.add_argument("--from", dest="from_text", default=None, help="period start (inclusive)")
    p.add_argument("--to", dest="to_text", default=None, help="period end (inclusive)")
    p.add_argument("--at", dest="at_text", default=None, help="state-at: the moment (now)")
    p.add_argument("--format", dest="fmt", default=None, choices=FORMATS, help="output format")
    p.add_argument("--out", default=None, help="output file (a directory for parquet)")
    p.add_argument("--master", default=None, help="Spark master (default local[*])")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # Spark's own log lines (a Java stack trace for a file it cannot read) are not the message:
    # the error line is. CP_SPARK_LOG_LEVEL=WARN brings them back.
    os.environ.setdefault("CP_SPARK_LOG_LEVEL", "OFF")
    # The job says its own progress on stderr: Spark's console progress bar would garble it.
    os.environ.setdefault(
        "PYSPARK_SUBMIT_ARGS", "--conf spark.ui.showConsoleProgress=false pyspark-shell"
    )
    try:
        args = parser().parse_args(argv)
        report_run(
            args.name,
            data=args.data or os.environ.get("CP_AUDIT_EXPORT_PATH") or DEFAULT_DATA,
            from_text=args.from_text,
            to_text=args.to_text,
            at_text=args.at_text,
            fmt=args.fmt,
            out=args.out,
            master=args.master,
            progress=lambda line: print(line, file=sys.stderr, flush=True),
            stdout=sys.stdout,
        )
    except (ReportError, SparkUnavailable, ExportError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug, not bad input: its traceback, then the error line
        traceback.print_exc()
        print(f"error: the report failed unexpectedly: {error!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

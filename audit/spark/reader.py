"""Reading an export: each dataset's committed files as a DataFrame.

The file lists come from the export's commit log (`storage.verify_files`: every committed file
there whole), never from listing directories, so what a run that died left behind is never
read. Files are read with the schema's DDL and the dataset's root as `basePath`, so the `date`
partition column comes from the path. A problem is refused in one line naming it: no export at
the path, a missing or truncated file, a schema major version these jobs do not know, and (when
Spark reads it) a file that is not valid Parquet.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from audit.spark import storage as store
from audit.spark.params import ReportError
from audit.spark.schema import AUDIT_EVENTS, DATASETS, METADATA_LOG

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class Export:
    """An export's committed datasets, ready for the reports."""

    location: str
    metadata_log: DataFrame
    audit_events: DataFrame
    files: dict[str, tuple[str, ...]]  # dataset -> the committed files' URIs
    rows: dict[str, int]


def export_check(location: str, *, spark: Any = None) -> dict[str, store.CommittedFiles]:
    """The committed files of each dataset of the export at `location`, each there whole, or a
    ReportError naming what is wrong. A local path needs no Spark: the job checks it before
    starting one, so a missing export is said at once."""
    storage = _open(spark, location)
    return {name: _committed(storage, name) for name in DATASETS}


def export_read(spark: Any, location: str, *, on_progress: Progress | None = None) -> Export:
    """The committed datasets of the export at `location` (a path, or a Hadoop URI read through
    `spark`'s JVM)."""
    say = on_progress or (lambda line: None)
    storage = _open(spark, location)
    committed = {name: _committed(storage, name) for name in DATASETS}
    files = {
        name: tuple(_spark_uri(storage, path) for path in sorted(part.files))
        for name, part in committed.items()
    }
    rows = {name: part.rows for name, part in committed.items()}
    say(
        f"reading {sum(len(f) for f in files.values())} committed file(s) from {location}: "
        + ", ".join(f"{name} {len(files[name])} file(s), {rows[name]:,} rows" for name in files)
    )
    return Export(
        location=location,
        metadata_log=_frame(spark, storage, METADATA_LOG.name, files[METADATA_LOG.name]),
        audit_events=_frame(spark, storage, AUDIT_EVENTS.name, files[AUDIT_EVENTS.name]),
        files=files,
        rows=rows,
    )


def _open(spark: Any, location: str) -> store.Storage:
    if not location:
        raise ReportError("no export path given: pass --data PATH_OR_URI")
    try:
        storage = store.open_storage(location, spark=spark)
        if not store.is_uri(location):
            root = Path(storage.root)
            if root.exists() and not root.is_dir():
                raise ReportError(f"{location} is a file, not an export directory")
        if not store.commits(storage):
            raise ReportError(f"no export at {location}: run export_audit first")
    except store.ExportError as error:
        raise ReportError(str(error)) from None
    except ReportError:
        raise
    except Exception as error:  # Hadoop's FileSystem through py4j: an unknown scheme, a refusal
        if not _is_spark_error(error):
            raise
        raise ReportError(f"cannot read the export at {location}: {cause(error)}") from None
    return storage


def _committed(storage: store.Storage, dataset: str) -> store.CommittedFiles:
    try:
        return store.verify_files(storage, dataset)
    except store.ExportError as error:
        raise ReportError(str(error)) from None


def _spark_uri(storage: store.Storage, path: str) -> str:
    """A URI Spark reads on any master: a local path is made explicit (`file://`), so a
    cluster whose default file system is HDFS does not look for it there."""
    if store.is_uri(storage.root):
        return storage.uri(path)
    return f"file://{storage.uri(path)}"


def _frame(spark: Any, storage: store.Storage, dataset: str, uris: tuple[str, ...]) -> DataFrame:
    ddl = DATASETS[dataset].spark_ddl()
    frame: DataFrame
    if not uris:  # nothing of it exported yet: an empty frame of the same columns
        frame = spark.createDataFrame([], ddl)
    else:
        base = _spark_uri(storage, dataset)
        frame = spark.read.schema(ddl).option("basePath", base).parquet(*uris)
    return frame


# --- Spark's failures to read, in words -------------------------------------------------------


def _is_spark_error(error: BaseException) -> bool:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return isinstance(error, Py4JError | PySparkException)


def cause(error: BaseException) -> str:
    """The innermost Java cause's message (what went wrong, without the stack), else the first
    line of the error."""
    throwable = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    message = ""
    seen = 0
    while throwable is not None and seen < 20:
        text = throwable.getMessage()
        if text:
            message = str(text)
        throwable = throwable.getCause()
        seen += 1
    if not message:
        text = str(getattr(error, "desc", "") or error).strip()
        message = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    message = " ".join(message.split())
    return message if len(message) <= 300 else message[:297] + "..."


def read_failure(error: BaseException, export: Export) -> str | None:
    """The message for a Spark failure while reading `export`, naming the file when Spark names
    one of the committed files; None when the error is not Spark's."""
    if not _is_spark_error(error):
        return None
    text = str(error)
    reason = cause(error)
    for uris in export.files.values():
        for uri in uris:
            relative = uri.split("/", 3)[-1] if "://" in uri else uri
            tail = "/".join(relative.rsplit("/", 3)[-3:])  # dataset/date=.../part-....parquet
            if tail in text or tail in reason:
                return f"{uri} is corrupt: Spark cannot read it as Parquet ({reason})"
    return f"Spark failed on the export at {export.location}: {reason}"


@contextlib.contextmanager
def reading(export: Export) -> Iterator[None]:
    """Spark's failures while the export is read (lazily, in the job's actions) as one-line
    `ReportError`s naming the file."""
    try:
        yield
    except Exception as error:
        message = read_failure(error, export)
        if message is None:
            raise
        raise ReportError(message) from None

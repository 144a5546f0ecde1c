"""Where an export lives, and its commit log: write-then-commit, as Spark's own file commit
protocol does.

An export path holds the two datasets and `_export/`, the export's own bookkeeping:

    <path>/metadata_log/date=YYYY-MM-DD/part-<commit>-<n>.parquet
    <path>/audit_events/date=YYYY-MM-DD/part-<commit>-<n>.parquet
    <path>/_export/commits/<commit>.json   one per finished export run: its files, row counts,
                                           and the watermark (how far the source was exported)
    <path>/_export/LOCK                    held by the run writing now
    <path>/_temporary/<commit>/...         a run's files before they are committed

A run writes its files under `_temporary/`, moves them into the datasets, then creates its
commit file in one atomic step (written aside, then renamed or linked into place). Only files a
commit names are part of the export: readers take the file lists from the commit log, never by
listing directories, so a run killed at any point leaves nothing a reader would see, and the
next run (holding the lock) deletes what the dead one left and starts again from the last
commit's watermark: no gap, no duplicate.

Plain paths are the local file system; a URI (`file://`, `hdfs://`, `s3a://`, any scheme Hadoop
knows) goes through Hadoop's FileSystem in a Spark session's JVM, as Spark itself writes.
Pure Python: no Django here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from audit.spark.schema import DATASETS, SCHEMA_VERSION, readable

CONTROL = "_export"
COMMITS = f"{CONTROL}/commits"
LOCK = f"{CONTROL}/LOCK"
TEMPORARY = "_temporary"
STALE_LOCK_MS = 3_600_000  # a lock this old is taken over whoever held it


class ExportError(Exception):
    """A problem with an export path, named for the person who runs the command."""


class Storage(Protocol):
    root: str

    def uri(self, path: str) -> str: ...
    def exists(self, path: str) -> bool: ...
    def files(self, directory: str) -> dict[str, int]: ...
    def read_text(self, path: str) -> str: ...
    def create_text(self, path: str, text: str) -> bool: ...
    def put(self, local: Path, path: str) -> None: ...
    def move(self, source: str, target: str) -> None: ...
    def delete(self, path: str) -> None: ...
    def check_writable(self) -> None: ...


def is_uri(location: str) -> bool:
    return "://" in location


def open_storage(location: str, *, spark: Any = None) -> Storage:
    """The storage at `location`: local for a plain path, Hadoop's FileSystem (in `spark`'s JVM)
    for a URI."""
    if not location:
        raise ExportError("No export path given.")
    if is_uri(location):
        if spark is None:
            raise ExportError(f"{location} is a URI: it needs a Spark session (Hadoop).")
        return HadoopStorage(location.rstrip("/"), spark)
    return LocalStorage(str(Path(location).expanduser().resolve()))


@dataclasses.dataclass
class LocalStorage:
    root: str

    def _path(self, path: str) -> Path:
        return Path(self.root, path)

    def uri(self, path: str) -> str:
        return str(self._path(path))

    def exists(self, path: str) -> bool:
        return self._path(path).exists()

    def files(self, directory: str) -> dict[str, int]:
        """Every file under `directory` (relative to the root) with its size."""
        base = self._path(directory)
        if not base.is_dir():
            return {}
        found = {}
        for dirpath, _, names in os.walk(base):
            for name in names:
                full = Path(dirpath, name)
                found[str(full.relative_to(self.root))] = full.stat().st_size
        return found

    def read_text(self, path: str) -> str:
        return self._path(path).read_text()

    def create_text(self, path: str, text: str) -> bool:
        """Create a file atomically, only if none is there (False when one is)."""
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
        aside.write_text(text)
        try:
            os.link(aside, target)  # atomic, and refuses an existing name
        except FileExistsError:
            return False
        finally:
            aside.unlink()
        return True

    def put(self, local: Path, path: str) -> None:
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(local), target)

    def move(self, source: str, target: str) -> None:
        destination = self._path(target)
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self._path(source), destination)

    def delete(self, path: str) -> None:
        target = self._path(path)
        if target.is_dir():
            shutil.rmtree(target, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()

    def check_writable(self) -> None:
        root = Path(self.root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            probe = root / f".probe-{uuid.uuid4().hex}"
            probe.write_text("")
            probe.unlink()
        except OSError as error:
            raise ExportError(
                f"Cannot write to the export path {self.root}: {error.strerror}."
            ) from None


class HadoopStorage:
    """The same operations through Hadoop's FileSystem API in a Spark session's JVM."""

    def __init__(self, root: str, spark: Any) -> None:
        self.root = root
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self._fs = self._hpath("").getFileSystem(self._conf)

    def _hpath(self, path: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self.uri(path))

    def uri(self, path: str) -> str:
        return f"{self.root}/{path}" if path else self.root

    def exists(self, path: str) -> bool:
        return bool(self._fs.exists(self._hpath(path)))

    def files(self, directory: str) -> dict[str, int]:
        base = self._hpath(directory)
        if not self._fs.exists(base):
            return {}
        root = self._fs.makeQualified(self._hpath("")).toString().rstrip("/") + "/"
        found = {}
        listing = self._fs.listFiles(base, True)
        while listing.hasNext():
            status = listing.next()
            qualified = status.getPath().toString()
            found[qualified[len(root) :]] = int(status.getLen())
        return found

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._hpath(path))
        try:
            buffer = self._jvm.java.io.ByteArrayOutputStream()
            self._jvm.org.apache.hadoop.io.IOUtils.copyBytes(stream, buffer, 65536, False)
            return bytes(buffer.toByteArray()).decode()
        finally:
            stream.close()

    def create_text(self, path: str, text: str) -> bool:
        target = self._hpath(path)
        aside = self._hpath(f"{path}.{uuid.uuid4().hex}.tmp")
        out = self._fs.create(aside, False)
        try:
            out.write(bytearray(text.encode()))
        finally:
            out.close()
        if self._fs.exists(target):
            self._fs.delete(aside, False)
            return False
        if not self._fs.rename(aside, target):  # refuses an existing target (HDFS: atomic)
            self._fs.delete(aside, False)
            return False
        return True

    def put(self, local: Path, path: str) -> None:
        target = self._hpath(path)
        self._fs.mkdirs(target.getParent())
        self._fs.copyFromLocalFile(
            True, True, self._jvm.org.apache.hadoop.fs.Path(str(local)), target
        )

    def move(self, source: str, target: str) -> None:
        destination = self._hpath(target)
        self._fs.mkdirs(destination.getParent())
        if not self._fs.rename(self._hpath(source), destination):
            raise ExportError(f"Could not move {source} to {target} under {self.root}.")

    def delete(self, path: str) -> None:
        self._fs.delete(self._hpath(path), True)

    def check_writable(self) -> None:
        try:
            self._fs.mkdirs(self._hpath(""))
            probe = f".probe-{uuid.uuid4().hex}"
            if not self.create_text(probe, ""):
                raise ExportError(f"Cannot write to the export path {self.root}.")
            self.delete(probe)
        except ExportError:
            raise
        except Exception as error:  # py4j carries the Java exception's text
            raise ExportError(
                f"Cannot write to the export path {self.root}: {_java_message(error)}"
            ) from None


def _java_message(error: Exception) -> str:
    text = str(error)
    for line in text.splitlines():
        if "Exception" in line and ":" in line:
            return line.split(":", 1)[1].strip() or line.strip()
    return text.splitlines()[0] if text else type(error).__name__


# --- the commit log ----------------------------------------------------------------------


def commit_path(number: int) -> str:
    return f"{COMMITS}/{number:010d}.json"


def commits(storage: Storage) -> list[dict[str, Any]]:
    """Every commit of the export, oldest first; checks each was written with a schema these
    jobs read."""
    found = []
    for path in sorted(storage.files(COMMITS)):
        name = path.rsplit("/", 1)[-1]
        if not (name.endswith(".json") and name[:-5].isdigit()):
            continue  # a commit being written aside, or something else: not a commit
        try:
            commit = json.loads(storage.read_text(path))
        except (ValueError, OSError) as error:
            raise ExportError(f"Unreadable commit file {storage.uri(path)}: {error}") from None
        version = str(commit.get("schema_version", ""))
        if not readable(version):
            raise ExportError(
                f"{storage.uri(path)} was written with schema version {version!r}; these jobs "
                f"read version {SCHEMA_VERSION.split('.')[0]}.x."
            )
        found.append(commit)
    return found


def latest_commit(storage: Storage) -> dict[str, Any] | None:
    every = commits(storage)
    return every[-1] if every else None


@dataclasses.dataclass(frozen=True, slots=True)
class CommittedFiles:
    """The files of a dataset that the export's commits name, with their sizes."""

    dataset: str
    files: dict[str, int]
    rows: int


def committed_files(storage: Storage, dataset: str) -> CommittedFiles:
    files: dict[str, int] = {}
    rows = 0
    for commit in commits(storage):
        part = commit.get("datasets", {}).get(dataset, {})
        rows += int(part.get("rows", 0))
        for item in part.get("files", []):
            files[item["path"]] = int(item["bytes"])
    return CommittedFiles(dataset, files, rows)


def verify_files(storage: Storage, dataset: str) -> CommittedFiles:
    """The committed files of `dataset`, each checked to be there whole (its size as
    committed): a missing or truncated file is named, never read as if it were complete."""
    committed = committed_files(storage, dataset)
    present = storage.files(dataset)
    for path, size in committed.files.items():
        if path not in present:
            raise ExportError(f"The export at {storage.root} is missing {path}.")
        if present[path] != size:
            raise ExportError(
                f"{storage.uri(path)} is damaged: {present[path]} bytes where the export "
                f"committed {size}."
            )
    return committed


def uncommitted_files(storage: Storage) -> list[str]:
    named: set[str] = set()
    for commit in commits(storage):
        for part in commit.get("datasets", {}).values():
            named.update(item["path"] for item in part.get("files", []))
    leftovers = [p for d in DATASETS for p in storage.files(d) if p not in named]
    return sorted(leftovers)


# --- the lock ------------------------------------------------------------------------------


@contextlib.contextmanager
def export_lock(storage: Storage, *, owner: str) -> Iterator[None]:
    """Hold the export path's lock: one run writes at a time. A lock left by a run that died
    (its process is gone on this host, or it is older than STALE_LOCK_MS) is taken over."""
    mine = json.dumps(
        {"owner": owner, "host": socket.gethostname(), "pid": os.getpid(), "since_ms": _now_ms()}
    )
    for _ in range(3):
        if storage.create_text(LOCK, mine):
            break
        holder = _lock_holder(storage)
        if holder is not None and not _stale(holder):
            raise ExportError(
                f"Another export is writing to {storage.root} (pid {holder.get('pid')} on "
                f"{holder.get('host')}, {holder.get('owner')}); try again when it is done."
            )
        storage.delete(LOCK)  # its holder died: take it over
    else:
        raise ExportError(f"Could not take the export lock at {storage.uri(LOCK)}.")
    try:
        yield
    finally:
        storage.delete(LOCK)


def _lock_holder(storage: Storage) -> dict[str, Any] | None:
    try:
        holder = json.loads(storage.read_text(LOCK))
    except (ValueError, OSError):
        return None  # half-written by a run that died while taking it
    except Exception:  # a Hadoop FileNotFound: released meanwhile
        return None
    return holder if isinstance(holder, dict) else None


def _stale(holder: dict[str, Any]) -> bool:
    if _now_ms() - int(holder.get("since_ms", 0)) > STALE_LOCK_MS:
        return True
    if holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(holder.get("pid", -1)), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


def _now_ms() -> int:
    return time.time_ns() // 1_000_000

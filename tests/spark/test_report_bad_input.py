"""Bad input to the report job never hurts (issue 10, "Bad input"): an unknown report, bad
times, no export, a missing, truncated or corrupt file, a schema the job does not know, a master
that cannot be reached: one `error: ...` line naming the problem, exit code 2 (CommandError
from manage.py), no traceback, no output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from audit.spark.job import main
from audit.spark.params import iso, now_ms
from audit.spark.reports import REPORTS
from tests.spark.conftest import Day

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """Run the job in this process (its shared Spark session); the one error line it printed."""
    assert main(list(argv)) == 2
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, captured.err
    assert "Traceback" not in captured.err and captured.out == ""
    return errors[0].removeprefix("error: ")


@pytest.fixture
def copy(day: Day, tmp_path: Path) -> Path:
    """A copy of the day's export, to damage."""
    target = tmp_path / "export"
    shutil.copytree(day.export, target)
    return target


def test_an_unknown_report_is_refused_with_the_known_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    message = refused(capsys, "who-did-it")
    assert message == f"unknown report 'who-did-it': known reports are {', '.join(REPORTS)}"
    with pytest.raises(CommandError, match="unknown report 'who-did-it'"):
        call_command("audit_report", "who-did-it")


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--from", "yesterday"], "--from: 'yesterday' is neither ISO 8601"),
        (["--to", "2026-02-30"], "--to: '2026-02-30' is neither ISO 8601"),
        (["--from", "99999999999999999"], "--from: '99999999999999999' lies outside the years"),
        (["--from", "2026-01-02", "--to", "2026-01-01"], "is after --to 2026-01-01T00:00:00.000Z"),
        (["--from", "9999-01-01"], "--from 9999-01-01T00:00:00.000Z is in the future"),
        (["--at", "2026-01-01"], "admin-activity covers a period: give --from/--to"),
        (["--format", "xls", "--out", "x.xls"], "argument --format: invalid choice: 'xls'"),
        (["--format", "html"], "--format html needs --out PATH"),
        (["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_options_are_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], day: Day, argv: list[str], problem: str
) -> None:
    assert problem in refused(capsys, "admin-activity", "--data", str(day.export), *argv)


def test_state_at_refuses_a_moment_the_log_cannot_answer(
    capsys: pytest.CaptureFixture[str], day: Day
) -> None:
    data = ["state-at", "--data", str(day.export)]
    first = min(r["timestamp_ms"] for r in day.records)
    message = refused(capsys, *data, "--at", str(first - 1))
    assert message == f"--at {iso(first - 1)} is before the log's first record ({iso(first)})"
    future = now_ms() + 3_600_000
    assert refused(capsys, *data, "--at", str(future)).startswith(f"--at {iso(future)} is in the")
    assert "give --at, not --from" in refused(capsys, *data, "--from", str(first))
    assert main([*data, "--at", str(first)]) == 0  # the first record's own time is fine
    assert capsys.readouterr().out.splitlines()[-1].endswith("rows")


def test_a_path_without_an_export_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere"
    assert refused(capsys, "canary", "--data", str(missing)) == (
        f"no export at {missing}: run export_audit first"
    )
    (tmp_path / "empty").mkdir()
    assert "no export at" in refused(capsys, "canary", "--data", str(tmp_path / "empty"))
    (tmp_path / "file").write_text("not an export")
    assert refused(capsys, "canary", "--data", str(tmp_path / "file")) == (
        f"{tmp_path / 'file'} is a file, not an export directory"
    )
    with pytest.raises(CommandError, match=f"no export at {missing}: run export_audit first"):
        call_command("audit_report", "canary", "--data", str(missing))


def test_a_missing_or_truncated_file_is_named(
    capsys: pytest.CaptureFixture[str], copy: Path
) -> None:
    part = next((copy / "metadata_log").rglob("*.parquet"))
    name = str(part.relative_to(copy))
    part.write_bytes(part.read_bytes()[:-100])
    assert f"{name} is damaged" in refused(capsys, "canary", "--data", str(copy))
    part.unlink()
    assert refused(capsys, "canary", "--data", str(copy)) == (
        f"The export at {copy} is missing {name}."
    )


@pytest.mark.parametrize("dataset", ["metadata_log", "audit_events"])
def test_a_corrupt_parquet_file_is_named_not_a_stack_trace(
    capsys: pytest.CaptureFixture[str], copy: Path, dataset: str, tmp_path: Path
) -> None:
    part = next((copy / dataset).rglob("*.parquet"))
    size = part.stat().st_size
    part.write_bytes(part.read_bytes()[:4] + b"\x00" * (size - 8) + b"PAR1")  # size unchanged
    out = tmp_path / "out.csv"
    report = "broker-lifecycle" if dataset == "metadata_log" else "denied-requests"
    message = refused(capsys, report, "--data", str(copy), "--out", str(out))
    assert message.startswith(f"file://{part} is corrupt: Spark cannot read it as Parquet (")
    assert "\n" not in message and "\tat " not in message and len(message) < 500
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["export"]


def test_a_schema_major_version_it_does_not_know_is_refused(
    capsys: pytest.CaptureFixture[str], copy: Path
) -> None:
    commit = copy / "_export/commits/0000000001.json"
    written = json.loads(commit.read_text())
    commit.write_text(json.dumps({**written, "schema_version": "2.0"}))
    message = refused(capsys, "admin-activity", "--data", str(copy))
    assert message == (
        f"{commit} was written with schema version '2.0'; these jobs read version 1.x."
    )
    commit.write_text(json.dumps({**written, "schema_version": "1.7"}))  # a newer minor: read
    assert main(["admin-activity", "--data", str(copy)]) == 0


def test_an_unreachable_or_unknown_master_is_refused(
    capsys: pytest.CaptureFixture[str], day: Day, tmp_path: Path
) -> None:
    data = ["admin-activity", "--data", str(day.export), "--out", str(tmp_path / "a.csv")]
    assert refused(capsys, *data, "--master", "spark://127.0.0.1:1").startswith(
        "Cannot reach the Spark master spark://127.0.0.1:1"
    )
    assert refused(capsys, *data, "--master", "carrier-pigeon").startswith("Unknown Spark master")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(CommandError, match="Cannot reach the Spark master"):
        call_command(
            "audit_report", "canary", "--data", str(day.export), "--master", "spark://127.0.0.1:1"
        )


def test_an_output_place_that_cannot_be_a_file_is_refused(
    capsys: pytest.CaptureFixture[str], day: Day, tmp_path: Path
) -> None:
    data = ["admin-activity", "--data", str(day.export)]
    assert refused(capsys, *data, "--out", str(tmp_path)) == (
        f"--out {tmp_path} is a directory: a csv report is one file"
    )
    assert refused(capsys, *data, "--format", "json", "--out", "hdfs://nn/x.json") == (
        "--out hdfs://nn/x.json: a json report is written to a local path"
    )


def test_a_bug_keeps_its_traceback_and_still_ends_with_an_error_line(
    capsys: pytest.CaptureFixture[str], day: Day, monkeypatch: Any
) -> None:
    """Python's own errors are not passed off as bad input: exit code 1, the traceback, and the
    `error:` line the API shows."""
    from audit.spark import job

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(job, "report_build", broken)
    assert main(["admin-activity", "--data", str(day.export)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.splitlines()[-1] == "error: the report failed unexpectedly: RuntimeError('a bug')"

"""The reports as files and on the terminal (issue 10, point 3): CSV (one file), Parquet (a
directory), a self-contained HTML page with the inlined Chart.js, JSON (the API's); the
management command, the `python -m` job and the real `spark-submit` script running the same
code and giving the same rows; output written aside and moved into place."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from audit.spark.params import Params, iso
from audit.spark.reader import Export
from audit.spark.render import CHARTJS, html_page, report_write, rows_collect, table_print
from audit.spark.reports import REPORTS, report_build
from tests.audit_workload import SECRET_KEY_VALUE
from tests.spark.conftest import Day

pytestmark = [pytest.mark.spark, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


def command(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("audit_report", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def until(day: Day) -> list[str]:
    """A fixed end, so that rows computed twice are the same rows."""
    return ["--to", str(day.last_ms)]


def expected_rows(name: str, export: Export, day: Day) -> list[dict[str, Any]]:
    return rows_collect(report_build(name, export, Params(to_ms=day.last_ms)))


def as_text(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{k: "" if v is None else str(v) for k, v in row.items()} for row in rows]


def test_csv_is_one_file_with_the_rows_and_progress_on_stderr(
    day: Day, export: Export, tmp_path: Path
) -> None:
    out = tmp_path / "activity.csv"
    data = ["--data", str(day.export)]
    _, progress = command(
        "admin-activity", *data, *until(day), "--format", "csv", "--out", str(out)
    )
    assert list(tmp_path.iterdir()) == [out] and out.is_file()  # nothing left aside
    with out.open() as handle:
        rows = list(csv.DictReader(handle))
    assert rows == as_text(expected_rows("admin-activity", export, day))
    assert "reading 2 committed file(s)" in progress
    assert "computing admin-activity" in progress and f"writing csv to {out}" in progress


def test_parquet_is_a_directory_spark_and_arrow_read(
    day: Day, export: Export, spark: Any, tmp_path: Path
) -> None:
    out = tmp_path / "health"
    command("replica-health", "--data", str(day.export), *until(day), "--format", "parquet",
            "--out", str(out))  # fmt: skip
    assert out.is_dir() and list(tmp_path.iterdir()) == [out]
    want = expected_rows("replica-health", export, day)
    table = pq.read_table(out)
    assert table.column_names == list(REPORTS["replica-health"].columns)
    assert sorted(table.to_pylist(), key=str) == sorted(want, key=str)
    assert spark.read.parquet(f"file://{out}").count() == len(want)
    # A Hadoop URI: written aside and renamed through Hadoop's FileSystem.
    uri = f"file://{tmp_path}/by-uri"
    command("replica-health", "--data", str(day.export), *until(day), "--format", "parquet",
            "--out", uri)  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["by-uri", "health"]
    assert sorted(pq.read_table(tmp_path / "by-uri").to_pylist(), key=str) == sorted(want, key=str)


def test_html_is_a_self_contained_page_with_the_rows_and_charts(
    day: Day, export: Export, tmp_path: Path
) -> None:
    out = tmp_path / "denied.html"  # the format follows the name
    command("denied-requests", "--data", str(day.export), *until(day), "--out", str(out))
    page = out.read_text()
    assert "<title>Requests denied by authorization</title>" in page
    assert f"<dd>{iso(day.last_ms)}</dd>" in page  # the parameters
    assert CHARTJS.read_text() in page  # Chart.js inlined, whole
    assert not re.search(r"<script[^>]*\bsrc=", page, re.IGNORECASE)
    assert not re.search(r"""(src|href)=["']?https?://""", page, re.IGNORECASE)
    rows = expected_rows("denied-requests", export, day)
    assert rows
    for row in rows:
        cells = "".join(
            f'<td class="number">{html.escape(str(v))}</td>'
            if isinstance(v, int)
            else f"<td>{html.escape('' if v is None else str(v))}</td>"
            for v in row.values()
        )
        assert f"<tr>{cells}</tr>" in page
    charts = json.loads(re.search(r"const charts = (\[.*\]);", page).group(1))
    assert [c["options"]["plugins"]["title"]["text"] for c in charts] == [
        "Denials by principal",
        "Denials by API",
    ]
    assert charts[0]["data"]["labels"] == ["User:alice"]
    assert charts[0]["data"]["datasets"][0]["data"] == [len(rows)]
    assert page.count("<canvas") == 2


@pytest.mark.parametrize("name", list(REPORTS))
def test_every_report_as_json_and_html(
    name: str, day: Day, export: Export, spark: Any, tmp_path: Path
) -> None:
    params = Params(to_ms=day.last_ms)
    report = REPORTS[name]
    rows = rows_collect(report_build(name, export, params))
    assert rows, name  # the day has something for every report
    out = tmp_path / f"{name}.json"
    frame = report_build(name, export, params)
    written = report_write(
        frame, report=report, params=params, fmt="json", out=str(out), source="x", spark=spark
    )
    assert json.loads(out.read_text()) == rows and written == len(rows)
    page = html_page(report=report, params=params, columns=report.columns, rows=rows, source="x")
    charts = json.loads(re.search(r"const charts = (\[.*\]);", page).group(1))
    assert charts and all(
        len(d["data"]) == len(c["data"]["labels"]) for c in charts for d in c["data"]["datasets"]
    )
    for text in (out.read_text(), page):
        assert not [s for s in [SECRET_KEY_VALUE, *day.secrets] if s in text]


def test_without_out_the_rows_are_a_table_with_a_count(day: Day, export: Export) -> None:
    printed, _ = command("broker-lifecycle", "--data", str(day.export), *until(day))
    lines = printed.splitlines()
    assert lines[0].split() == list(REPORTS["broker-lifecycle"].columns)
    assert lines[-1] == "6 rows" and len(lines) == 2 + 6 + 1
    assert lines[2].split()[:2] == ["1", "broker"]
    stream = io.StringIO()
    total = table_print(report_build("admin-activity", export, Params()), stream, limit=3)
    assert stream.getvalue().splitlines()[-1] == f"{total} rows (the first 3 shown)"
    assert len(stream.getvalue().splitlines()) == 2 + 3 + 1


def test_the_command_defaults_to_the_settings_export_path(
    day: Day, export: Export, settings: Any
) -> None:
    settings.CP_AUDIT_EXPORT_PATH = str(day.export)
    printed, _ = command("canary", *until(day))
    assert printed.splitlines()[-1] == "2 rows"
    assert "canary-broker" in printed


def test_a_hadoop_uri_is_read_through_spark(day: Day, export: Export, tmp_path: Path) -> None:
    out = tmp_path / "forwarding.json"
    command("forwarding", "--data", f"file://{day.export}", *until(day), "--out", str(out))
    assert json.loads(out.read_text()) == expected_rows("forwarding", export, day)


def test_output_is_moved_into_place_only_when_complete(day: Day, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(day.export, broken)
    part = next((broken / "metadata_log").rglob("*.parquet"))
    part.write_bytes(b"\0" * part.stat().st_size)  # same size: only Spark can tell
    place = tmp_path / "out"
    place.mkdir()
    previous = place / "lifecycle"
    previous.mkdir()
    (previous / "kept").write_text("the last good report")
    with pytest.raises(CommandError, match="is corrupt"):
        command("broker-lifecycle", "--data", str(broken), "--format", "parquet",
                "--out", str(previous))  # fmt: skip
    assert sorted(p.name for p in place.iterdir()) == ["lifecycle"]  # nothing left aside
    assert [p.name for p in previous.iterdir()] == ["kept"]
    command("broker-lifecycle", "--data", str(day.export), "--format", "parquet",
            "--out", str(previous))  # fmt: skip
    assert sorted(p.name for p in place.iterdir()) == ["lifecycle"]
    assert not (previous / "kept").exists() and pq.read_table(previous).num_rows == 6


def _job_environment() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def test_spark_submit_runs_the_job_file_and_gets_the_same_rows(
    day: Day, export: Export, tmp_path: Path
) -> None:
    out = tmp_path / "canary.json"
    spark_submit = Path(sys.executable).parent / "spark-submit"
    done = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[1]",
            "audit/spark/job.py",
            "canary",
            "--data",
            str(day.export),
            *until(day),
            "--format",
            "json",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        env=_job_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(out.read_text()) == expected_rows("canary", export, day)
    said = done.stdout  # spark-submit's PythonRunner merges the job's stderr into its stdout
    assert "on local[1]" in said  # the master spark-submit was given
    assert "computing canary" in said and "done: 2 rows" in said


def test_python_m_job_refuses_a_corrupt_file_in_one_line(day: Day, tmp_path: Path) -> None:
    """The job as the API runs it: a file Spark cannot read is one `error:` line naming it, exit
    code 2, no Python traceback and no Java stack trace, and no output."""
    broken = tmp_path / "broken"
    shutil.copytree(day.export, broken)
    part = next((broken / "audit_events").rglob("*.parquet"))
    part.write_bytes(b"PAR1" + b"\xff" * (part.stat().st_size - 4))
    out = tmp_path / "activity.json"
    done = subprocess.run(
        [sys.executable, "-m", "audit.spark.job", "admin-activity", "--data", str(broken),
         "--format", "json", "--out", str(out), "--master", "local[1]"],
        cwd=ROOT, env=_job_environment(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"{part.relative_to(broken)} is corrupt" in errors[0]
    assert "Traceback" not in done.stderr and "\tat org.apache" not in done.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["broken"]


def test_an_export_without_audit_events_gives_empty_reports(day: Day, tmp_path: Path) -> None:
    """A cluster whose log has records but whose audit trail is still empty (brokers only)."""
    export = tmp_path / "export"
    shutil.copytree(day.export, export)
    commit = export / "_export/commits/0000000001.json"
    written = json.loads(commit.read_text())
    written["datasets"]["audit_events"].update(rows=0, files=[])
    commit.write_text(json.dumps(written))
    shutil.rmtree(export / "audit_events")
    out = tmp_path / "activity.json"
    command("admin-activity", "--data", str(export), "--out", str(out))
    assert json.loads(out.read_text()) == []
    printed, _ = command("broker-lifecycle", "--data", str(export), *until(day))
    assert printed.splitlines()[-1] == "6 rows"

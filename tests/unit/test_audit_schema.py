"""The export's schema is documented as it is, and its version rules hold."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from audit.spark import schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_schema_is_the_schema() -> None:
    generated = subprocess.run(
        [sys.executable, "-m", "audit.spark.schema"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (ROOT / "docs/audit-export-schema.md").read_text() == generated


def test_a_reader_reads_its_major_version_only() -> None:
    major = schema.SCHEMA_VERSION.split(".")[0]
    assert schema.readable(f"{major}.0") and schema.readable(f"{major}.7")
    assert not schema.readable(f"{int(major) + 1}.0")
    assert not schema.readable("") and not schema.readable("one")


def test_every_dataset_has_its_key_and_the_time_column_spark_reads() -> None:
    for dataset in schema.DATASETS.values():
        names = dataset.names
        assert dataset.key in names and "time" in names and len(set(names)) == len(names)
        ddl = dataset.spark_ddl()
        assert ddl.endswith("`date` STRING") and "`time` TIMESTAMP NOT NULL" in ddl

"""Every metadata record encodes to the log as its data: the msgspec encoder (`Record.to_json`,
straight from the fields) and the hand-written encoders of the hot records give the very JSON
value `to_data` describes, for any values the fields can hold."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import controlplane.controller.mirror_records  # noqa: F401  (its records are Records too)
from controlplane.controller.records import Record


def record_types() -> list[type[Record]]:
    found: list[type[Record]] = []
    pending = list(Record.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return sorted(found, key=lambda cls: cls.__name__)


def vars_of(record: Record) -> list[object]:
    return [getattr(record, field.name) for field in dataclasses.fields(record)]


def test_every_record_type_is_covered() -> None:
    names = {cls.__name__ for cls in record_types()}
    assert {"PartitionRecord", "PartitionChangeRecord", "RegisterBrokerRecord"} <= names
    assert len(names) >= 13


@pytest.mark.parametrize("cls", record_types(), ids=lambda cls: cls.__name__)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_to_json_is_to_data(cls: type[Record], data: st.DataObject) -> None:
    record = data.draw(st.from_type(cls))
    # A quota's value is finite (the quota RPCs refuse NaN and infinities before any record).
    assume(all(math.isfinite(v) for v in vars_of(record) if isinstance(v, float)))
    encoded = record.to_json()
    assert json.loads(encoded) == json.loads(json.dumps(record.to_data()))
    assert "TYPE" not in json.loads(encoded)  # the type travels beside the data, as a column

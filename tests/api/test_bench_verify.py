"""Every benchmark ends with verify_metadata and fails loudly when the log and the tables
disagree (issue 33): bench/verify.py on a real database."""

from __future__ import annotations

from typing import Any

import pytest

from bench.verify import fail_unless_clean, verify_in_process
from brokers.models import Broker
from controlplane.runtime.single_writer import commit_scope

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_clean_log_passes_and_says_so(register: Any) -> None:
    register(1, unfence=True)
    verdict = verify_in_process()
    assert verdict["clean"] and verdict["problems"] == 0
    fail_unless_clean(verdict, "a benchmark")  # nothing raised


def test_tables_that_disagree_with_the_log_fail_the_benchmark(
    register: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    register(1, unfence=True)
    with commit_scope():  # a write behind the controller's back, as a bug would make
        Broker.objects.filter(broker_id=1).update(fenced=True)
    verdict = verify_in_process()
    assert not verdict["clean"]
    assert any("brokers.1.fenced" in line for line in verdict["output"])
    with pytest.raises(SystemExit) as exited:
        fail_unless_clean(verdict, "fanout")
    assert exited.value.code == 3
    assert "fanout: verify_metadata found 1 problem(s)" in capsys.readouterr().err

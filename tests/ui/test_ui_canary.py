"""The canary page and the topic page's canary marks (KIP-1095), through Django's test client.
A real Chromium looks at the same page in tests/browser/test_canary_chromium.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.conftest import Api
from tests.ui.conftest import ui_login

pytestmark = pytest.mark.django_db

CANARY = "canary-broker"


def text(response: Any) -> str:
    return str(response.content.decode())


def create(api: Api, token: str, name: str, partitions: int, rf: int, percent: str) -> dict:
    status, body = api.post(
        "/api/v1/create-topics",
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": rf,
                    "configs": [{"name": "percent.canary.partition", "value": percent}],
                }
            ]
        },
        token=token,
    )
    assert status == 200 and body["topics"][0]["error_code"] == 0, body
    return dict(body["topics"][0])


def cluster(register: Callable[..., int], canary: int = 2) -> None:
    for b in range(4):
        register(b, unfence=True, software_version="1.0")
    for b in range(100, 100 + canary):
        register(b, unfence=True, pod=CANARY, software_version="1.1")


def test_the_canary_page_shows_brokers_by_pod_and_version_and_what_is_not_isolated(
    client, api, tokens, register
):
    cluster(register, canary=2)
    create(api, tokens["admin"], "isolated-one", 4, 2, "50")
    create(api, tokens["admin"], "too-wide", 4, 3, "50")  # RF 3 > 2 canary brokers
    ui_login(client, "admin", tokens["admin"])
    response = client.get("/ui/canary/")
    assert response.status_code == 200
    body = text(response)
    assert 'aria-current="page">Canary</a>' in body
    # Brokers by pod and version, canary first.
    assert body.index('data-pod="canary-broker"') < body.index('data-pod="broker"')
    assert re.search(r'data-pod="canary-broker">.*?data-version="1.1">1.1: 2', body, re.S)
    assert re.search(r'data-pod="broker">.*?data-version="1.0">1.0: 4', body, re.S)
    # The rollout verdict for the canary brokers' version, explained.
    assert 'data-verdict="HOLD"' in body and "still baking" in body
    # Topics: the isolated one, and the one whose canary partitions are not, highlighted, why.
    assert re.search(r'<tr class="" data-topic="isolated-one">.*?all isolated', body, re.S)
    row = re.search(r'<tr class="not-isolated" data-topic="too-wide">(.*?)</tr>', body, re.S)
    assert row is not None
    assert 'data-partition="0"' in row.group(1) and 'data-partition="2"' in row.group(1)
    assert "are not canary brokers" in row.group(1)
    assert 'data-testid="isolation-reason"' in body
    assert "Only 2 unfenced canary broker(s) for a replication factor of up to 3" in body
    assert 'data-testid="canary-not-isolated">2 not isolated' in body


def test_the_rollout_form_answers_for_any_version(client, api, tokens, register):
    cluster(register)
    status, _ = api.post(
        "/api/v1/incremental-alter-configs",
        {
            "resources": [
                {
                    "resource_type": "BROKER",
                    "resource_name": "",
                    "configs": [
                        {"name": "canary.bake.time.ms", "config_operation": "SET", "value": "0"}
                    ],
                }
            ]
        },
        token=tokens["admin"],
    )
    assert status == 200
    ui_login(client, "admin", tokens["admin"])
    assert 'data-verdict="PROCEED"' in text(client.get("/ui/canary/?version=1.1"))
    assert 'data-verdict="NOT_STARTED"' in text(client.get("/ui/canary/?version=9.9"))
    long = text(client.get("/ui/canary/?version=" + "x" * 500))
    assert 'data-verdict="NOT_STARTED"' in long and "x" * 129 not in long


def test_the_topic_page_marks_canary_partitions_and_those_not_isolated(
    client, api, tokens, register
):
    cluster(register, canary=2)
    create(api, tokens["admin"], "mixed", 4, 3, "50")
    create(api, tokens["admin"], "fine", 4, 2, "50")
    ui_login(client, "admin", tokens["admin"])
    body = text(client.get("/ui/topics/mixed/"))
    assert re.search(
        r'id="partition-0" class="partition not-isolated" data-canary="not-isolated"', body
    )
    assert re.search(r'id="partition-1" class="partition"[^>]*data-leader', body)
    assert body.count(">not isolated</a>") == 2
    fine = text(client.get("/ui/topics/fine/"))
    assert 'data-canary="isolated"' in fine and "not isolated</a>" not in fine


def test_the_canary_page_reads_a_fixed_number_of_queries(client, api, tokens, register):
    cluster(register)
    ui_login(client, "admin", tokens["admin"])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/ui/canary/?version=1.1").status_code == 200
        return len(captured.captured_queries)

    create(api, tokens["admin"], "t0", 4, 2, "50")
    few = queries()
    for i in range(1, 8):
        create(api, tokens["admin"], f"t{i}", 8, 3, "25")
    assert queries() == few


def test_the_canary_page_needs_describe_on_the_cluster(client, tokens):
    ui_login(client, "alice", tokens["alice"])
    assert client.get("/ui/canary/").status_code == 403

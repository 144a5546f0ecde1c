"""The fault campaign (devtools/campaign.py): under steady load from the broker simulator and
admin writers, kill -9 the active controller, pause it past its lease, restart Redis and
PostgreSQL (private instances of the campaign's own), kill a web node, hold 50 slow connections.
After each: every acknowledged write in the log exactly once, verify_metadata clean; no broker
fenced by the slow clients; the paused controller wrote nothing once its lease was gone.

Its own marker (`campaign`): `make campaign` runs it, as .ci/run does after `make test`; it writes
bench/results/fault_campaign.json, the figures of README's table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devtools import campaign
from tests.conftest import REQUIRE_SERVICES

pytestmark = [pytest.mark.campaign, pytest.mark.integration]


def test_fault_campaign(tmp_path: Path) -> None:
    missing = [
        what
        for what, there in (
            ("redis-server", campaign.REDIS_SERVER),
            ("initdb", (campaign.PG_BIN / "initdb").exists()),
            ("runuser", shutil.which("runuser")),
        )
        if not there
    ]
    if missing:
        message = f"the campaign needs {', '.join(missing)}"
        if REQUIRE_SERVICES:
            pytest.fail(message)
        pytest.skip(message)
    report = campaign.run(tmp_path)
    path = campaign.write_report(report)
    print(json.dumps(report, indent=2), f"\nwritten to {path}")

    faults = {f["fault"]: f for f in report["faults"]}
    assert list(faults) == [name for name, _ in campaign.FAULTS]
    writes = report["writes"]
    assert writes["acknowledged"] > 0
    assert writes["acknowledged_found_in_log_once"] == writes["acknowledged"]
    assert writes["acknowledged_missing"] == 0 and writes["duplicates"] == 0
    assert report["verify_metadata_after_every_fault"]
    assert report["server_500"] == 0, report["server_5xx"]
    paused = faults["SIGSTOP the active controller past its lease, then SIGCONT"]
    assert paused["extra"]["records_written_after_losing_the_lease"] == 0
    slow = faults["50 slow connections on the public listener for 30 s"]
    assert slow["extra"]["brokers_fenced_during_the_attack"] == 0
    assert slow["extra"]["other_requests"]["errors"] == 0
    for fault in report["faults"]:
        assert fault["recovery_s"] is not None

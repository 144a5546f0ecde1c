"""The fault campaign (devtools/campaign.py): under steady load from the broker simulator and admin
writers, kill -9 the active controller, pause it past its lease, restart Redis and PostgreSQL
(private instances of the campaign's own), kill a web node, kill the Kafka protocol listener under
a stock client's writes (it reconnects, nothing applied twice), hold 50 slow connections, lose two
of three racks' brokers at once, restart every broker as a new incarnation. After each: every
acknowledged write in the log exactly once, verify_metadata clean; no broker fenced by the slow
clients (nor by any fault but the racks' loss and the brokers' restart);
the paused controller wrote nothing once its lease was gone; after the racks' loss every partition
with a surviving ISR member is led by a survivor within the session timeout and the timer's period
(the fencing rule, issue 20), and the preferred leaders return when the racks do; after every
broker restarted as a new incarnation (kill -9 the simulator, start it again), every ISR is whole
and every preferred leader leads again (issue 38). Throughout, history clients on both web nodes
write and read topic configs, ACLs and quotas; the whole history is checked linearizable
(devtools.linearizability), the smallest failing window printed when it is not.

Its own marker (`campaign`): `make campaign` runs it, as .ci/run does after `make test`; it writes
bench/results/fault_campaign.json, the figures of README's table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from devtools import campaign, private_services
from tests.conftest import REQUIRE_SERVICES

pytestmark = [pytest.mark.campaign, pytest.mark.integration]


def test_fault_campaign(tmp_path: Path) -> None:
    missing = [
        what
        for what, there in (
            ("redis-server", private_services.REDIS_SERVER),
            ("initdb", (private_services.PG_BIN / "initdb").exists()),
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
    wire = report["wire_writes"]  # the stock client through serve_kafka, killed once
    assert wire["acknowledged"] > 0 and wire["duplicates"] == 0
    assert wire["acknowledged_found_in_log_once"] == wire["acknowledged"]
    # every NOT_CONTROLLER it got was true: nothing it was told "not applied" had been
    assert wire["outcomes"].get("already_there_at_first_attempt", 0) == 0, wire["outcomes"]
    killed = faults["kill -9 the Kafka protocol listener during admin writes"]
    assert killed["extra"]["wire_writes_resumed_after_s"] < 30
    assert report["server_500"] == 0, report["server_5xx"]
    paused = faults["SIGSTOP the active controller past its lease, then SIGCONT"]
    assert paused["extra"]["records_written_after_losing_the_lease"] == 0
    slow = faults["50 slow connections on the public listener for 30 s"]
    assert slow["extra"]["brokers_fenced_during_the_attack"] == 0
    assert slow["extra"]["other_requests"]["errors"] == 0
    for fault in report["faults"]:
        assert fault["recovery_s"] is not None
    racks = faults["lose two of three racks' brokers at once, then bring them back"]
    lost = racks["extra"]["lost_brokers"]
    assert racks["brokers_fenced"] == len(lost) == 4
    assert racks["extra"]["unfenced_brokers_then"] == campaign.BROKERS - len(lost)
    assert racks["extra"]["partitions_with_a_surviving_isr_member"] == racks["extra"]["partitions"]
    # The session timeout, one timer period, and the polling's and the commit's slack.
    bound_s = campaign.SESSION_TIMEOUT_MS / 1000 + 0.5 + 2.5
    assert racks["extra"]["every_such_partition_led_by_a_survivor_after_s"] <= bound_s
    # Every broker restarted as a new incarnation (issue 38): each is unfenced as its new
    # incarnation, every ISR is whole again and every preferred leader leads again, within the
    # old sessions' lapse, a fencing hold-off at most, a rebalance period and a generous slack.
    restart = faults["restart every broker with a new incarnation (kill -9 the simulator)"]
    restarted = restart["extra"]
    assert restarted["restarted_brokers"] == list(range(campaign.BROKERS))
    assert restarted["under_replicated_then"] == restarted["off_preferred_leader_then"] == 0
    bound_s = campaign.SESSION_TIMEOUT_MS / 1000 + 30 + campaign.LEADER_IMBALANCE_CHECK_S + 10
    assert restarted["preferred_leaders_after_s"] <= bound_s, restarted
    # The old incarnations may be fenced by the timer, or replaced by the new registrations.
    assert restart["brokers_fenced"] <= campaign.BROKERS
    others = [f for f in report["faults"] if f is not racks and f is not restart]
    assert all(f["brokers_fenced"] == 0 for f in others), others
    # Every write and read of the history clients, through every fault: linearizable, or the
    # smallest window that is not, printed.
    checked = report["linearizability"]["check"]
    assert checked["operations_checked"] > 0 and checked["keys"] >= 3
    assert not checked["inconclusive_keys"], checked
    assert checked["linearizable"], checked["smallest_window"]

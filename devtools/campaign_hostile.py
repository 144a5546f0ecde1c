"""The fault campaign's hostile peers (devtools/campaign.py): the anonymous flood as a fault, and
after every fault the check that every live stock broker reads the controller's state.

`anonymous_flood`: for `FLOOD_S` (five of the campaign's sessions), 1,000 connections on every
client listener of the campaign's `serve_kafka` processes announce the largest frame that
listener takes and send nothing (devtools.flood; opened again as the listeners close them):
the campaign's own `serve_kafka` (SASL_PLAINTEXT, the wire writer's) and the one the stock
brokers follow, which serves clients as a deployment's does (PLAINTEXT, ANONYMOUS: 100 MiB -
4 KiB, and the finding's 27 small ones; SASL_PLAINTEXT: up to 512 KiB before authentication)
beside its CONTROLLER listener. Its checks are the campaign's own (no broker fenced, simulated
or real; every acknowledged write in the log once; the producer never stalled for a session),
and the flood reports what it held and what the listeners closed.

`one_image`: the controller's view of every broker and partition (its tables, what the REST API
and the console show) against each live stock broker's own Metadata and `kafka-dump-log` of its
own replica of `__cluster_metadata` (devtools.broker_views), asked until they agree or
`AGREE_WITHIN_S` passed (a difference found while the controller's log moved is no verdict: the
brokers are read seconds after the tables): reported per fault, with one differing topic's
records from both sides when they disagree, and the campaign's test asserts they agreed.
"""

from __future__ import annotations

import base64
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from devtools import broker_views
from devtools.flood import MAX_FRAME, SMALL_SIZES, UNAUTHENTICATED_SIZES, Flood, Target
from devtools.kafka_view import view_of_tables
from devtools.stack import free_port

if TYPE_CHECKING:
    from devtools.campaign import FaultCampaign

FLOOD_CONNECTIONS = 1000
FINDINGS_SMALL = 27
FLOOD_S = 30.0
AGREE_WITHIN_S = 30.0
EVIDENCE_RECORDS = 8  # a differing topic's last records, from each side, in the report
_TOPIC_ID = re.compile(r"partition \('([0-9a-f-]{36})', \d+\)")
_TOPIC_NAME = re.compile(r"partition \('([^']+)', \d+\)")
HOST = "127.0.0.1"


def real_brokers_client_ports() -> dict[str, int]:
    """Client listeners for the stock brokers' `serve_kafka`, on free ports."""
    return {"PLAINTEXT": free_port(), "SASL_PLAINTEXT": free_port()}


def flood_targets(campaign: FaultCampaign) -> list[Target]:
    targets = [Target(HOST, campaign.kafka_port, UNAUTHENTICATED_SIZES, FLOOD_CONNECTIONS)]
    ports = {} if campaign.real is None else campaign.real.client_ports
    if "PLAINTEXT" in ports:
        targets += [
            Target(HOST, ports["PLAINTEXT"], (MAX_FRAME,), FLOOD_CONNECTIONS),
            Target(HOST, ports["PLAINTEXT"], SMALL_SIZES, FINDINGS_SMALL, delay_s=1),
        ]
    if "SASL_PLAINTEXT" in ports:
        targets.append(
            Target(HOST, ports["SASL_PLAINTEXT"], UNAUTHENTICATED_SIZES, FLOOD_CONNECTIONS)
        )
    return targets


def anonymous_flood(campaign: FaultCampaign, seconds: float = FLOOD_S) -> dict[str, Any]:
    """The flood for `seconds`, the brokers' states sampled through the REST API meanwhile."""
    offset = campaign.log_end()
    wire = campaign.wire_writer
    samples, not_unfenced = 0, 0
    with Flood(flood_targets(campaign)) as flood:
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            states = campaign.broker_states() or {}
            samples += 1
            not_unfenced += sum(1 for state in states.values() if state != "UNFENCED")
            time.sleep(0.5)
        ended = time.monotonic()
        held = flood.stop()
    fenced = campaign.fencings_since(offset)
    acknowledged = [] if wire is None else list(wire.acknowledged.values())
    return {
        "flood_s": round(ended - began, 1),
        "listeners": held,
        "broker_state_samples": samples,
        "samples_of_a_broker_not_unfenced": not_unfenced,
        "brokers_fenced_during_the_flood": sum(fenced.values()),
        "wire_writes_acknowledged_during_the_flood": sum(
            1 for at in acknowledged if began <= at <= ended
        ),
    }


def one_image(campaign: FaultCampaign) -> dict[str, Any] | None:
    """Whether every live stock broker reads what the controller's tables say (None: no real
    brokers in this campaign)."""
    if campaign.real is None or not campaign.real.brokers:
        return None
    found = broker_views.agreement(
        lambda: view_of_tables(campaign.stack.sql),
        campaign.real.brokers,
        timeout_s=AGREE_WITHIN_S,
        log_end=lambda: log_end(campaign),
    )
    if not found["agree"]:
        try:
            found["evidence"] = disagreement_evidence(campaign, found["differences"])
        except Exception as error:  # the report matters more than its evidence
            found["evidence"] = repr(error)
    return found


def log_end(campaign: FaultCampaign) -> int:
    """The controller's committed log end (moved in every commit's transaction)."""
    return int(campaign.stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def disagreement_evidence(
    campaign: FaultCampaign, differences: dict[Any, dict[str, list[str]]]
) -> dict[str, Any]:
    """For a disagreement: the log's head, and one differing topic's records as the controller's
    log holds them and as each live broker's replica does (offset, type, what they set), to
    tell a record the controller never committed from a table that missed one."""
    lines = [line for found in differences.values() for ls in found.values() for line in ls]
    topic_id = next((m.group(1) for line in lines if (m := _TOPIC_ID.search(line))), None)
    if topic_id is None:
        names = [m.group(1) for line in lines if (m := _TOPIC_NAME.search(line))]
        rows = (
            campaign.stack.sql("SELECT topic_id FROM cp_topic WHERE name = %s", names[0])
            if names
            else []
        )
        topic_id = str(rows[0][0]) if rows else None
    head = campaign.stack.sql("SELECT last_offset, controller_epoch FROM cp_cluster WHERE id = 1")
    evidence: dict[str, Any] = {"log_head": [list(r) for r in head], "topic_id": topic_id}
    if topic_id is None:
        return evidence
    evidence["controller_log"] = [
        [int(offset), int(epoch), str(kind), broker_id, str(request_id), data]
        for offset, epoch, kind, broker_id, request_id, data in campaign.stack.sql(
            'SELECT "offset", controller_epoch, record_type, broker_id, request_id, data::text'
            " FROM cp_metadata_record"
            " WHERE data->>'topic_id' = %s ORDER BY \"offset\"",
            topic_id,
        )
    ][-EVIDENCE_RECORDS:]
    kafka_id = base64.urlsafe_b64encode(uuid.UUID(topic_id).bytes).rstrip(b"=").decode()
    live = [b for b in campaign.real.brokers if b.running] if campaign.real else []
    try:
        chosen = {b.node_id: broker_views.replica_files(b) for b in live}
        files = [f for snap, segs in chosen.values() for f in (snap, *segs) if f]
        printed = broker_views.dump_log(files)
        evidence["broker_logs"] = {
            node_id: [
                line.strip()
                for f in (snap, *segs)
                if f
                for line in printed.get(f, "").splitlines()
                if kafka_id in line
            ][-EVIDENCE_RECORDS:]
            for node_id, (snap, segs) in chosen.items()
        }
    except (OSError, RuntimeError) as error:
        evidence["broker_logs"] = repr(error)
    return evidence

"""What the fault campaign (devtools/campaign.py) reads back for its report: the acknowledged
writes in the metadata log, the web nodes' 5xx counts, `verify_metadata`, the longest stall a
client lived through, and the report's file."""

from __future__ import annotations

import itertools
import json
import statistics
import urllib.request
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from devtools.stack import ROOT, Http, Stack
from devtools.wire_writers import WireWriter


def server_errors(web_nodes: Iterable[Http]) -> Counter[str]:
    """5xx answers each web node counted (cp_http_requests_total), by status."""
    counted: Counter[str] = Counter()
    for node in web_nodes:
        try:
            with urllib.request.urlopen(f"{node.base}/metrics", timeout=10) as answer:
                text = answer.read().decode()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("cp_http_requests_total{") and 'status="5' in line:
                status = line.split('status="')[1][:3]
                counted[status] += int(float(line.rsplit(" ", 1)[1]))
    return counted


def verify_metadata(stack: Stack) -> tuple[bool, str]:
    done = stack.manage("verify_metadata", check=False, timeout=300)
    return done.returncode == 0, "" if done.returncode == 0 else done.stderr[-2000:]


def writes_in_log(stack: Stack) -> dict[str, int]:
    """How many records each admin writer's request id wrote."""
    rows = stack.sql(
        "SELECT request_id, count(*) FROM cp_metadata_record"
        " WHERE request_id LIKE 'campaign-%%' GROUP BY request_id"
    )
    return {str(r[0]): int(r[1]) for r in rows}


def wire_writes_in_log(stack: Stack, writer: WireWriter | None) -> dict[str, Any]:
    """The Kafka-protocol writer's topics: each acknowledged one created once in the log."""
    assert writer is not None
    rows = stack.sql(
        "SELECT data->>'name', count(*) FROM cp_metadata_record"
        " WHERE record_type = 'TopicRecord' AND data->>'name' LIKE 'wire-campaign-%%'"
        " GROUP BY data->>'name'"
    )
    created = {str(r[0]): int(r[1]) for r in rows}
    acknowledged = set(writer.acknowledged)
    return {
        "acknowledged": len(acknowledged),
        "acknowledged_found_in_log_once": sum(1 for t in acknowledged if created.get(t) == 1),
        "duplicates": sum(1 for count in created.values() if count > 1),
        "outcomes": dict(writer.outcomes),
    }


def longest_stall(acks: list[float], began: float, ended: float) -> float:
    """The longest time without an acknowledged write from the last one before `began` to
    `ended`: what the clients lived through."""
    before = [t for t in acks if t <= began]
    moments = [before[-1] if before else began] + [t for t in acks if began < t <= ended]
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    return round(max(gaps, default=ended - began), 2)


def spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "max": None}
    return {"p50": round(statistics.median(values), 2), "max": round(max(values), 2)}


def write_report(report: dict[str, Any]) -> Path:
    path = ROOT / "bench" / "results" / "fault_campaign.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    return path

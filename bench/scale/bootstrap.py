"""A fresh broker bootstrapping its metadata image: from the latest snapshot and the log after
it (GET /internal/v1/metadata/snapshot, .../snapshots/{end_offset}, then the fetch), and, to
compare, from the whole log alone; each image checked against the controller's state tables."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable
from typing import Any

import httpx
import msgspec

from bench.fanout.common import ACCEPT, METADATA_PATH
from bench.fanout.wire import Answer
from bench.replica_state import log
from bench.scale.common import GOALS, PartitionRow, goal, image_differences
from controlplane.controller.image import MetadataImage
from devtools.stack import Stack, wait_for
from simulator.metadata import LOG_START, MetadataView

SNAPSHOT_PATH = "/internal/v1/metadata/snapshot"
SNAPSHOT_NOT_FOUND = 98
SNAPSHOT_BYTES_SETTING = "metadata.log.max.record.bytes.between.snapshots"


def tables_image(stack: Stack) -> dict[tuple[str, int], PartitionRow]:
    """The controller's partitions as its state tables hold them."""
    rows = stack.sql(
        "SELECT topic_id, partition_index, leader, leader_epoch, partition_epoch, replicas, isr,"
        " offline_replicas FROM cp_partition"
    )
    return {(r[0], r[1]): (r[2], r[3], r[4], tuple(r[5]), tuple(r[6]), tuple(r[7])) for r in rows}


def image_rows(image: MetadataImage) -> dict[tuple[str, int], PartitionRow]:
    return {
        key: (
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            tuple(p.offline_replicas),
        )
        for key, p in image.partitions.items()
    }


def compared(stack: Stack, image: MetadataImage) -> dict[str, Any]:
    head = int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])
    found = image_differences(image_rows(image), tables_image(stack))
    return {"image_offset": image.last_offset, "log_head": head, **found}


def from_log(
    broker_http: httpx.Client, *, after_offset: int = LOG_START, view: MetadataView | None = None
) -> dict[str, Any]:
    """Replay the log from `after_offset` to its head into `view` (a new one: a broker without
    a snapshot), MessagePack + zstd, as many records an answer as the server gives."""
    view = MetadataView(after_offset=after_offset) if view is None else view
    started = time.perf_counter()
    wire_bytes = answers = records = 0
    offset, head = after_offset, None
    while head is None or offset < head:
        params = {"after_offset": offset, "max_records": 100_000}
        with broker_http.stream(
            "GET", METADATA_PATH, params=params, headers=ACCEPT["msgpack"]
        ) as response:
            raw = b"".join(response.iter_raw())
        if response.status_code != 200:
            raise SystemExit(f"metadata fetch: HTTP {response.status_code} {raw[:300]!r}")
        answer = Answer(
            time.monotonic(),
            raw,
            response.headers.get("content-type", "application/json"),
            response.headers.get("content-encoding", ""),
        )
        wire_bytes += len(raw)
        answers += 1
        plain = answer.plain()
        fetched = msgspec.msgpack.decode(plain) if answer.msgpack else msgspec.json.decode(plain)
        if fetched.get("snapshot_id") is not None and not fetched.get("records"):
            return {"snapshot_id": fetched["snapshot_id"], "seconds": None}
        head = int(fetched["last_offset"]) if head is None else head
        batch = fetched.get("records") or []
        if not batch:
            break
        failures = view.apply(batch)
        if failures:
            raise SystemExit(f"{failures} records could not be replayed from the log")
        records += len(batch)
        offset = int(batch[-1]["offset"])
    return {
        "view": view,
        "seconds": round(time.perf_counter() - started, 3),
        "wire_bytes": wire_bytes,
        "answers": answers,
        "records": records,
    }


def snapshot_latest(broker_http: httpx.Client) -> tuple[int, dict[str, Any]]:
    response = broker_http.get(SNAPSHOT_PATH)
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, {"text": response.text[:200]}


def _has_snapshots(status: int, answer: dict[str, Any]) -> bool:
    """The endpoint is served: a snapshot (200) or the contract's SNAPSHOT_NOT_FOUND (404, 98),
    not a 404 for an unknown path."""
    return status == 200 or (status == 404 and answer.get("error_code") == SNAPSHOT_NOT_FOUND)


def snapshot_bytes_setting(admin: httpx.Client, value: str | None) -> dict[str, Any]:
    """Set (or, None, delete) the bytes between snapshots on BROKER "" (Kafka's setting)."""
    operation = "DELETE" if value is None else "SET"
    config = {"name": SNAPSHOT_BYTES_SETTING, "config_operation": operation, "value": value}
    body = {"resources": [{"resource_type": "BROKER", "resource_name": "", "configs": [config]}]}
    answer: dict[str, Any] = admin.post("/api/v1/incremental-alter-configs", json=body).json()
    return answer


def make_snapshot(
    admin: httpx.Client, broker_http: httpx.Client, *, timeout_s: float
) -> dict[str, Any] | None:
    """A new latest snapshot: the bytes between snapshots lowered to 1 so the controller writes
    one at its next commit, then set back (a snapshot a commit would slow the failover down)."""
    before = snapshot_latest(broker_http)[1].get("end_offset", -1)
    codes = [r["error_code"] for r in snapshot_bytes_setting(admin, "1").get("responses", [])]
    log(f"  {SNAPSHOT_BYTES_SETTING}=1 (error codes {codes}); waiting for a snapshot")

    def newer() -> dict[str, Any] | None:
        status, latest = snapshot_latest(broker_http)
        return latest if status == 200 and latest.get("end_offset", -1) > before else None

    try:
        found: dict[str, Any] | None = wait_for(newer, timeout_s, "a new snapshot", every=0.5)
    except AssertionError:
        found = None
    codes = [r["error_code"] for r in snapshot_bytes_setting(admin, None).get("responses", [])]
    log(f"  {SNAPSHOT_BYTES_SETTING} back to its default (error codes {codes})")
    return found


def simulator_bootstrap() -> Callable[..., Any] | None:
    """simulator's `bootstrap_from_snapshot`, where the product has it."""
    try:
        module = importlib.import_module("simulator.snapshot")
    except ImportError:
        return None
    found: Callable[..., Any] | None = getattr(module, "bootstrap_from_snapshot", None)
    return found


def from_snapshot(
    function: Callable[..., Any], *, public: str, internal: str, token: str
) -> dict[str, Any]:
    """The latest snapshot loaded by the simulator's `bootstrap_from_snapshot` (FetchSnapshot in
    pieces, checksum, decode), then the log after it replayed onto its image."""
    from simulator.client import ControllerClient
    from simulator.state import SimulatorCounters

    async def load() -> Any:
        client = ControllerClient(
            public,
            token,
            "bench-scale-bootstrap",
            SimulatorCounters(),
            internal_url=internal,
            request_timeout_s=600,
            max_connections=2,
            trust_env=False,
            transport=None,
        )
        client.open()
        try:
            return await function(client)
        finally:
            await client.close()

    started = time.perf_counter()
    loaded = asyncio.run(load())
    snapshot_s = time.perf_counter() - started
    if loaded is None:
        return {"skipped": "skipped: the server has no snapshot"}
    view = MetadataView(after_offset=loaded.end_offset - 1)
    view.image = loaded.image
    with httpx.Client(
        base_url=internal, headers={"Authorization": f"Bearer {token}"}, timeout=600
    ) as broker_http:
        tail = from_log(broker_http, after_offset=loaded.end_offset - 1, view=view)
    return {
        "view": view,
        "seconds": round(time.perf_counter() - started, 3),
        "bytes": loaded.size_bytes + tail["wire_bytes"],
        "snapshot": {
            "end_offset": loaded.end_offset,
            "seconds": round(snapshot_s, 3),
            "bytes": loaded.size_bytes,
            "records": loaded.record_count,
            "fetches": loaded.fetches,
            "attempts": loaded.attempts,
        },
        "log_after": {k: v for k, v in tail.items() if k != "view"},
    }


def snapshot_breakdown(broker_http: httpx.Client, latest: dict[str, Any]) -> dict[str, Any]:
    """Where a snapshot bootstrap's time goes, measured once more after it in this process:
    fetching the bytes, decoding the records (checksum included), building the image."""
    from controlplane.runtime.snapshot_format import snapshot_decode

    end_offset, size = int(latest["end_offset"]), int(latest["size_bytes"])
    started = time.perf_counter()
    pieces: list[bytes] = []
    position = 0
    while position < size:
        response = broker_http.get(
            f"/internal/v1/metadata/snapshots/{end_offset}",
            params={"position": position, "max_bytes": 8 << 20},
        )
        if response.status_code != 200 or not response.content:
            return {"error": f"HTTP {response.status_code} at {position}"}
        pieces.append(response.content)
        position += len(response.content)
    fetched = time.perf_counter()
    decoded = snapshot_decode(pieces, checksum=str(latest["checksum"]))
    decoded_at = time.perf_counter()
    decoded.image()
    return {
        "fetch_s": round(fetched - started, 3),
        "decode_s": round(decoded_at - fetched, 3),
        "image_s": round(time.perf_counter() - decoded_at, 3),
    }


def bootstrap(
    stack: Stack,
    admin: httpx.Client,
    broker_http: httpx.Client,
    *,
    public: str,
    base: str,
    timeout_s: float,
) -> dict[str, Any]:
    log("  a fresh broker replays the whole log (the baseline)")
    replayed = from_log(broker_http)
    view = replayed.pop("view", None)
    whole_log: dict[str, Any] = dict(replayed)
    if view is not None:
        whole_log["image_vs_tables"] = compared(stack, view.image)
    log(
        f"    {whole_log.get('records')} records in {whole_log.get('seconds')} s, "
        f"{whole_log.get('wire_bytes')} bytes"
    )
    result: dict[str, Any] = {"whole_log": whole_log}
    status, latest = snapshot_latest(broker_http)
    function = simulator_bootstrap()
    if not _has_snapshots(status, latest):
        result["skipped"] = "skipped: no snapshot endpoint"
        result["goals"] = {"bootstrap_s": goal(None, GOALS["bootstrap_s"]) | {"met": None}}
        return result
    snapshot = make_snapshot(admin, broker_http, timeout_s=timeout_s)
    result["snapshot_made"] = snapshot
    if snapshot is None:
        result["skipped"] = "skipped: no snapshot was written"
    elif function is None:
        result["skipped"] = "skipped: no bootstrap_from_snapshot in simulator"
    else:
        log(f"  a fresh broker bootstraps from snapshot {snapshot.get('end_offset')} + the log")
        booted = from_snapshot(function, public=public, internal=base, token=stack.tokens["broker"])
        view = booted.pop("view", None)
        result |= booted
        if view is not None:
            result["image_vs_tables"] = compared(stack, view.image)
        log(f"    {result.get('seconds')} s, {result.get('bytes')} bytes")
        if "seconds" in result:
            result["snapshot_breakdown"] = snapshot_breakdown(broker_http, snapshot)
            log(f"    once more, step by step: {result['snapshot_breakdown']}")
    equal = isinstance(result.get("image_vs_tables"), dict) and result["image_vs_tables"]["equal"]
    result["goals"] = {
        "bootstrap_s": goal(result.get("seconds"), GOALS["bootstrap_s"]),
        "image_equal_to_controller": {"met": equal if "seconds" in result else None},
    }
    return result

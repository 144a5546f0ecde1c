"""Phases 1 and 2: sequential latency and closed-loop throughput, the ways taking turns."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from bench.admin_forwarding.checks import audit_durations, commits_of
from bench.admin_forwarding.common import log, percentile
from bench.admin_forwarding.load_client import LoadClient, Phase
from bench.admin_forwarding.machine import ControllerLog, cpu_snapshot, cpu_spent
from bench.admin_forwarding.ways import Way
from devtools.stack import Stack


@dataclasses.dataclass
class Load:
    """What the load phases need, and the request ids they got acknowledged."""

    stack: Stack
    args: argparse.Namespace
    controller: str
    controller_log: ControllerLog
    client: LoadClient
    all_ways: dict[str, Any]
    audit_start: int
    run_id: str
    acknowledged: list[str] = dataclasses.field(default_factory=list)


async def load_phases(load: Load) -> dict[str, Any]:
    """Warm-up, sequential latency, then closed-loop throughput at each concurrency level."""
    await warm_up(load)
    args = load.args
    log(
        f"sequential latency: {args.sequential} requests per way, one at a time, "
        f"alternating every {args.block}"
    )
    seq = await sequential(
        load.client,
        load.all_ways,
        args.sequential,
        args.block,
        load.stack,
        load.controller,
        load.controller_log,
    )
    for phase in seq.values():
        load.acknowledged.extend(phase.acknowledged_ids)
    throughput = [await throughput_level(load, c) for c in args.concurrency]
    return {"sequential": seq, "throughput": throughput}


async def warm_up(load: Load) -> None:
    log("warm-up: 100 sequential requests, then 2 s at concurrency 16, each way")
    for name, way in load.all_ways.items():
        for phase in (
            Phase(name, f"warm-up {name}", 1, "w"),
            Phase(name, f"warm-up {name}", 16, "w"),
        ):
            if phase.concurrency == 1:
                await load.client.run(way, phase, count=100)
            else:
                await load.client.run(way, phase, seconds=2.0)
            load.acknowledged.extend(phase.acknowledged_ids)
            if phase.errors:
                log(f"    warm-up {name} errors: {dict(phase.errors)}")


async def measured(
    stack: Stack,
    controller: str,
    controller_log: ControllerLog,
    phase: Phase,
    load: Coroutine[Any, Any, Phase],
) -> Phase:
    """Run `load` for `phase`, adding the CPU it cost and the controller's event times."""
    before = cpu_snapshot(stack, controller)
    controller_log.mark()
    await load
    for group, ms in cpu_spent(before, cpu_snapshot(stack, controller)).items():
        phase.cpu_ms[group] = phase.cpu_ms.get(group, 0.0) + ms
    await asyncio.sleep(0.3)  # the worker flushes its last log lines
    phase.controller_task_ms.extend(controller_log.task_times_ms())
    return phase


async def sequential(
    client: LoadClient,
    all_ways: dict[str, Way],
    count: int,
    block: int,
    stack: Stack,
    controller: str,
    controller_log: ControllerLog,
) -> dict[str, Phase]:
    """`count` requests per way, one at a time, the ways taking turns every `block` requests
    (so drift on the machine hits both alike). CPU and controller times per way are summed
    over their blocks."""
    phases = {name: Phase(name, f"sequential {name}", 1, "s") for name in all_ways}
    cpu: dict[str, Counter[str]] = {name: Counter() for name in all_ways}
    for index in range(math.ceil(count / block)):
        for name, way in all_ways.items():
            phase = phases[name]
            target = min(count, (index + 1) * block)
            before = cpu_snapshot(stack, controller)
            controller_log.mark()
            await client.run(way, phase, count=target)
            cpu[name].update(cpu_spent(before, cpu_snapshot(stack, controller)))
            await asyncio.sleep(0.05)
            phase.controller_task_ms.extend(controller_log.task_times_ms())
        if (index + 1) % 4 == 0 or (index + 1) * block >= count:
            log(
                "    "
                + ", ".join(
                    f"{n}: {p.acknowledged} acknowledged, p50 "
                    f"{percentile(p.latencies_ms, 50):.2f} ms"
                    for n, p in phases.items()
                )
            )
    for name, phase in phases.items():
        phase.cpu_ms = dict(cpu[name])
    return phases


async def throughput_level(load: Load, concurrency: int) -> dict[str, Any]:
    """One concurrency level: rounds in which the ways take turns; one row of results."""
    args, all_ways = load.args, load.all_ways
    log(
        f"throughput: {concurrency} concurrent clients, {args.rounds} rounds of "
        f"{args.seconds:g} s per way, the ways taking turns"
    )
    phases = {
        name: Phase(name, f"c={concurrency} {name}", concurrency, f"t{concurrency}")
        for name in all_ways
    }
    for round_ in range(args.rounds):
        order = list(all_ways) if round_ % 2 == 0 else list(reversed(all_ways))
        for name in order:
            phase = phases[name]
            await measured(
                load.stack,
                load.controller,
                load.controller_log,
                phase,
                load.client.run(all_ways[name], phase, seconds=args.seconds, report=True),
            )
            await asyncio.sleep(0.3)
    row: dict[str, Any] = {"concurrency": concurrency}
    for name, phase in phases.items():
        load.acknowledged.extend(phase.acknowledged_ids)
        row[name] = phase.summary()
        row[name]["server_view_duration_ms"] = audit_durations(
            load.stack, load.audit_start, load.run_id, phase.tag
        )[name]
        row[name]["group_commit"] = commits_of(load.stack, phase.acknowledged_ids)
        log(
            f"  {name} c={concurrency}: {phase.writes_per_s:.0f} writes/s, "
            f"p50 {percentile(phase.latencies_ms, 50):.1f} ms, "
            f"p99 {percentile(phase.latencies_ms, 99):.1f} ms, "
            f"{sum(phase.errors.values())} errors, "
            f"{row[name]['group_commit'].get('events_per_commit_mean')} events/commit"
        )
    return row

"""Benchmark: the linearizability checker (devtools.linearizability) on simulated histories.

Clients call a real sequential object (registers or sets, one per key); each call takes effect at
a random instant inside its interval (an unknown one maybe never), so every history is
linearizable; a corrupted copy (one stale read) measures finding the smallest window. Writes
JSON to bench/results/linearizability.json and prints it.

    python -m bench.linearizability [--operations 5000] [--keys 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import random
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from devtools.linearizability import (
    FAILED,
    OK,
    UNKNOWN,
    Model,
    Operation,
    check,
    register,
    set_model,
)

RESULTS = Path(__file__).resolve().parent / "results"
ELEMENTS = tuple(f"User:bench-{n}" for n in range(6))


def simulate(
    rng: random.Random,
    *,
    kind: str,
    operations: int,
    keys: int,
    clients: int,
    unknown: float = 0.01,
    failed: float = 0.01,
) -> list[Operation]:
    """`operations` calls by `clients` clients (each one call at a time, 5-50 ms each, a little
    think time between), spread over `keys` keys."""
    values = itertools.count(1)
    clock = [rng.random() * 0.01 for _ in range(clients)]
    planned: list[tuple[float, Operation]] = []
    for _ in range(operations):
        client = min(range(clients), key=lambda c: clock[c])  # the next one free
        invoked = clock[client] + rng.random() * 0.005
        completed = invoked + 0.005 + rng.random() * 0.045
        clock[client] = completed
        outcome = rng.choices(
            (OK, UNKNOWN, FAILED), weights=(1 - unknown - failed, unknown, failed)
        )
        if kind == "register":
            name = rng.choice(("write", "read"))
            value: Hashable = next(values) if name == "write" else None
        else:
            name = rng.choice(("add", "remove", "read"))
            value = rng.choice(ELEMENTS) if name != "read" else None
        op = Operation(
            str(client), f"key-{rng.randrange(keys)}", name, value, None, invoked, completed
        )
        op = dataclasses.replace(op, outcome=outcome[0])
        effect = op.outcome == OK or (op.outcome == UNKNOWN and rng.random() < 0.5)
        planned.append((invoked + rng.random() * (completed - invoked) if effect else math.inf, op))
    return _run_object(planned, kind)


def _run_object(planned: list[tuple[float, Operation]], kind: str) -> list[Operation]:
    """Apply the calls in the order of their instants; reads answer what the object holds."""
    registers: dict[str, Hashable] = {}
    sets: dict[str, frozenset[Hashable]] = {}
    history: list[Operation] = []
    for instant, op in sorted(planned, key=lambda p: p[0]):
        if math.isinf(instant):
            history.append(op)
            continue
        elements = sets.get(op.key, frozenset())
        if op.kind == "read":
            seen = registers.get(op.key) if kind == "register" else elements
            op = dataclasses.replace(op, output=seen)
        elif op.kind == "write":
            registers[op.key] = op.input
        elif op.kind == "add":
            sets[op.key] = elements | {op.input}
        else:
            sets[op.key] = elements - {op.input}
        history.append(op)
    return history


def with_stale_read(history: list[Operation], kind: str) -> list[Operation]:
    """The history and, after it, a newer write of one key and a read of the older value (for
    a set: an element added, removed, then read)."""
    last = max(op.completed for op in history if op.outcome == OK)
    key = history[0].key
    older, newer = ("write", "older"), ("write", "newer")
    seen: Hashable = "older"
    if kind == "set":
        older, newer, seen = ("add", "fresh"), ("remove", "fresh"), frozenset({"fresh"})
    return [
        *history,
        Operation("bench", key, older[0], older[1], None, last + 0.01, last + 0.02),
        Operation("bench", key, newer[0], newer[1], None, last + 0.03, last + 0.04),
        Operation("bench", key, "read", None, seen, last + 0.05, last + 0.06),
    ]


def timed(history: list[Operation], model: Model, repeat: int = 3) -> dict[str, Any]:
    """The check's figures, timed at its best of `repeat` runs (the machine is shared)."""
    seconds = math.inf
    for _ in range(repeat):
        began = time.perf_counter()
        result = check(history, model)
        seconds = min(seconds, time.perf_counter() - began)
    _, longest = result.longest_history
    return {
        "linearizable": result.linearizable,
        "operations_checked": result.operations_checked,
        "longest_history": longest,
        "seconds": round(seconds, 4),
        "operations_per_s": round(result.operations_checked / seconds),
        "window_operations": None if result.window is None else len(result.window.operations),
        "inconclusive_keys": len(result.inconclusive),
    }


def run(operations: int, keys: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    scenarios: dict[str, Any] = {}
    for kind, model in (("register", register()), ("set", set_model())):
        for clients in (3, 6):
            history = simulate(rng, kind=kind, operations=operations, keys=keys, clients=clients)
            name = f"{kind}s: {operations} ops, {keys} keys, {clients} clients"
            scenarios[name] = timed(history, model)
            scenarios[name + ", one stale read"] = timed(with_stale_read(history, kind), model)
        history = simulate(rng, kind=kind, operations=operations, keys=1, clients=6)
        scenarios[f"{kind}: {operations} ops on one key, 6 clients"] = timed(history, model)
    return {
        "benchmark": "linearizability",
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "checker": "Wing & Gong with Lowe's memoization (Porcupine), per key, pure Python",
        "history": "simulated: 1% unknown and 1% failed outcomes, calls of 5-50 ms",
        "seed": seed,
        "scenarios": scenarios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--operations", type=int, default=5000)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    report = run(args.operations, args.keys, args.seed)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "linearizability.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

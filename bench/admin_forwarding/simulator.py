"""Phase 3: the broker simulator's own `forward_admin_request`."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Coroutine
from typing import Any

from bench.admin_forwarding.common import (
    ADMIN_CLIENT_ID,
    CLIENT_HOST,
    latency_summary,
    set_retention,
)


class SimulatorThread:
    """The broker simulator on its own event loop: broker `first_id` forwards through
    `BrokerSimulator.forward_admin_request` (httpx, asyncio), as a simulated broker would."""

    def __init__(self, url: str, internal_url: str, token: str, first_id: int) -> None:
        from simulator import BrokerSimulator

        self.first_id = first_id
        self.sim = BrokerSimulator(
            url,
            token,
            internal_url=internal_url,
            brokers=1,
            first_id=first_id,
            client_id="bench-sim",
            track_partitions=False,
            heartbeat_interval_ms=2000,
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=timeout)

    def run(self, count: int, value_base: int) -> dict[str, Any]:
        self.thread.start()
        try:
            self.call(self.sim.start())
            ready = self.call(
                self.sim.wait_for(lambda s: s.broker(self.first_id).registered, 60), timeout=90
            )
            if not ready:
                raise SystemExit("the simulated broker never registered")
            latencies: list[float] = []
            attempts: Counter[int] = Counter()
            errors: Counter[str] = Counter()
            acknowledged: list[str] = []
            for n in range(count):
                body = set_retention(value_base + n)
                result = self.call(
                    self.sim.forward_admin_request(
                        self.first_id,
                        "IncrementalAlterConfigs",
                        body,
                        "User:admin",
                        client_id=ADMIN_CLIENT_ID,
                        client_host=CLIENT_HOST,
                    )
                )
                attempts[result.attempts] += 1
                if result.ok:
                    latencies.append(result.elapsed_s * 1000)
                    acknowledged.append(result.request_id)
                else:
                    errors[str(result.response_data.get("error") or "inner error")] += 1
            self.call(self.sim.shutdown_all(30), timeout=60)
        finally:
            self.call(self.sim.close())
            self.loop.call_soon_threadsafe(self.loop.stop)
        return {
            "requests": count,
            "acknowledged_writes": len(acknowledged),
            "errors_by_kind": dict(errors),
            "attempts_per_request": {str(k): v for k, v in sorted(attempts.items())},
            "latency": latency_summary(latencies),
            "acknowledged_ids": acknowledged,
            "note": "BrokerSimulator.forward_admin_request, sequential (httpx + asyncio)",
        }

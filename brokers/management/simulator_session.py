"""The `simulate_brokers` command's session: the simulator running, a status line every few
seconds, the commands read from stdin (stop, resume, shutdown, deploy, fail-dir, repair-dir,
forward, status, quit), and the controlled shutdown of every broker at the end."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand

from controlplane.controller.errors import Errors
from simulator import (
    DEFAULT_ADMIN_CLIENT_ID,
    BrokerSimulator,
    BrokerState,
    SimulatorError,
    SimulatorStatus,
)

HELP_TEXT = (
    "commands: stop ID (heartbeats stop; fenced when its session lapses) | resume ID "
    "(unfenced again, its replicas rejoin the ISR) | "
    "shutdown ID (controlled shutdown) | deploy ID VERSION (controlled shutdown, then restart "
    "reporting VERSION) | fail-dir ID [DIR] (a log dir fails: its replicas are "
    "reported offline) | repair-dir ID [DIR] (the leaders take them back into the ISR) | "
    "forward ID API JSON [--as User:NAME] [--client-id C] [--host H] (the broker redirects a "
    "client's admin request to the controller in an Envelope, KIP-590) | status | quit"
)
FORWARD_USAGE = (
    "usage: forward BROKER_ID API JSON_BODY [--as User:NAME] [--client-id ID] [--host ADDR], "
    'e.g. forward 0 IncrementalAlterConfigs {"resources": [{"resource_type": "TOPIC", '
    '"resource_name": "orders", "configs": [{"name": "retention.ms", "config_operation": '
    '"SET", "value": "60000"}]}]} --as User:alice'
)
FORWARD_OPTIONS = {"--as": "principal", "--client-id": "client_id", "--host": "client_host"}
DIR_VERBS = {"fail-dir", "repair-dir"}


class SimulatorSession:
    """One run of the command: the simulator, the status printer and the stdin controls."""

    def __init__(
        self,
        command: BaseCommand,
        simulator: BrokerSimulator,
        options: dict[str, Any],
        *,
        control: bool,
    ) -> None:
        self.command = command
        self.simulator = simulator
        self.options = options
        self.control = control
        self.stop = asyncio.Event()
        self.started = time.monotonic()
        self.signals = 0
        self._last_beats = 0
        self._last_at = self.started

    def say(self, line: str) -> None:
        self.command.stdout.write(line)
        self.command.stdout.flush()

    async def run(self) -> bool:
        """True when every broker was released cleanly. Raises SimulatorError when the server
        could never be reached."""
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal, main)
        sim = self.simulator
        helpers: list[asyncio.Task[None]] = []
        try:
            await sim.start()
            self._last_at = self.started = time.monotonic()
            self.say(self._banner())
            helpers.append(asyncio.create_task(self._print_status()))
            if self.options["topic"]:
                await self._create_topic()
            if self.control:
                helpers.append(asyncio.create_task(self._read_commands()))
                self.say(HELP_TEXT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), self.options["duration"])
            self.say(f"Shutting down {len(sim.broker_ids)} brokers (controlled shutdown)...")
            results = await sim.shutdown_all(self.options["shutdown_timeout"])
            unclean = sorted(i for i, ok in results.items() if not ok)
            self.say(self._status_line(final=True))
            if unclean:
                self.say(f"Not released cleanly: {unclean}")
            return not unclean
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await sim.close()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)

    async def _create_topic(self) -> None:
        """Create --topic once every broker is unfenced (placement needs unfenced brokers), or
        once the connect timeout passed with at least one. Failures are reported, not fatal."""
        sim = self.simulator
        name = self.options["topic"]
        wait_s = max(float(self.options["connect_timeout"]), 5.0)
        everyone = len(sim.broker_ids)
        if not await sim.wait_for(lambda s: s.status().unfenced >= everyone, wait_s):
            self.say(f"Only {sim.status().unfenced} of {everyone} brokers unfenced so far.")
        self.say(f"Creating topic {name}...")
        try:
            answer = await sim.create_topic(
                name, self.options["partitions"], self.options["replication_factor"]
            )
        except SimulatorError as error:
            self.command.stderr.write(f"Topic {name} not created: {error}")
            return
        code = answer.get("error_code")
        if code == Errors.NONE:
            self.say(
                f"Topic {name} created: {answer.get('num_partitions')} partitions, replication "
                f"factor {answer.get('replication_factor')}, id {answer.get('topic_id')}"
            )
        elif code == Errors.TOPIC_ALREADY_EXISTS:
            self.say(f"Topic {name} exists already; using it.")
        else:
            self.command.stderr.write(
                f"Topic {name} not created: {answer.get('error') or code}: "
                f"{answer.get('error_message')}"
            )

    def _on_signal(self, main: asyncio.Task[Any]) -> None:
        self.signals += 1
        if self.signals == 1:
            self.say("Stopping: controlled shutdown of every broker (again to quit at once).")
            self.stop.set()
        else:
            main.cancel()

    def _banner(self) -> str:
        sim = self.simulator
        ids = sim.broker_ids
        canary = sum(1 for s in sim.brokers() if s.pod == "canary-broker")
        return (
            f"Simulating {len(ids)} brokers (ids {ids[0]}..{ids[-1]}, {canary} canary) against "
            f"{sim.internal_url}: cluster {sim.cluster_id}, metadata offset {sim.metadata_offset}, "
            f"heartbeat every {sim.heartbeat_interval_s * 1000:g} ms"
        )

    def _status_line(self, *, final: bool = False) -> str:
        """Counts now; heartbeats/s since the previous line (the final line: over the run)."""
        now = time.monotonic()
        status: SimulatorStatus = self.simulator.status()
        if final:
            rate = status.heartbeats_sent / max(now - self.started, 1e-9)
        else:
            rate = (status.heartbeats_sent - self._last_beats) / max(now - self._last_at, 1e-9)
        self._last_beats, self._last_at = status.heartbeats_sent, now
        controller = (
            f"controller {status.controller_id} epoch {status.controller_epoch}"
            if status.controller_id is not None
            else "no active controller"
        )
        return (
            f"[{now - self.started:7.1f}s] {status.brokers} brokers: "
            f"{status.registered} registered, {status.unfenced} unfenced, "
            f"{status.fenced} fenced, {status.silent} silent, "
            f"{status.shutting_down} shutting down, {status.shut_down} shut down | "
            f"{rate:.1f} heartbeats/s{' on average' if final else ''} "
            f"({status.heartbeats_sent} total), "
            f"{status.errors} errors | metadata offset {status.metadata_offset}, {controller}"
            f" | {status.topics} topics, {status.partitions} partitions, "
            f"{status.offline_replicas} offline replicas, {status.failed_log_dirs} failed log dirs"
            f" | {self.simulator.counters.isr_expansions} replicas taken back into ISRs"
        )

    async def _print_status(self) -> None:
        every = max(0.1, float(self.options["status_every"]))
        while True:
            await asyncio.sleep(every)
            self.say(self._status_line())

    async def _read_commands(self) -> None:
        """Lines from stdin, read by a daemon thread (it never keeps the process alive)."""
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str | None] = asyncio.Queue()

        def reader() -> None:
            for line in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=reader, name="simulator-stdin", daemon=True).start()
        pending: set[asyncio.Task[None]] = set()
        while (line := await lines.get()) is not None:
            words = line.split()
            if words and words[0].lower() in {"quit", "exit", "q"} and pending:
                # Let running commands (a log-dir failure being reported...) finish first.
                self.say(f"Waiting for {len(pending)} running command(s) to finish...")
                await asyncio.wait(set(pending))
            task = self._command(words, line)
            if task is not None:
                pending.add(task)
                task.add_done_callback(pending.discard)

    def _command(self, words: list[str], line: str = "") -> asyncio.Task[None] | None:
        if not words:
            return None
        verb, rest = words[0].lower(), words[1:]
        sim = self.simulator
        if verb in {"quit", "exit", "q"}:
            self.stop.set()
            return None
        if verb == "status":
            self.say(self._status_line())
            for state in sim.brokers():
                self.say(_broker_line(state))
            return None
        if verb in DIR_VERBS and len(rest) in (1, 2):
            return self._dir_command(verb, rest)
        if verb == "forward":
            return self._forward_command(line)
        if verb == "deploy" and len(rest) == 2:
            return self._deploy_command(rest[0], rest[1])
        if verb not in {"stop", "resume", "shutdown"} or len(rest) != 1:
            self.say(HELP_TEXT)
            return None
        try:
            broker_id = int(rest[0])
            sim.broker(broker_id)
        except (ValueError, KeyError):
            self.say(f"No simulated broker {rest[0]!r}; ids are {sim.broker_ids}.")
            return None
        if verb == "stop":
            sim.stop_heartbeats(broker_id)
            self.say(f"broker {broker_id}: heartbeats stopped")
            return None
        if verb == "resume":
            sim.resume(broker_id)
            self.say(f"broker {broker_id}: resumed")
            return None
        self.say(f"broker {broker_id}: controlled shutdown...")
        return asyncio.create_task(self._shutdown(broker_id))

    def _dir_command(self, verb: str, rest: list[str]) -> asyncio.Task[None] | None:
        sim = self.simulator
        try:
            broker_id = int(rest[0])
            dirs = len(sim.broker(broker_id).log_dirs)
        except (ValueError, KeyError):
            self.say(f"No simulated broker {rest[0]!r}; ids are {sim.broker_ids}.")
            return None
        try:
            dir_index = int(rest[1]) if len(rest) > 1 else 0
        except ValueError:
            dir_index = -1
        if not 0 <= dir_index < dirs:
            self.say(f"broker {broker_id} has log dirs 0..{dirs - 1}, not {rest[1]!r}.")
            return None
        return asyncio.create_task(self._dir_operation(verb, broker_id, dir_index))

    async def _dir_operation(self, verb: str, broker_id: int, dir_index: int) -> None:
        sim = self.simulator
        operation = sim.fail_log_dir if verb == "fail-dir" else sim.repair_log_dir
        try:
            result = await operation(
                broker_id, dir_index, timeout_s=self.options["dir_timeout"], progress=self.say
            )
        except Exception as error:  # a bug must not end the session silently
            self.say(f"broker {broker_id}: {verb} {dir_index} failed: {error!r}")
            return
        if result.ok:
            self.say(f"broker {broker_id}: {verb} {dir_index} done")
        else:
            self.say(f"broker {broker_id}: {verb} {dir_index} incomplete: {result.error}")

    def _forward_command(self, line: str) -> asyncio.Task[None] | None:
        """`forward BROKER_ID API JSON_BODY [--as User:NAME] [--client-id ID] [--host ADDR]`."""
        sim = self.simulator
        try:
            broker_id, api, body, options = _parse_forward(line)
        except ValueError as error:
            self.say(f"forward: {error}")
            self.say(FORWARD_USAGE)
            return None
        try:
            sim.broker(broker_id)
        except KeyError:
            self.say(f"No simulated broker {broker_id!r}; ids are {sim.broker_ids}.")
            return None
        return asyncio.create_task(self._forward_operation(broker_id, api, body, options))

    async def _forward_operation(
        self, broker_id: int, api: str, body: dict[str, Any], options: dict[str, str]
    ) -> None:
        try:
            result = await self.simulator.forward_admin_request(
                broker_id,
                api,
                body,
                options.get("principal", "User:alice"),
                client_id=options.get("client_id", DEFAULT_ADMIN_CLIENT_ID),
                client_host=options.get("client_host", "127.0.0.1"),
                timeout_s=self.options["forward_timeout"],
                progress=self.say,
            )
        except ValueError as error:
            self.say(f"broker {broker_id}: forward {api}: {error}")
            return
        except Exception as error:  # a bug must not end the session silently
            self.say(f"broker {broker_id}: forward {api} failed: {error!r}")
            return
        answer = json.dumps(result.response_data, separators=(",", ":"))
        outcome = "done" if result.ok else "answered with errors" if result.delivered else "failed"
        self.say(
            f"broker {broker_id}: forward {result.api} {outcome} "
            f"(HTTP {result.response_status or '-'}): {answer}"
        )

    def _deploy_command(self, broker: str, version: str) -> asyncio.Task[None] | None:
        try:
            broker_id = int(broker)
            self.simulator.broker(broker_id)
        except (ValueError, KeyError):
            self.say(f"No simulated broker {broker!r}; ids are {self.simulator.broker_ids}.")
            return None
        self.say(f"broker {broker_id}: deploying {version} (controlled shutdown, restart)...")
        return asyncio.create_task(self._deploy(broker_id, version))

    async def _deploy(self, broker_id: int, version: str) -> None:
        clean = await self.simulator.deploy(broker_id, version, self.options["shutdown_timeout"])
        self.say(
            f"broker {broker_id}: restarted running {version} "
            f"({'clean' if clean else 'unclean'} shutdown before)"
        )

    async def _shutdown(self, broker_id: int) -> None:
        clean = await self.simulator.shutdown(broker_id, self.options["shutdown_timeout"])
        self.say(f"broker {broker_id}: shut down ({'clean' if clean else 'timed out'})")


def _broker_line(state: BrokerState) -> str:
    fenced = {None: "?", True: "fenced", False: "unfenced"}[state.fenced]
    flags = " silent" if state.silent else ""
    if state.failed_log_dirs:
        flags += " failed-log-dirs=" + ",".join(map(str, state.failed_log_dirs))
    if state.forwarded_requests:
        flags += f" forwarded={state.forwarded_requests}"
    if state.software_version:
        flags += f" version={state.software_version}"
    return (
        f"  broker {state.broker_id:>5} {state.pod:<13} rack={state.rack or '-':<8} "
        f"epoch={state.epoch if state.epoch is not None else '-':<6} {state.phase.value:<27} "
        f"{fenced:<8}{flags} hb={state.heartbeats_sent} errors={state.errors}"
        + (f" last_error={state.last_error}" if state.last_error else "")
    )


def _parse_forward(line: str) -> tuple[int, str, dict[str, Any], dict[str, str]]:
    """`forward BROKER_ID API JSON_BODY [--as User:NAME] [--client-id ID] [--host ADDR]`:
    (broker id, API, body, options by keyword argument name). ValueError when malformed."""
    parts = line.strip().split(None, 3)
    if len(parts) < 4 or parts[0].lower() != "forward":
        raise ValueError("expected a broker id, an API and a JSON body.")
    try:
        broker_id = int(parts[1])
    except ValueError:
        raise ValueError(f"broker id {parts[1]!r} is not a number.") from None
    try:
        body, end = json.JSONDecoder().raw_decode(parts[3])
    except json.JSONDecodeError as error:
        raise ValueError(f"the body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object.")
    words = parts[3][end:].split()
    options: dict[str, str] = {}
    while words:
        flag = words.pop(0)
        if flag not in FORWARD_OPTIONS or not words:
            raise ValueError(f"unexpected {flag!r} after the body.")
        options[FORWARD_OPTIONS[flag]] = words.pop(0)
    return broker_id, parts[2], body, options

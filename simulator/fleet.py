"""`BrokerSimulator`: many simulated brokers in one asyncio process, over HTTP.

It runs `brokers` regular brokers plus `canary` canary brokers (pod `canary-broker`, KIP-1095),
with ids `first_id .. first_id + brokers + canary - 1`: the regular brokers first, then the
canary ones. Racks are `rack-0 .. rack-{R-1}`, assigned round robin over that id order
(`racks=0`: no rack, `null`). The work is done by one part per concern, which this class puts
together and fronts:

* `ControllerClient` (client.py): the HTTP connection pool and what answers mean;
* `MetadataFollower` (follower.py): reads the metadata log into a `MetadataView` (metadata.py),
  the controller's own `MetadataImage` replayed with the core's record decoding;
* `Lifecycle` (lifecycle.py): registration, heartbeats, fencing, controlled shutdown;
* `LogDirs` (logdirs.py): log directories failing and repaired (KIP-589); `create_topic`
  (topics.py) makes the partitions for that;
* `IsrExpander` (isr.py): each partition's leader takes its caught-up followers back into the
  ISR (AlterPartition), whatever took them out: a pause, a restart as a new incarnation, a
  restart of the whole fleet or of the control plane;
* `Forwarder` (forwarding.py): Envelopes (KIP-590);
* `HeartbeatLoad` (load.py): the benchmark mode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

import httpx

from controlplane.controller.brokers.control import DEFAULT_HEARTBEAT_INTERVAL_MS
from simulator.aio import cancel_until_done, wait_until
from simulator.catch_up import DEFAULT_BYTES_PER_S, DEFAULT_PARTITION_BYTES, CatchUp
from simulator.client import CLIENT_ID_PATTERN, ControllerClient
from simulator.follower import MetadataFollower
from simulator.forwarding import (
    DEFAULT_ADMIN_CLIENT_ID,
    DEFAULT_FORWARD_TIMEOUT_S,
    Forwarder,
    ForwardResult,
)
from simulator.isr import DEFAULT_CHECK_INTERVAL_S, IsrExpander
from simulator.lifecycle import Lifecycle, new_brokers
from simulator.load import HeartbeatLoad, LoadResult, heartbeat_bodies, load_senders
from simulator.logdir_requests import LogDirResult
from simulator.logdirs import LogDirs
from simulator.metadata import PartitionView
from simulator.state import (
    BrokerPhase,
    BrokerState,
    LiveBroker,
    SimulatorCounters,
    SimulatorStatus,
    logger,
)
from simulator.topics import create_topic

# How long `wait_in_isr` waits by default for a broker to be back in every ISR it belongs to.
REJOIN_TIMEOUT_S = 60.0


class BrokerSimulator:
    """Runs simulated brokers against a control plane's internal API.

    `internal_url` is the control plane's internal listener (every broker call: registration,
    heartbeats, the metadata fetch, AlterReplicaState, AlterPartition, Envelope); `url` its
    public listener, used only for the admin's CreateTopics (`create_topic`).

    Use as `async with BrokerSimulator(...) as sim:` (start, then close on exit), or call
    `await start()` and `await close()` yourself. All methods must run on one event loop.
    """

    def __init__(
        self,
        url: str,
        token: str,
        *,
        internal_url: str,
        brokers: int = 3,
        canary: int = 0,
        racks: int = 0,
        first_id: int = 0,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
        listener_host: str = "127.0.0.1",
        listener_base_port: int = 9092,
        client_id: str = "broker-simulator",
        request_timeout_s: float = 10.0,
        connect_timeout_s: float = 30.0,
        metadata_wait_ms: int = 10_000,
        metadata_max_records: int = 1000,
        max_connections: int = 100,
        trust_env: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        log_dirs: int = 2,
        admin_token: str | None = None,
        track_partitions: bool = True,
        software_version: str | None = None,
        canary_software_version: str | None = None,
        isr_expansion: bool = True,
        isr_check_interval_s: float = DEFAULT_CHECK_INTERVAL_S,
        partition_bytes: int = DEFAULT_PARTITION_BYTES,
        catch_up_bytes_per_s: float = DEFAULT_BYTES_PER_S,
    ) -> None:
        _check_arguments(
            brokers=brokers,
            canary=canary,
            racks=racks,
            first_id=first_id,
            heartbeat_interval_ms=heartbeat_interval_ms,
            max_connections=max_connections,
            log_dirs=log_dirs,
            client_id=client_id,
        )
        self.url = url.rstrip("/")
        self.internal_url = internal_url.rstrip("/")
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.listener_host = listener_host
        self.listener_base_port = listener_base_port
        self.client_id = client_id
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.metadata_wait_ms = metadata_wait_ms
        self.metadata_max_records = metadata_max_records
        self.max_connections = max_connections
        self.log_dirs_per_broker = log_dirs
        self.track_partitions = track_partitions
        self.counters = SimulatorCounters()
        self._admin_token = admin_token
        self._client = ControllerClient(
            self.url,
            token,
            client_id,
            self.counters,
            internal_url=self.internal_url,
            request_timeout_s=request_timeout_s,
            max_connections=max_connections,
            trust_env=trust_env,
            transport=transport,
        )
        self._follower = MetadataFollower(
            self._client,
            self.counters,
            wait_ms=metadata_wait_ms,
            max_records=metadata_max_records,
            track_partitions=track_partitions,
            on_progress=self._metadata_reached,
        )
        self._lifecycle = Lifecycle(
            new_brokers(
                first_id=first_id,
                brokers=brokers,
                canary=canary,
                racks=racks,
                log_dirs=log_dirs,
                software_version=software_version,
                canary_software_version=canary_software_version,
            ),
            self._client,
            self._follower,
            self.counters,
            heartbeat_interval_s=self.heartbeat_interval_s,
            listener_host=listener_host,
            listener_base_port=listener_base_port,
            on_registered=self._registered,
        )
        self._log_dirs = LogDirs(
            self._lifecycle, self._client, self._follower, self.counters, per_broker=log_dirs
        )
        self._forwarder = Forwarder(self._lifecycle, self._client, self.counters)
        # The leaders' ISR expansion (isr.py); off only for a test that wants ISRs left alone.
        self._isr = IsrExpander(
            self._lifecycle,
            self._client,
            self._follower,
            self.counters,
            dir_of=self._log_dirs.index_of,
            check_interval_s=isr_check_interval_s,
            catch_up=CatchUp(partition_bytes=partition_bytes, bytes_per_s=catch_up_bytes_per_s),
        )
        self.isr_expansion = isr_expansion

    # --- what the follower learnt -----------------------------------------------------------
    @property
    def cluster_id(self) -> str | None:
        return self._follower.cluster_id

    @property
    def controller_id(self) -> int | None:
        return self._follower.controller_id

    @property
    def controller_epoch(self) -> int | None:
        return self._follower.controller_epoch

    @property
    def metadata_offset(self) -> int:
        """How far the follower has read the log."""
        return self._follower.offset

    @property
    def log_end_at_start(self) -> int:
        """The log's end when the simulator first reached the server."""
        return self._follower.log_end_at_start

    @property
    def reachable(self) -> bool:
        return self._client.reachable

    # --- the parts' hooks into each other -----------------------------------------------------
    def _metadata_reached(self, offset: int) -> None:
        self._lifecycle.wake_caught_up(offset)
        self._isr.poke()

    def _registered(self, broker: LiveBroker) -> None:
        self._log_dirs.on_registered(broker)

    # --- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> BrokerSimulator:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Reach the server (retrying for `connect_timeout_s`), learn the cluster id, then start
        the metadata follower and every broker. Raises SimulatorError when the server never
        answered or refused the token."""
        self._client.open()
        try:
            await self._follower.first_contact(self.connect_timeout_s)
        except BaseException:
            await self._client.close()
            raise
        self._follower.start()
        self._lifecycle.start_all()
        if self.isr_expansion:
            self._isr.start()

    async def close(self) -> None:
        """Stop everything at once (no controlled shutdown: call shutdown_all() first for that).
        Brokers still running are marked `clean_shutdown=False`."""
        self._follower.closing = True
        self._isr.closing = True
        tasks = self._lifecycle.tasks()
        for task in (self._follower.task, self._isr.task):
            if task is not None:
                tasks.append(task)
        await cancel_until_done(tasks)
        self._follower.task = None
        self._isr.task = None
        self._lifecycle.mark_stopped()
        await self._client.close()

    # --- controls ---------------------------------------------------------------------------
    def stop_heartbeats(self, broker_id: int) -> None:
        """The broker goes silent (a hung or partitioned broker): no more heartbeats until
        resume(). The controller fences it once its session times out."""
        self._lifecycle.stop_heartbeats(broker_id)

    def resume(self, broker_id: int) -> None:
        """Heartbeat again. A silent broker keeps its registration and epoch, and asks to be
        unfenced again; a broker that was shut down starts again as a new incarnation (a
        restarted broker process), registering afresh. Either way, once the controller unfenced
        it, its leaders take its replicas in working log dirs back into the ISR (isr.py), as
        they do for any broker that (re)joins: `wait_in_isr` waits for that."""
        self._lifecycle.resume(broker_id)

    def in_every_isr(self, broker_id: int) -> bool:
        """Whether the broker is unfenced and in the ISR of every partition it has a replica of
        in a working log dir, as the follower's metadata shows."""
        state = self._lifecycle.get(broker_id).state
        if not state.unfenced:
            return False
        return all(
            broker_id in view.isr
            for view in self._follower.view.partitions(broker_id=broker_id)
            if self._log_dirs.index_of(view.topic, view.partition) not in state.failed_log_dirs
        )

    async def wait_in_isr(self, broker_id: int, timeout_s: float = REJOIN_TIMEOUT_S) -> bool:
        """Wait (within `timeout_s`) until `in_every_isr(broker_id)`; its last value."""
        if not await wait_until(lambda: self.in_every_isr(broker_id), timeout_s, poll_s=0.1):
            logger.warning("broker %d: not back in every ISR after %.0f s", broker_id, timeout_s)
            return False
        return True

    async def shutdown(self, broker_id: int, timeout_s: float | None = 30.0) -> bool:
        """Controlled shutdown: heartbeat with want_shut_down until the controller answers
        should_shut_down, then stop. A silent broker speaks again to do so. Returns True when the
        controller released the broker, False when `timeout_s` passed first (the broker is then
        stopped anyway, as Kafka's broker does when controlled shutdown times out)."""
        return await self._lifecycle.shutdown(broker_id, timeout_s)

    async def deploy(self, broker_id: int, version: str, timeout_s: float | None = 30.0) -> bool:
        """Roll `version` out to one broker (KIP-1095: canary brokers first): a controlled
        shutdown, then a restart as a new incarnation reporting `software_version` = `version`.
        Returns whether the shutdown was clean."""
        return await self._lifecycle.deploy(broker_id, version, timeout_s)

    async def shutdown_all(self, timeout_s: float | None = 30.0) -> dict[int, bool]:
        """Controlled shutdown of every broker at once; broker id -> released cleanly."""
        return await self._lifecycle.shutdown_all(timeout_s)

    # --- state ------------------------------------------------------------------------------
    @property
    def broker_ids(self) -> list[int]:
        return self._lifecycle.ids

    def broker(self, broker_id: int) -> BrokerState:
        """A copy of one broker's state."""
        return self._lifecycle.get(broker_id).state.copy()

    def brokers(self) -> list[BrokerState]:
        return [self.broker(i) for i in self.broker_ids]

    def status(self) -> SimulatorStatus:
        states = [b.state for b in self._lifecycle.brokers.values()]
        view = self._follower.view
        return SimulatorStatus(
            brokers=len(states),
            registered=sum(s.registered for s in states),
            # A silent broker counts as silent only: whether the controller fenced it yet is not
            # something it can know.
            unfenced=sum(s.unfenced and not s.silent for s in states),
            fenced=sum(s.registered and not s.silent and s.fenced is not False for s in states),
            silent=sum(s.registered and s.silent for s in states),
            shutting_down=sum(
                s.phase is BrokerPhase.PENDING_CONTROLLED_SHUTDOWN and not s.shut_down
                for s in states
            ),
            shut_down=sum(s.shut_down for s in states),
            heartbeats_sent=self.counters.heartbeats_sent,
            errors=self.counters.errors,
            metadata_offset=self.metadata_offset,
            controller_id=self.controller_id,
            controller_epoch=self.controller_epoch,
            reachable=self.reachable,
            topics=view.topic_count(),
            partitions=view.partition_count(),
            offline_replicas=view.offline_replica_count(),
            failed_log_dirs=sum(len(s.failed_log_dirs) for s in states),
        )

    async def wait_for(
        self,
        predicate: Callable[[BrokerSimulator], bool],
        timeout_s: float,
        poll_s: float = 0.05,
    ) -> bool:
        """Poll `predicate(self)` until true or `timeout_s` passed; returns its last value."""
        return await wait_until(lambda: predicate(self), timeout_s, poll_s)

    # --- topics, partitions and log directories ---------------------------------------------
    def topics(self) -> dict[str, str]:
        """Topic name -> topic id, as the follower knows them."""
        return self._follower.view.topics()

    def partition(self, topic: str, partition: int) -> PartitionView | None:
        return self._follower.view.partition(topic, partition)

    def partitions(
        self, topic: str | None = None, *, broker_id: int | None = None
    ) -> list[PartitionView]:
        """Partitions (of `topic`; with a replica on `broker_id`), by topic name and index."""
        return self._follower.view.partitions(topic, broker_id=broker_id)

    def log_dir_index(self, topic: str, partition: int) -> int:
        """Which of a broker's log directories holds its replica of a partition."""
        return self._log_dirs.index_of(topic, partition)

    def replicas_in_log_dir(self, broker_id: int, dir_index: int) -> list[PartitionView]:
        """The partitions whose replica on `broker_id` lives in its log dir `dir_index`."""
        return self._log_dirs.replicas_in(broker_id, dir_index)

    async def sync_metadata(self, timeout_s: float = 10.0) -> bool:
        """Wait until the follower has read everything committed when this was called (what a
        broker does before acting on its metadata); False when the server could not be asked
        or the follower did not get there within `timeout_s`."""
        return await self._follower.sync(timeout_s)

    async def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        *,
        admin_token: str | None = None,
        configs: dict[str, str] | None = None,
        timeout_s: float = 60.0,
    ) -> dict[str, Any]:
        """CreateTopics for one topic through the public API, with an admin principal's token
        (`admin_token` here or given to the constructor); -1 takes the server's defaults.
        Retried with the same request id on 503/5xx and connection errors until `timeout_s`.
        Returns the topic's answer (`error_code` 0, or e.g. TOPIC_ALREADY_EXISTS); once created,
        the follower has read it. Raises SimulatorError when the server refuses the request."""
        token = admin_token or self._admin_token
        if not token:
            raise ValueError("create_topic needs an admin token (admin_token=...).")
        return await create_topic(
            self._client,
            self._follower,
            name,
            partitions,
            replication_factor,
            admin_token=token,
            configs=configs,
            timeout_s=timeout_s,
        )

    async def fail_log_dir(
        self,
        broker_id: int,
        dir_index: int = 0,
        *,
        timeout_s: float = 30.0,
        wait_applied: bool = True,
        progress: Callable[[str], None] | None = None,
    ) -> LogDirResult:
        """Log directory `dir_index` of broker `broker_id` fails: the broker reports every
        replica in it offline in one AlterReplicaState (retried until accepted or `timeout_s`)
        and its heartbeats list the directory in `offline_log_dirs`. With `wait_applied`, waits
        (within `timeout_s`) until the metadata shows them offline. `progress` gets status lines.
        """
        return await self._log_dirs.fail(
            broker_id, dir_index, timeout_s=timeout_s, wait_applied=wait_applied, progress=progress
        )

    async def repair_log_dir(
        self,
        broker_id: int,
        dir_index: int = 0,
        *,
        timeout_s: float = 30.0,
        progress: Callable[[str], None] | None = None,
    ) -> LogDirResult:
        """Log directory `dir_index` of broker `broker_id` works again: heartbeats stop listing
        it, and each partition whose replica there is offline or out of the ISR is taken back
        into the ISR by its leader's AlterPartition. Waits (within `timeout_s`) until the
        metadata shows every such replica in the ISR and not offline."""
        return await self._log_dirs.repair(
            broker_id, dir_index, timeout_s=timeout_s, progress=progress
        )

    # --- forwarding (KIP-590) ----------------------------------------------------------------
    async def forward_admin_request(
        self,
        broker_id: int,
        api_name: str | int,
        body: dict[str, Any],
        principal: str = "User:alice",
        *,
        client_id: str = DEFAULT_ADMIN_CLIENT_ID,
        client_host: str = "127.0.0.1",
        token_authenticated: bool = False,
        api_version: int = 0,
        timeout_s: float = DEFAULT_FORWARD_TIMEOUT_S,
        progress: Callable[[str], None] | None = None,
    ) -> ForwardResult:
        """Broker `broker_id` redirects a client's admin request to the controller (KIP-590).

        `api_name` is a forwardable RPC of `controlplane.controller.api_keys.ADMIN_APIS` (its
        name, e.g. "IncrementalAlterConfigs", its path "incremental-alter-configs" or its apiKey
        44); `body` the request as the client sent it to the broker; `principal` the client as
        the broker authenticated it ("User:name"), `client_id` and `client_host` the client's.
        The Envelope goes out with the broker's token and `forwarding_broker_id`;
        NOT_CONTROLLER, other 5xx and connection errors are retried with backoff and the same
        request id until `timeout_s` (a broker still registering is waited for within it too).
        Returns the client's answer (see ForwardResult). Raises ValueError for an unknown or
        non-forwardable RPC, a malformed principal or body, or a broker that is shut down."""
        return await self._forwarder.forward(
            broker_id,
            api_name,
            body,
            principal,
            client_id=client_id,
            client_host=client_host,
            token_authenticated=token_authenticated,
            api_version=api_version,
            timeout_s=timeout_s,
            progress=progress,
        )

    # --- benchmark mode ---------------------------------------------------------------------
    async def run_heartbeat_load(
        self,
        duration_s: float,
        concurrency: int,
        *,
        broker_ids: Iterable[int] | None = None,
    ) -> LoadResult:
        """Back-to-back heartbeats (no interval) for `duration_s` from `concurrency` concurrent
        senders, cycling over the registered brokers that are neither silent nor shutting down
        (or `broker_ids`). The bodies are built once up front, with the follower's offset at the
        start, so they ask for no state change: each is the server's heartbeat fast path. The
        brokers' own heartbeat loops keep running beside the load."""
        if not self._client.is_open:
            raise RuntimeError("Start the simulator first.")
        if concurrency < 1 or duration_s <= 0:
            raise ValueError("concurrency must be >= 1 and duration_s > 0.")
        if concurrency > self.max_connections - 1:  # one connection stays for the follower
            raise ValueError(
                f"concurrency {concurrency} exceeds the pool ({self.max_connections} connections,"
                " one kept for the metadata follower); raise max_connections."
            )
        chosen = self.broker_ids if broker_ids is None else sorted(set(broker_ids))
        states = load_senders([self._lifecycle.get(i).state for i in chosen])
        if not states:
            raise RuntimeError("No registered, heartbeating broker to send load from.")
        bodies = heartbeat_bodies(states, self.metadata_offset)
        return await HeartbeatLoad(self._client, bodies, concurrency, duration_s).run()


def _check_arguments(
    *,
    brokers: int,
    canary: int,
    racks: int,
    first_id: int,
    heartbeat_interval_ms: int,
    max_connections: int,
    log_dirs: int,
    client_id: str,
) -> None:
    if brokers < 0 or canary < 0 or brokers + canary == 0:
        raise ValueError("Need at least one broker (brokers + canary >= 1).")
    if not 1 <= log_dirs <= 64:
        raise ValueError("log_dirs must be 1..64.")
    if racks < 0 or first_id < 0 or heartbeat_interval_ms <= 0 or max_connections < 2:
        raise ValueError(
            "racks and first_id must be >= 0, heartbeat_interval_ms > 0, max_connections >= 2."
        )
    if not CLIENT_ID_PATTERN.match(client_id):
        # It prefixes X-Request-ID, which the server only takes as [A-Za-z0-9._:-]{1,128}.
        raise ValueError(f"client_id {client_id!r}: use 1-64 of letters, digits and . _ : -")

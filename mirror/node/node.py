"""A dedicated MirrorMaker 2 node (KIP-710), as `connect-mirror-maker.sh mm2.properties
--clusters B` runs one, with its configuration held by a control plane.

The node reads the configuration from the control plane at `url` and follows its changes
without restarting (each flow's heartbeat answer carries the configuration's offset; a new one
makes the node read it again). It runs one FlowWorker per flow whose target is among `clusters`
(all flows when none is given), with this node's config providers (its environment, its files),
bounded by its operator's `NodePolicy` whatever the stored text declares.
"""

from __future__ import annotations

import logging
import threading

from controlplane.controller.mirror.config import (
    Flow,
    MirrorConfigError,
    MirrorMakerConfig,
    mirror_config_parse,
)
from mirror.node.clients import CallFailed, ClusterUnreachable, CoordinatorClient, Endpoint
from mirror.node.herder import FlowWorker
from mirror.node.providers import NodePolicy, Providers

logger = logging.getLogger("mirror.node")
say = logging.getLogger("mirror.node.progress")
POLL_S = 5.0  # how often the configuration is read when no heartbeat says it changed


class MirrorNode:
    def __init__(
        self,
        *,
        url: str,
        token: str,
        clusters: list[str] | None = None,
        environ: dict[str, str] | None = None,
        policy: NodePolicy | None = None,
    ) -> None:
        self.endpoint = Endpoint("the configuration's control plane", url, token, "mirror-node")
        self.clusters = set(clusters or [])
        self.environ = environ
        self.policy = policy or NodePolicy()
        self.coordinator = CoordinatorClient(self.endpoint)
        self.workers: dict[Flow, FlowWorker] = {}
        self.config_offset = -1
        self.config: MirrorMakerConfig | None = None
        self._changed = threading.Event()
        self._stop = threading.Event()

    def run(self) -> None:
        """Follow the configuration until `stop()`; then leave every group."""
        say.info(
            "mirror node for %s, serving flows into %s",
            self.endpoint.url,
            ", ".join(sorted(self.clusters)) or "every cluster",
        )
        say.info("what stored texts may make this node read: %s", self.policy.describe())
        try:
            while not self._stop.is_set():
                self.refresh()
                self._changed.wait(POLL_S)
                self._changed.clear()
        finally:
            for worker in self.workers.values():
                worker.stop()
            self.coordinator.close()
            say.info("mirror node stopped")

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()

    def config_offset_seen(self, offset: int) -> None:
        """A flow's heartbeat saw the configuration at `offset`: read it again if it moved."""
        if offset != self.config_offset:
            self._changed.set()

    def refresh(self) -> None:
        try:
            stored = self.coordinator.config()
        except (ClusterUnreachable, CallFailed) as failure:
            logger.warning("cannot read the MirrorMaker configuration: %s", failure)
            return
        if stored is None:
            if self.config_offset != -2:
                say.info("no MirrorMaker configuration is stored yet; waiting for one")
                self.config_offset = -2
            return
        text, offset = stored
        if offset == self.config_offset and not self._missing_workers():
            return
        try:
            config = mirror_config_parse(text)
        except MirrorConfigError as refused:
            logger.error("the stored configuration does not parse here: %s", refused)
            return
        if offset != self.config_offset:
            say.info(
                "configuration at offset %d: flows %s", offset, [f.name for f in config.flows()]
            )
        self.config, self.config_offset = config, offset
        self.apply(config)

    def _wanted(self, config: MirrorMakerConfig) -> list[Flow]:
        return [f for f in config.flows() if not self.clusters or f.target in self.clusters]

    def _missing_workers(self) -> bool:
        return self.config is not None and any(
            flow not in self.workers for flow in self._wanted(self.config)
        )

    def apply(self, config: MirrorMakerConfig) -> None:
        providers = Providers(config.providers, self.environ, self.policy)
        wanted = self._wanted(config)
        for flow in [f for f in self.workers if f not in wanted]:
            say.info("%s: no longer in the configuration; leaving", flow.name)
            self.workers.pop(flow).stop()
        for flow in wanted:
            worker = self.workers.get(flow)
            if worker is not None and providers.resolve(
                config.worker_config(flow)
            ) == worker.providers.resolve(worker.config.worker_config(flow)):
                worker.update_config(config, providers)
                continue
            if worker is not None:  # its REST or group settings changed: a new worker
                say.info("%s: worker settings changed; restarting its worker", flow.name)
                self.workers.pop(flow).stop()
            try:
                worker = FlowWorker(
                    flow=flow,
                    config=config,
                    providers=providers,
                    coordinator=self.endpoint,
                    on_config_offset=self.config_offset_seen,
                )
            except (OSError, ValueError) as failure:  # cannot bind, bad TLS files, bad settings
                logger.error("%s: cannot start its worker: %s", flow.name, failure)
                continue
            self.workers[flow] = worker
            worker.start()

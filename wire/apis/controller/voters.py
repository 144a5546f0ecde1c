"""The controller listener reports where it is to the quorum's voter set (KIP-853).

A broker configured with `controller.quorum.bootstrap.servers` (Kafka 4.x's quick start) knows
no voter: it finds the leader through a Fetch answer, then reaches the active controller for its
registration and heartbeats at the address the log's VotersRecord gives for the leader's id and
its controller listener name. So when a controller listener serves a broker's Fetch and the voter
set does not yet say that the leader is reachable at this listener's name and advertised address,
the listener tells the controller (UpdateRaftVoter, the controller's own event), which writes the
voter set (and kraft.version 1 first, for a log from before voters were kept) in one commit; the
Fetch is answered after it, so its records already carry them.

Remembered per process once the log says it, so a fetch costs a set lookup; a report the
controller could not take (no controller yet) is tried again at most every few seconds."""

from __future__ import annotations

import logging
import threading
import time

from controlplane.models import KRaftQuorum
from controlplane.runtime.conversation import RequestContext
from controlplane.services import controller_call
from wire.apis.base import WireRequest

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 5.0
REPORT_TIMEOUT_MS = 5000
Endpoint = tuple[str, int, str, str, int]  # cluster id, voter id, listener name, host, port

_known: set[Endpoint] = set()
_last_try: dict[Endpoint, float] = {}
_lock = threading.Lock()


def forget() -> None:
    with _lock:
        _known.clear()
        _last_try.clear()


def _in_the_log(endpoint: Endpoint) -> bool:
    _, voter_id, name, host, port = endpoint
    quorum = KRaftQuorum.objects.filter(pk=1).first()
    if quorum is None or not quorum.kraft_version:
        return False
    for voter in quorum.voters:
        if voter["voter_id"] == voter_id:
            return any(
                (e["name"], e["host"], e["port"]) == (name, host, port) for e in voter["endpoints"]
            )
    return False


def ensure_voter_endpoint(request: WireRequest, cluster_id: str, leader_id: int) -> bool:
    """Make sure the voter set names `leader_id` at this listener (see the module); whether it
    wrote the voter set just now."""
    if leader_id < 0 or not request.listener_name:
        return False
    advertised = request.advertised
    endpoint = (cluster_id, leader_id, request.listener_name, advertised.host, advertised.port)
    now = time.monotonic()
    with _lock:
        if endpoint in _known or now - _last_try.get(endpoint, -RETRY_AFTER_S) < RETRY_AFTER_S:
            return False
        _last_try[endpoint] = now
    if _in_the_log(endpoint):
        with _lock:
            _known.add(endpoint)
        return False
    try:
        answer = controller_call(
            api="UpdateRaftVoter",
            payload={
                "voter_id": leader_id,
                "endpoints": [{"name": endpoint[2], "host": endpoint[3], "port": endpoint[4]}],
            },
            context=RequestContext(principal="User:controller", client_id="voter"),
            timeout_ms=REPORT_TIMEOUT_MS,
        )
    except Exception:  # the broker still fetches; the report is tried again later
        logger.warning("could not report the controller listener's endpoint", exc_info=True)
        return False
    if answer.get("error_code"):
        logger.warning("the controller refused the listener's endpoint: %s", answer)
        return False
    logger.info("the quorum's voter %d is at %s://%s:%d", leader_id, *endpoint[2:])
    with _lock:
        _known.add(endpoint)
    return bool(answer.get("changed"))

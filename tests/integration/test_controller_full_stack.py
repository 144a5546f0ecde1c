"""The foundation on real parts: PostgreSQL, Redis, gunicorn and `run_controller` Celery workers.

Covers the broker lifecycle through the controller queue, session-expiry fencing by the active
controller's timer, failover after kill -9 (epoch + 1; at once, not after the lease, since the
killed controller's database session ended with it), a paused old controller that wakes up and
is fenced, and `verify_metadata` after all of it.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from devtools.stack import running_stack
from tests.conftest import need_postgres, need_redis
from tests.integration.conftest import Stack, wait_for

pytestmark = pytest.mark.integration

REG = "/internal/v1/broker-registration"
BEAT = "/internal/v1/broker-heartbeat"


def cluster_id(stack: Stack) -> str:
    assert stack.http is not None
    status, page = stack.http.get("/internal/v1/metadata?wait_ms=0", stack.tokens["broker"])
    assert status == 200
    return str(page["cluster_id"])


def register(stack: Stack, broker_id: int, **extra: Any) -> int:
    assert stack.http is not None
    body = {
        "broker_id": broker_id,
        "cluster_id": cluster_id(stack),
        "incarnation_id": str(uuid.uuid4()),
        "listeners": [
            {"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": "PLAINTEXT"}
        ],
        "rack": "r1",
        "pod": "broker",
        "log_dirs": [str(uuid.uuid4())],
        **extra,
    }
    status, answer = stack.http.post(REG, body, stack.tokens["broker"])
    assert status == 200 and answer["error_code"] == 0, answer
    return int(answer["broker_epoch"])


def beat(stack: Stack, broker_id: int, epoch: int, offset: int, **flags: bool) -> dict[str, Any]:
    assert stack.http is not None
    status, answer = stack.http.post(
        BEAT,
        {"broker_id": broker_id, "broker_epoch": epoch, "current_metadata_offset": offset, **flags},
        stack.tokens["broker"],
    )
    assert status == 200, answer
    return dict(answer)


def beat_until(
    stack: Stack, broker_id: int, epoch: int, offset: int, answer: dict[str, bool], **flags: bool
) -> None:
    """Heartbeats until the answer says `answer`, as a broker does: a heartbeat that changes
    the broker's state may be answered with its committed state while the controller is busy
    (`CP_HEARTBEAT_PATIENCE_MS`), and the next one learns the change."""
    deadline = time.monotonic() + 15
    while True:
        got = beat(stack, broker_id, epoch, offset, **flags)
        if all(got[key] is value for key, value in answer.items()):
            return
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def broker_state(stack: Stack, broker_id: int) -> str:
    assert stack.http is not None
    status, broker = stack.http.get(f"/api/v1/brokers/{broker_id}", stack.tokens["admin"])
    return str(broker["state"]) if status == 200 else f"HTTP {status}"


def log_end(stack: Stack) -> int:
    return int(stack.sql("SELECT last_offset FROM cp_cluster WHERE id = 1")[0][0])


def verify(stack: Stack) -> None:
    result = stack.manage("verify_metadata", check=False)
    assert result.returncode == 0, result.stderr


def test_broker_lifecycle_through_the_controller_queue(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    stack.wait_active("controller-a")
    stack.start_web()
    epochs = {b: register(stack, b) for b in (1, 2, 3)}
    assert all(broker_state(stack, b) == "FENCED" for b in epochs)
    for b, epoch in epochs.items():
        beat_until(stack, b, epoch, log_end(stack), {"is_fenced": False})
    assert [broker_state(stack, b) for b in epochs] == ["UNFENCED"] * 3

    end = log_end(stack)
    for _ in range(10):  # steady heartbeats: no record
        for b, epoch in epochs.items():
            assert beat(stack, b, epoch, end)["is_fenced"] is False
    assert log_end(stack) == end

    # Controlled shutdown of broker 3 (no leaderships yet: shut down at once, fenced).
    beat_until(stack, 3, epochs[3], end, {"should_shut_down": True}, want_shut_down=True)
    assert broker_state(stack, 3) == "FENCED"

    # Broker 2 goes silent; broker 1 keeps heartbeating. The controller's timer fences 2 only.
    deadline = time.monotonic() + 12
    while broker_state(stack, 2) != "FENCED":
        assert time.monotonic() < deadline, "broker 2 was never fenced"
        beat(stack, 1, epochs[1], log_end(stack))
        time.sleep(0.4)
    assert broker_state(stack, 1) == "UNFENCED"
    fence = stack.sql(
        "SELECT principal, data FROM cp_metadata_record WHERE broker_id = 2 "
        'ORDER BY "offset" DESC LIMIT 1'
    )[0]
    assert fence[0] == "User:controller" and fence[1]["fenced"] == 1

    assert stack.http is not None
    status, done = stack.http.post(
        "/api/v1/unregister-broker", {"broker_id": 3}, stack.tokens["admin"]
    )
    assert status == 200 and done["error_code"] == 0
    assert broker_state(stack, 3) == "HTTP 404"
    verify(stack)


def test_failover_after_kill_9_bumps_the_epoch_and_fences_the_old_one(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    first_epoch = stack.wait_active("controller-a")
    stack.start_controller("controller-b", 3001)
    stack.start_web()
    epoch = register(stack, 1)
    beat(stack, 1, epoch, log_end(stack))
    time.sleep(1)
    assert stack.lease()[0] == "controller-a"  # the standby did not take over a live lease

    stack.kill("controller-a", signal.SIGKILL)
    started = time.monotonic()
    second = register(stack, 2)  # waits through the failover, then lands on controller-b
    took = time.monotonic() - started
    holder, new_epoch, controller_id = stack.lease()
    assert (holder, new_epoch, controller_id) == ("controller-b", first_epoch + 1, 3001)
    assert took < 15
    epochs = stack.sql(
        'SELECT controller_epoch FROM cp_metadata_record WHERE "offset" = %s', second
    )
    assert epochs == [(first_epoch + 1,)]

    # A write from the old epoch is refused by the commit path itself.
    refused = stack.manage("shell", "-c", OLD_EPOCH_WRITE.format(epoch=first_epoch), check=False)
    assert "NOT_CONTROLLER" in refused.stdout, refused.stdout + refused.stderr
    assert "fenced" in refused.stdout
    verify(stack)


def test_a_standby_takes_over_from_a_killed_controller_before_its_lease_lapses(
    tmp_path: Path,
) -> None:
    """A minute's lease cannot lapse within the wait below: the standby took over because the
    killed controller's session ended (controlplane.runtime.presence), and says so."""
    need_postgres()
    need_redis()
    with running_stack(tmp_path / "logs", settings={"CP_CONTROLLER_LEASE_MS": "60000"}) as stack:
        stack.start_controller("controller-a", 3000)
        first_epoch = stack.wait_active("controller-a")
        stack.start_controller("controller-b", 3001)
        stack.start_web()
        register(stack, 1)
        standby_log = tmp_path / "logs" / "controller-b.log"
        wait_for(lambda: standby_log.exists(), 30, "the standby's log")
        time.sleep(2)  # the standby has looked for the holder's session many times by now
        assert stack.lease()[0] == "controller-a"  # present: a live lease is never taken

        stack.kill("controller-a", signal.SIGKILL)
        assert stack.wait_active("controller-b", timeout=30) == first_epoch + 1
        said = standby_log.read_text()
        assert f"controller controller-a (epoch {first_epoch}) is gone" in said, said
        register(stack, 2)  # and it commits
        assert stack.lease() == ("controller-b", first_epoch + 1, 3001)
        verify(stack)


OLD_EPOCH_WRITE = """
import uuid
from controlplane.controller.errors import ApiError
from controlplane.controller.image import MetadataDelta
from controlplane.controller.records import RegisterBrokerRecord
from controlplane.runtime.lease import Lease, now_ms
from controlplane.runtime.metadata_log import log_commit
from controlplane.models import Cluster
from controlplane.runtime.projections import load_image
c = Cluster.objects.get(pk=1)
delta = MetadataDelta(load_image(c.cluster_id, c.last_offset))
delta.replay(RegisterBrokerRecord(99, str(uuid.uuid4()), delta.next_offset, (), None, "broker", ()))
try:
    log_commit(lease=Lease("controller-a", 3000, {epoch}, now_ms() + 60000), delta=delta, writes=[])
    print("COMMITTED")
except ApiError as error:
    print(error.error.name, error.message)
"""


def test_a_paused_controller_wakes_up_fenced_and_exits(stack: Stack) -> None:
    stack.start_controller("controller-a", 3000)
    first_epoch = stack.wait_active("controller-a")
    stack.start_controller("controller-b", 3001)
    stack.start_web()
    register(stack, 1)

    stack.kill("controller-a", signal.SIGSTOP)  # a long GC pause, a frozen VM...
    assert stack.wait_active("controller-b") == first_epoch + 1
    epoch_two = register(stack, 2)
    stack.kill("controller-a", signal.SIGCONT)
    paused = stack.procs["controller-a"]
    wait_for(lambda: paused.poll() is not None, 20, "the old controller to resign")
    assert paused.returncode == 3  # it found its lease gone and exited instead of writing
    assert stack.lease()[0] == "controller-b"
    writers = stack.sql(
        'SELECT DISTINCT controller_epoch FROM cp_metadata_record WHERE "offset" >= %s', epoch_two
    )
    assert writers == [(first_epoch + 1,)]
    register(stack, 3)
    verify(stack)

"""Property tests of the controller core: any sequence of broker events keeps its invariants.

Invariants: offsets are gap-free; a broker's epoch is the offset of its registration record;
every observed state change is in the transition table; a heartbeat that changes nothing writes
nothing; replaying the log from offset 0 reproduces the image exactly.
"""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from controlplane.controller.brokers import control as core
from controlplane.controller.dispatch import run_event
from controlplane.controller.env import DEFAULT_SESSION_TIMEOUT_MS, BrokerSession, ControllerEnv
from controlplane.controller.image import MetadataDelta, MetadataImage, replay_log
from controlplane.controller.records import RegisterBrokerRecord, record_from_data

CLUSTER = "prop-cluster"
BROKER_IDS = st.integers(min_value=0, max_value=4)


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.image = MetadataImage(cluster_id=CLUSTER)
        self.log: list[tuple[int, object]] = []
        self.sessions: dict[int, BrokerSession] = {}
        self.incarnations: dict[int, str] = {}
        self.now = 1_000_000
        self.activated = self.now

    def run(self, api: str, payload: dict[str, object]) -> dict[str, object]:
        delta = MetadataDelta(self.image)
        before = {b.broker_id: b for b in self.image.all_brokers()}
        env = ControllerEnv(
            now_ms=self.now, activated_ms=self.activated, sessions=dict(self.sessions)
        )
        response = run_event(delta, api, payload, env)
        for broker_id, after in delta.changed_brokers.items():
            previous = before.get(broker_id)
            if previous is not None and after is not None and previous.epoch == after.epoch:
                # Same registration: its control state may only move along the table.
                core.check_transition(previous.control_state, after.control_state)
        self.log.extend(delta.replayed)
        self.image.apply(delta)
        return response

    @rule(broker_id=BROKER_IDS, new_incarnation=st.booleans())
    def register(self, broker_id: int, new_incarnation: bool) -> None:
        if new_incarnation or broker_id not in self.incarnations:
            self.incarnations[broker_id] = str(uuid.uuid4())
        response = self.run(
            "BrokerRegistration",
            {
                "broker_id": broker_id,
                "cluster_id": CLUSTER,
                "incarnation_id": self.incarnations[broker_id],
                "listeners": [
                    {
                        "name": "PLAINTEXT",
                        "host": "h",
                        "port": 9092,
                        "security_protocol": "PLAINTEXT",
                    }
                ],
                "rack": f"r{broker_id % 2}",
                "pod": "broker",
                "log_dirs": [],
            },
        )
        if response["error_code"] == 0:
            self.sessions[broker_id] = BrokerSession(self.now, -1)

    @rule(
        broker_id=BROKER_IDS,
        right_epoch=st.booleans(),
        lag=st.integers(0, 3),
        want_fence=st.booleans(),
        want_shut_down=st.booleans(),
    )
    def heartbeat(
        self, broker_id: int, right_epoch: bool, lag: int, want_fence: bool, want_shut_down: bool
    ) -> None:
        registered = self.image.broker(broker_id)
        epoch = registered.epoch if registered and right_epoch else 10**9
        offset = max(-1, self.image.last_offset - lag)
        state_before = registered.control_state if registered else None
        offset_before = self.image.last_offset
        response = self.run(
            "BrokerHeartbeat",
            {
                "broker_id": broker_id,
                "broker_epoch": epoch,
                "current_metadata_offset": offset,
                "want_fence": want_fence,
                "want_shut_down": want_shut_down,
            },
        )
        if response["error_code"] != 0:
            assert response["error_code"] == 77  # STALE_BROKER_EPOCH
            assert self.image.last_offset == offset_before
            return
        self.sessions[broker_id] = BrokerSession(self.now, offset)
        after = self.image.broker(broker_id)
        assert after is not None
        if after.control_state == state_before:
            assert self.image.last_offset == offset_before  # no change, no record
        if response["should_shut_down"]:
            assert after.fenced and response["is_fenced"] is True  # Kafka's SHUTDOWN_NOW
        else:
            assert response["is_fenced"] is after.fenced

    @rule(ms=st.integers(0, 2 * DEFAULT_SESSION_TIMEOUT_MS))
    def time_passes_and_stale_brokers_are_fenced(self, ms: int) -> None:
        self.now += ms
        response = self.run("FenceStaleBrokers", {})
        for broker_id in response["fenced_brokers"]:
            fenced = self.image.broker(broker_id)
            assert fenced is not None and fenced.fenced

    @rule(broker_id=BROKER_IDS)
    def unregister(self, broker_id: int) -> None:
        existed = self.image.broker(broker_id) is not None
        response = self.run("UnregisterBroker", {"broker_id": broker_id})
        assert (response["error_code"] == 0) is existed
        assert self.image.broker(broker_id) is None

    @invariant()
    def offsets_are_gap_free(self) -> None:
        assert [offset for offset, _ in self.log] == list(range(len(self.log)))
        assert self.image.last_offset == len(self.log) - 1

    @invariant()
    def broker_epoch_is_the_offset_of_its_registration(self) -> None:
        for broker in self.image.all_brokers():
            offset, record = self.log[broker.epoch]
            assert isinstance(record, RegisterBrokerRecord)
            assert record.broker_id == broker.broker_id and offset == broker.epoch

    @invariant()
    def replaying_the_log_reproduces_the_image(self) -> None:
        records = [record_from_data(r.TYPE, r.to_data()) for _, r in self.log]
        assert replay_log(CLUSTER, records).as_comparable() == self.image.as_comparable()


ControllerMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None
)
TestControllerProperties = ControllerMachine.TestCase

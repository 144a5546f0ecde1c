"""Forwarding (KIP-590): a broker redirects an old client's admin request to the controller.

`forward_admin_request(broker_id, "IncrementalAlterConfigs", body, principal="User:alice")`
wraps the request in an Envelope (`POST /internal/v1/envelope`, the broker's token; apiKeys from
the core's table of admin RPCs, `controlplane.controller.api_keys`) carrying the client's
principal, client id and address and `forwarding_broker_id`, so the controller authorizes and
audits it as that client. NOT_CONTROLLER (503, honouring `Retry-After`), 504, other 5xx and
connection errors are retried with backoff and ONE request id (the controller applies the write
once) until the deadline; then the client gets REQUEST_TIMED_OUT. The answer is the inner
response, as the client would get it; an error of the envelope itself
(CLUSTER_AUTHORIZATION_FAILED: the token lacks CLUSTER_ACTION, INVALID_REQUEST...) means a
misconfigured broker and reaches the client as UNKNOWN_SERVER_ERROR (KIP-590's "EnvelopeResponse
Handling").
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from controlplane.controller.api_keys import ADMIN_APIS, ApiKey
from controlplane.controller.errors import Errors
from simulator.aio import wait_until
from simulator.client import (
    ENVELOPE_PATH,
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    dumps,
    error_name,
    until_answered,
)
from simulator.lifecycle import Lifecycle
from simulator.state import LiveBroker, SimulatorCounters, progress_reporter

# The client id of a forwarded request when none is given: Kafka's AdminClient default.
DEFAULT_ADMIN_CLIENT_ID = "adminclient-1"
# How long a broker keeps retrying a forwarded request: Kafka's request.timeout.ms default.
DEFAULT_FORWARD_TIMEOUT_S = 30.0


@dataclasses.dataclass(slots=True)
class ForwardResult:
    """What `forward_admin_request` did: the client's answer and how it got it.

    `response_data` is what the client gets: the inner RPC's response when the controller
    answered the envelope (`response_status`: the HTTP status of the inner RPC, `delivered`),
    else an error body (`error_code`, `error`, `error_message`): REQUEST_TIMED_OUT when no
    answer came before the deadline, UNKNOWN_SERVER_ERROR when the envelope itself was refused
    (`envelope_error` says why, for the operator). Every attempt carried `request_id`.
    """

    broker_id: int
    api: str  # Kafka's RPC name
    api_key: int
    principal: str  # the client's, as forwarded ("User:alice")
    client_id: str
    client_host: str
    correlation_id: int
    request_id: str = ""
    envelope: dict[str, Any] | None = None  # the Envelope as sent (the same on every attempt)
    delivered: bool = False
    response_status: int | None = None
    response_data: dict[str, Any] = dataclasses.field(default_factory=dict)
    envelope_error: str | None = None
    attempts: int = 0  # HTTP requests sent (every retry counts)
    retried: list[str] = dataclasses.field(default_factory=list)  # why each retry happened
    elapsed_s: float = 0.0

    @property
    def error_code(self) -> int:
        """The answer's top-level error code (0 when it has none: per-resource codes only)."""
        code = self.response_data.get("error_code", 0)
        return code if isinstance(code, int) else int(Errors.UNKNOWN_SERVER_ERROR)

    @property
    def error_codes(self) -> list[int]:
        """Every error code in the answer: the top-level one, then each resource's."""
        codes = [self.error_code] if "error_code" in self.response_data else []
        for value in self.response_data.values():
            if isinstance(value, list):
                codes.extend(
                    int(item["error_code"])
                    for item in value
                    if isinstance(item, dict) and isinstance(item.get("error_code"), int)
                )
        return codes

    @property
    def ok(self) -> bool:
        """Delivered, and every error code in the answer is NONE."""
        return (
            self.delivered
            and self.response_status == 200
            and all(code == Errors.NONE for code in self.error_codes)
        )


@dataclasses.dataclass(slots=True)
class _Trip:
    """One client request on its way to the controller."""

    broker: LiveBroker
    result: ForwardResult
    say: Callable[[str], None]
    timeout_s: float
    started: float = dataclasses.field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        return self.started + self.timeout_s

    def remaining_s(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class Forwarder:
    """The brokers' side of KIP-590."""

    def __init__(
        self, lifecycle: Lifecycle, client: ControllerClient, counters: SimulatorCounters
    ) -> None:
        self.lifecycle = lifecycle
        self.client = client
        self.counters = counters

    async def forward(
        self,
        broker_id: int,
        api_name: str | int,
        body: dict[str, Any],
        principal: str,
        *,
        client_id: str,
        client_host: str,
        token_authenticated: bool,
        api_version: int,
        timeout_s: float,
        progress: Callable[[str], None] | None,
    ) -> ForwardResult:
        """See `BrokerSimulator.forward_admin_request`. ValueError before anything is sent."""
        broker = self.lifecycle.get(broker_id)
        api = admin_api(api_name)
        request_principal = principal_fields(principal, token_authenticated=token_authenticated)
        if not isinstance(body, dict):
            raise ValueError(f"{api.name}: the request body must be a JSON object.")
        state = broker.state
        if state.shut_down:
            raise ValueError(f"broker {broker_id} is shut down: it takes no client requests.")
        say = progress_reporter(progress)
        broker.correlation_seq += 1
        result = ForwardResult(
            broker_id=broker_id,
            api=api.name,
            api_key=api.api_key,
            principal=f"{request_principal['type']}:{request_principal['name']}",
            client_id=client_id,
            client_host=client_host,
            correlation_id=broker.correlation_seq,
        )
        trip = _Trip(broker, result, say, timeout_s)
        return await self._redirect(trip, api, body, request_principal, api_version)

    async def _redirect(
        self,
        trip: _Trip,
        api: ApiKey,
        body: dict[str, Any],
        request_principal: dict[str, Any],
        api_version: int,
    ) -> ForwardResult:
        """Count the request, wait for the broker's registration, wrap the request in its
        Envelope and deliver it."""
        broker, result, say = trip.broker, trip.result, trip.say
        state = broker.state
        broker_id = state.broker_id
        self.counters.forwarded_requests += 1
        state.forwarded_requests += 1
        if not await self._registered(trip):
            return _no_answer(trip, Errors.REQUEST_TIMED_OUT, "the broker never registered")
        result.envelope = envelope_request(
            api,
            body,
            principal=request_principal,
            client_id=result.client_id,
            client_host=result.client_host,
            correlation_id=result.correlation_id,
            api_version=api_version,
            forwarding_broker_id=broker_id,
        )
        # One request id for every attempt: the controller applies the write once.
        result.request_id = self.lifecycle.next_request_id(broker, "fwd")
        say(
            f"broker {broker_id}: forwarding {api.name} (apiKey {api.api_key}) of "
            f"{result.principal} (client {result.client_id or '-'} at "
            f"{result.client_host or '-'}) to the controller in an Envelope, request id "
            f"{result.request_id}"
        )
        return await self._deliver(trip)

    async def _registered(self, trip: _Trip) -> bool:
        """A broker still registering is waited for, within the request's deadline."""
        state = trip.broker.state
        if state.epoch is not None:
            return True
        trip.say(f"broker {state.broker_id}: waiting for its registration before forwarding")
        registered = await wait_until(
            lambda: state.epoch is not None or state.shut_down, trip.remaining_s()
        )
        return registered and state.epoch is not None

    async def _deliver(self, trip: _Trip) -> ForwardResult:
        """Send the Envelope until the controller answers it or the deadline passes."""
        try:
            answer = await self._send(trip)
        except Transient as error:
            return _no_answer(
                trip,
                Errors.REQUEST_TIMED_OUT,
                f"no answer from the controller within {trip.timeout_s:g} s "
                f"({trip.result.attempts} requests; last: {error.kind})",
            )
        except Refused as error:
            self.lifecycle.failed(trip.broker, f"Envelope {error}")
            return _no_answer(trip, Errors.UNKNOWN_SERVER_ERROR, str(error))
        return self._answered(trip, answer)

    async def _send(self, trip: _Trip) -> dict[str, Any]:
        broker, result = trip.broker, trip.result
        broker_id = broker.state.broker_id
        payload = dumps(result.envelope or {})

        async def attempt() -> dict[str, Any]:
            result.attempts += 1
            answer = await self.client.post(
                ENVELOPE_PATH,
                payload,
                result.request_id,
                broker_id,
                timeout_s=max(0.1, trip.deadline - time.monotonic()),
            )
            if answer.get("error_code") == Errors.NOT_CONTROLLER:
                raise Transient("NOT_CONTROLLER")
            return answer

        def count(error: Transient) -> None:
            self.lifecycle.failed(broker, f"Envelope {error.kind}")
            self.counters.retries += 1
            result.retried.append(error.kind)

        def announce(error: Transient, delay: float) -> None:
            trip.say(
                f"broker {broker_id}: Envelope: {error.kind}; retrying in {delay:.1f} s "
                f"with the same request id"
            )

        return await until_answered(
            attempt,
            deadline=trip.deadline,
            backoff=Backoff(initial_s=0.1, max_s=2.0),
            on_transient=count,
            on_retry=announce,
        )

    def _answered(self, trip: _Trip, answer: dict[str, Any]) -> ForwardResult:
        """The controller's answer to the Envelope: the inner response reaches the client; an
        error of the envelope itself reaches it as UNKNOWN_SERVER_ERROR."""
        result = trip.result
        code = answer.get("error_code")
        header = answer.get("response_header") or {}
        data = answer.get("response_data")
        if code != Errors.NONE or not isinstance(data, dict):
            self.lifecycle.failed(trip.broker, f"Envelope {error_name(code)}", answer)
            return _no_answer(
                trip,
                Errors.UNKNOWN_SERVER_ERROR,
                f"{error_name(code)}: {answer.get('error_message')}",
            )
        if header.get("correlation_id") != result.correlation_id:
            return _no_answer(
                trip,
                Errors.UNKNOWN_SERVER_ERROR,
                f"the answer's correlation id {header.get('correlation_id')} is not "
                f"{result.correlation_id}",
            )
        result.delivered = True
        result.response_status = int(answer.get("response_status") or 200)
        result.response_data = data
        result.elapsed_s = time.monotonic() - trip.started
        trip.say(forward_summary(result))
        return result


def _no_answer(trip: _Trip, error: Errors, why: str) -> ForwardResult:
    """The client's answer when the envelope brought none: `error` (REQUEST_TIMED_OUT, or
    UNKNOWN_SERVER_ERROR for an envelope the controller refused)."""
    result = trip.result
    result.envelope_error = why
    result.response_data = {
        "error_code": int(error),
        "error": error.name,
        "error_message": (
            "The request timed out waiting for the controller."
            if error is Errors.REQUEST_TIMED_OUT
            else "The broker could not forward the request to the controller."
        ),
    }
    result.elapsed_s = time.monotonic() - trip.started
    trip.say(forward_summary(result))
    return result


def forwardable_apis() -> dict[str, ApiKey]:
    """The RPCs a broker redirects in an Envelope."""
    return {name: api for name, api in ADMIN_APIS.items() if api.forwardable}


def admin_api(name: str | int) -> ApiKey:
    """A forwardable RPC by its name ("IncrementalAlterConfigs", any case), its API path
    ("incremental-alter-configs") or its apiKey (44 or "44"). ValueError for anything else."""
    wanted = str(name).strip()
    found = next(
        (
            api
            for api in ADMIN_APIS.values()
            if wanted.lower() in (api.name.lower(), api.path) or wanted == str(api.api_key)
        ),
        None,
    )
    if found is not None and found.forwardable:
        return found
    if found is not None:
        raise ValueError(f"{found.name} is not forwarded: a broker answers it itself.")
    forwardable = sorted(forwardable_apis().values(), key=lambda api: api.api_key)
    raise ValueError(
        f"Unknown admin RPC {name!r}; forwardable: "
        + ", ".join(f"{api.name} ({api.api_key})" for api in forwardable)
    )


def principal_fields(principal: str, *, token_authenticated: bool = False) -> dict[str, Any]:
    """The Envelope's `request_principal` for a principal like "User:alice" (Kafka's principal
    serde: type and name). ValueError for another principal type or an empty name."""
    kind, _, name = principal.partition(":")
    if kind != "User" or not name:
        raise ValueError(f"principal {principal!r}: expected User:<name>.")
    fields: dict[str, Any] = {"type": kind, "name": name}
    if token_authenticated:
        fields["token_authenticated"] = True
    return fields


def envelope_request(
    api: ApiKey,
    body: dict[str, Any],
    *,
    principal: dict[str, Any],
    client_id: str,
    client_host: str,
    correlation_id: int,
    api_version: int = 0,
    forwarding_broker_id: int | None = None,
) -> dict[str, Any]:
    """The Envelope (`POST /internal/v1/envelope`) wrapping a client's request, as a broker
    sends it (the benchmark sends the very same body)."""
    envelope: dict[str, Any] = {
        "request_header": {
            "request_api_key": api.api_key,
            "request_api_version": api_version,
            "client_id": client_id,
            "correlation_id": correlation_id,
        },
        "request_data": body,
        "request_principal": principal,
        "client_host_address": client_host,
    }
    if forwarding_broker_id is not None:
        envelope["forwarding_broker_id"] = forwarding_broker_id
    return envelope


def forward_summary(result: ForwardResult) -> str:
    head = f"broker {result.broker_id}: {result.api} of {result.principal}"
    took = f"{result.attempts} request(s), {result.elapsed_s * 1000:.0f} ms"
    if not result.delivered:
        return (
            f"{head}: {result.response_data.get('error')} for the client ({took}; "
            f"{result.envelope_error})"
        )
    return (
        f"{head}: the controller answered HTTP {result.response_status} ({took}, request id "
        f"{result.request_id}): {answer_summary(result.response_data)}"
    )


def answer_summary(data: dict[str, Any], limit: int = 10) -> str:
    """An admin RPC's answer in a line: its top-level error, or each resource's."""
    code = data.get("error_code")
    if isinstance(code, int) and code != Errors.NONE:
        return f"{error_name(code)}: {data.get('error_message')}"
    parts = [
        _resource_summary(key, index, item)
        for key, value in data.items()
        if isinstance(value, list)
        for index, item in enumerate(value)
        if isinstance(item, dict) and "error_code" in item
    ]
    if len(parts) > limit:
        parts = [*parts[:limit], f"... {len(parts) - limit} more"]
    return "; ".join(parts) or error_name(code if code is not None else Errors.NONE)


def _resource_summary(key: str, index: int, item: dict[str, Any]) -> str:
    label = str(item.get("resource_name") or item.get("name") or f"{key}[{index}]")
    if item.get("resource_type"):
        label = f"{item['resource_type']} {label}"
    text = f"{label}: {error_name(item['error_code'])}"
    if item["error_code"] != Errors.NONE and item.get("error_message"):
        text += f" ({item['error_message']})"
    return text

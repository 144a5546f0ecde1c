"""CreateTopics through the public API, with an admin principal's token: the partitions whose
replicas the log-dir commands fail and repair."""

from __future__ import annotations

import time
import uuid
from typing import Any

from controlplane.controller.errors import Errors
from simulator.client import (
    CREATE_TOPICS_PATH,
    Backoff,
    ControllerClient,
    Refused,
    Transient,
    dumps,
    until_answered,
)
from simulator.follower import MetadataFollower
from simulator.state import SimulatorError


async def create_topic(
    client: ControllerClient,
    follower: MetadataFollower,
    name: str,
    partitions: int,
    replication_factor: int,
    *,
    admin_token: str,
    configs: dict[str, str] | None,
    timeout_s: float,
) -> dict[str, Any]:
    """CreateTopics for one topic (-1: the server's default partitions / replication factor),
    retried with the same request id on 503/5xx and connection errors until `timeout_s`.
    Returns the topic's answer (`error_code` 0, or e.g. TOPIC_ALREADY_EXISTS); once created, the
    follower has read it. Raises SimulatorError when the server refuses the request or never
    answers."""
    body = dumps(_create_topics_request(name, partitions, replication_factor, configs or {}))
    # One request id for every retry: the topic is created once.
    request_id = f"{client.client_id}-create-topic-{uuid.uuid4().hex[:12]}"
    deadline = time.monotonic() + timeout_s
    try:
        answer = await until_answered(
            lambda: client.post_as(
                CREATE_TOPICS_PATH,
                body,
                token=admin_token,
                request_id=request_id,
                timeout_s=timeout_s,
            ),
            deadline=deadline,
            backoff=Backoff(initial_s=0.2, max_s=2.0),
        )
    except Transient as error:
        raise SimulatorError(f"CreateTopics {name}: {error.kind}") from None
    except Refused as error:
        raise SimulatorError(f"CreateTopics {name} refused: {error}") from None
    topic: dict[str, Any] = (answer.get("topics") or [{}])[0]
    if topic.get("error_code") == Errors.NONE:
        await follower.sync(max(1.0, deadline - time.monotonic()))
    return topic


def _create_topics_request(
    name: str, partitions: int, replication_factor: int, configs: dict[str, str]
) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ]
    }

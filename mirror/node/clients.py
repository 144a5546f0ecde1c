"""HTTP clients of a mirror node: the control plane that holds the configuration and coordinates
the flows' groups, and each flow's source and target clusters (their control planes' admin API,
the path every tool takes, so the target audits what a flow does as the flow's principal).

Nothing here logs a token or a resolved value; errors name the cluster, the call and the status.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx

TIMEOUT_S = 10.0
PAGE_SIZE = 1000


class ClusterUnreachable(Exception):
    """The control plane did not answer (down, refused, timed out)."""


class CallFailed(Exception):
    """The control plane answered an error."""

    def __init__(self, what: str, status: int, body: Any) -> None:
        message = body.get("error_message") if isinstance(body, dict) else None
        super().__init__(f"{what}: HTTP {status}" + (f" ({message})" if message else ""))
        self.status = status
        self.body = body


@dataclasses.dataclass
class Endpoint:
    """A control plane's base URL, the Bearer token to use and the client id to send."""

    name: str  # how errors and traces name it ("cluster A", "the configuration's control plane")
    url: str
    token: str
    client_id: str


class Http:
    def __init__(self, endpoint: Endpoint, *, timeout_s: float = TIMEOUT_S) -> None:
        self.endpoint = endpoint
        self._client = httpx.Client(
            base_url=endpoint.url.rstrip("/"),
            timeout=timeout_s,
            headers={
                "Authorization": f"Bearer {endpoint.token}",
                "X-Client-ID": endpoint.client_id[:255],
            },
        )

    def close(self) -> None:
        self._client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: dict[str, str] | None = None,
        params: Any = None,
        timeout_s: float | None = None,
    ) -> httpx.Response:
        what = f"{method} {path} on {self.endpoint.name}"
        try:
            return self._client.request(
                method,
                path,
                json=json,
                content=content,
                headers=headers,
                params=params,
                timeout=timeout_s if timeout_s is not None else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.HTTPError as error:
            raise ClusterUnreachable(f"{what}: {type(error).__name__}") from None

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        response = self.request(method, path, json=body, **kwargs)
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code >= 400:
            raise CallFailed(
                f"{method} {path} on {self.endpoint.name}", response.status_code, answer
            )
        return answer


class CoordinatorClient(Http):
    """The control plane that holds the MirrorMaker configuration and the flows' groups."""

    def config(self) -> tuple[str, int] | None:
        response = self.request("GET", "/api/v1/mirror/config")
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise CallFailed("GET the MirrorMaker configuration", response.status_code, None)
        return response.text, int(response.headers.get("X-Mirror-Config-Offset", "-1"))

    def group(self, source: str, target: str, rpc: str, body: dict[str, Any], **kw: Any) -> Any:
        return self.call("POST", f"/api/v1/mirror/groups/{source}/{target}/{rpc}", body, **kw)


class ClusterAdmin(Http):
    """A flow's source or target cluster, through its control plane's admin API."""

    def cluster_id(self) -> str:
        return str(self.call("GET", "/api/v1/cluster").get("cluster_id", ""))

    def topics(self) -> dict[str, int]:
        """Every topic and its partition count (all pages)."""
        found: dict[str, int] = {}
        page = 1
        while True:
            answer = self.call(
                "GET", "/api/v1/topics", params={"page": page, "page_size": PAGE_SIZE}
            )
            for topic in answer["results"]:
                found[str(topic["name"])] = int(topic["partition_count"])
            if not answer.get("next"):
                return found
            page += 1

    def topic_configs(self, topics: list[str]) -> dict[str, list[dict[str, Any]]]:
        if not topics:
            return {}
        body = {
            "resources": [
                {"resource_type": "TOPIC", "resource_name": t, "configuration_keys": None}
                for t in topics
            ]
        }
        answer = self.call("POST", "/api/v1/describe-configs", body)
        return {
            str(r["resource_name"]): list(r["configs"])
            for r in answer["results"]
            if r.get("error_code") == 0
        }

    def topic_acls(self) -> list[dict[str, Any]]:
        """Every ACL on a TOPIC resource, one binding per entry."""
        body = {
            "resource_type": "TOPIC",
            "resource_name": None,
            "pattern_type": "ANY",
            "principal": None,
            "host": None,
            "operation": "ANY",
            "permission_type": "ANY",
        }
        answer = self.call("POST", "/api/v1/describe-acls", body)
        if answer.get("error_code"):
            raise CallFailed("describe-acls", 200, answer)
        return [
            {
                "resource_type": r["resource_type"],
                "resource_name": r["resource_name"],
                "pattern_type": r["pattern_type"],
                **entry,
            }
            for r in answer["resources"]
            for entry in r["acls"]
        ]

    def create_topics(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answer = self.call("POST", "/api/v1/create-topics", {"topics": topics})
        return list(answer["topics"])

    def create_partitions(self, topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answer = self.call("POST", "/api/v1/create-partitions", {"topics": topics})
        return list(answer["results"])

    def alter_topic_configs(self, ops: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        body = {
            "resources": [
                {"resource_type": "TOPIC", "resource_name": topic, "configs": configs}
                for topic, configs in ops.items()
            ]
        }
        answer = self.call("POST", "/api/v1/incremental-alter-configs", body)
        return list(answer["responses"])

    def create_acls(self, creations: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answer = self.call("POST", "/api/v1/create-acls", {"creations": creations})
        return list(answer["results"])

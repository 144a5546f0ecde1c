"""The conformance table: every API a Kafka 4.x controller serves (its message schema's
`listeners` name "controller") or a broker forwards to its controller (Kafka's
ApiKeys.forwardable), read from the jars of the releases installed (the pinned one and the
newest), beside what this control plane serves of it on each door and its REST name.

    python -m devtools.kafka_conformance            # print the table
    python -m devtools.kafka_conformance --write    # write it into docs/reference/kafka-protocol.md
    python -m devtools.kafka_conformance --check    # exit 1 when the page's table is not this one

The message schemas are the `common/message/*Request.json` files inside kafka-clients-*.jar;
whether a broker forwards an API is Kafka's own `ApiKeys.forwardable`, which no schema says,
asked of the release's classes by `devtools/kafka_facts/KafkaFacts.java` (run from the jars,
nothing compiled into them). tests/kafka/test_api_conformance.py fails when an API is neither
served here nor answered as Kafka answers one it does not serve, or when the page's table is
not this one.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stock_kafka import jars

FACTS = Path(__file__).resolve().parent / "kafka_facts" / "KafkaFacts.java"
PAGE = jars.ROOT / "docs" / "reference" / "kafka-protocol.md"
BEGIN = "<!-- conformance table: python -m devtools.kafka_conformance --write -->"
END = "<!-- end of the conformance table -->"
NEWEST = "4.4.0"

# Why an API Kafka's controller serves is not served here (shown while it is not).
NOT_SERVED_BECAUSE = {
    "Vote": "Raft elections between controllers: this quorum's leader is the lease holder",
    "BeginQuorumEpoch": "sent by a Raft leader to other voters",
    "EndQuorumEpoch": "sent by a resigning Raft leader to other voters",
    "ControllerRegistration": "sent by other KRaft controllers",
    "AddRaftVoter": "KIP-853 voter changes: the voter set is the controller's own",
    "RemoveRaftVoter": "KIP-853 voter changes: the voter set is the controller's own",
    "UpdateRaftVoter": "sent by other KRaft controllers (the listener reports its own endpoint)",
    "UnregisterController": "sent for other KRaft controllers",
    "AlterPartitionReassignments": "partition reassignment (KIP-455): pending",
    "ListPartitionReassignments": "partition reassignment (KIP-455): pending",
}


# The internal listener's REST twins of what brokers send the controller (`/internal/v1/...`),
# and the public one's reads that are no admin RPC.
OTHER_REST = {
    "Fetch": "GET /internal/v1/metadata",
    "FetchSnapshot": "GET /internal/v1/metadata/snapshots/<end offset>",
    "BrokerRegistration": "POST /internal/v1/broker-registration",
    "BrokerHeartbeat": "POST /internal/v1/broker-heartbeat",
    "AlterPartition": "POST /internal/v1/alter-partition",
    "Envelope": "POST /internal/v1/envelope",
    "ApiVersions": "GET /api/v1/features",
}


@dataclasses.dataclass(frozen=True)
class KafkaApi:
    """One API as a release's jars declare it."""

    api_key: int
    name: str  # the schema's name less "Request"
    versions: tuple[int, int]
    listeners: frozenset[str]
    forwardable: bool


@functools.cache
def message_specs(version: str) -> dict[int, KafkaApi]:
    """Every request schema of the release's kafka-clients jar, by apiKey (forwardable from
    the release's own ApiKeys)."""
    forwarded = {api["id"] for api in kafka_facts(version)["apis"] if api["forwardable"]}
    found: dict[int, KafkaApi] = {}
    libs = jars.libs_dir(version)
    (clients,) = libs.glob("kafka-clients-*.jar")
    with zipfile.ZipFile(clients) as archive:
        for name in archive.namelist():
            if not re.fullmatch(r"common/message/\w+Request\.json", name):
                continue
            spec = json.loads(_without_comments(archive.read(name).decode()))
            if spec["validVersions"] == "none":  # an API the release no longer has
                continue
            low, _, high = spec["validVersions"].partition("-")
            key = int(spec["apiKey"])
            found[key] = KafkaApi(
                key,
                spec["name"].removesuffix("Request"),
                (int(low), int(high or low)),
                frozenset(spec.get("listeners", ())),
                key in forwarded,
            )
    return found


def _without_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


@functools.cache
def kafka_facts(version: str) -> dict[str, Any]:
    """What the release's own classes say (devtools/kafka_facts/KafkaFacts.java)."""
    command = [
        jars.java_executable(),
        "-Xmx128m",
        "-cp",
        f"{jars.libs_dir(version)}/*",
        str(FACTS),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    facts: dict[str, Any] = json.loads(done.stdout)
    return facts


def controller_apis(versions: Sequence[str]) -> dict[int, dict[str, KafkaApi]]:
    """The APIs a Kafka controller serves or a broker forwards to it, in any of `versions`:
    apiKey -> release -> the API as that release declares it."""
    table: dict[int, dict[str, KafkaApi]] = {}
    for version in versions:
        for key, api in message_specs(version).items():
            if "controller" in api.listeners or api.forwardable:
                table.setdefault(key, {})[version] = api
    return table


@dataclasses.dataclass(frozen=True)
class Row:
    api_key: int
    name: str
    kafka_versions: dict[str, tuple[int, int]]
    forwardable: bool
    client_door: tuple[int, int] | None
    controller_door: tuple[int, int] | None
    rest_path: str | None

    @property
    def served(self) -> bool:
        return self.client_door is not None or self.controller_door is not None


def served_on(role: str) -> dict[int, tuple[int, int]]:
    """What ApiVersions advertises on a listener of `role` (needs Django: the wire's APIs)."""
    from wire.apis import load_all
    from wire.server import WireServer

    load_all()
    return WireServer.served(role)


def rows(versions: Sequence[str]) -> list[Row]:
    from controlplane.controller.api_keys import ADMIN_APIS_BY_KEY
    from wire.listeners import CLIENT, CONTROLLER

    client, controller = served_on(CLIENT), served_on(CONTROLLER)
    out = []
    for key, by_release in sorted(controller_apis(versions).items()):
        newest = by_release[max(by_release, key=jars.version_tuple)]
        rest = ADMIN_APIS_BY_KEY.get(key)
        out.append(
            Row(
                key,
                newest.name,
                {release: api.versions for release, api in by_release.items()},
                any(api.forwardable for api in by_release.values()),
                client.get(key),
                controller.get(key),
                f"POST /api/v1/{rest.path}" if rest else OTHER_REST.get(newest.name),
            )
        )
    return out


def _span(versions: tuple[int, int] | None) -> str:
    if versions is None:
        return "—"
    low, high = versions
    return f"v{low}" if low == high else f"v{low}-{high}"


def render(table: Sequence[Row], versions: Sequence[str]) -> str:
    releases = sorted(versions, key=jars.version_tuple)
    header = (
        "| apiKey | API | Kafka "
        + " | Kafka ".join(releases)
        + " | a broker forwards it | client door | controller door | REST | here |"
    )
    lines = [header, "|" + " --- |" * (len(releases) + 7)]
    for row in table:
        kafka = [_span(row.kafka_versions.get(release)) for release in releases]
        status = "served" if row.served else f"not served: {NOT_SERVED_BECAUSE.get(row.name, '')}"
        lines.append(
            f"| {row.api_key} | {row.name} | "
            + " | ".join(kafka)
            + f" | {'yes' if row.forwardable else 'no'} | {_span(row.client_door)} | "
            f"{_span(row.controller_door)} | "
            f"{f'`{row.rest_path}`' if row.rest_path else '—'} | {status.rstrip(': ')} |"
        )
    return "\n".join(lines) + "\n"


def table_versions() -> list[str]:
    """The releases the table is read from: the pinned one and the newest 4.x."""
    return [v for v in dict.fromkeys([jars.pinned_version(), NEWEST]) if jars.installed(v)]


def page_with(table: str, page: str) -> str:
    start, end = page.index(BEGIN) + len(BEGIN), page.index(END)
    return page[:start] + "\n\n" + table + "\n" + page[end:]


def main(argv: Sequence[str] | None = None) -> int:
    import django

    parser = argparse.ArgumentParser(prog="python -m devtools.kafka_conformance")
    parser.add_argument("--write", action="store_true", help="write the table into the page")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page differs")
    options = parser.parse_args(argv)
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    django.setup()
    versions = table_versions()
    table = render(rows(versions), versions)
    page = PAGE.read_text()
    wanted = page_with(table, page)
    if options.write:
        PAGE.write_text(wanted)
    elif options.check:
        if wanted != page:
            print(f"{PAGE}: the conformance table is out of date (--write)", file=sys.stderr)
            return 1
    else:
        print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The mirror projection: cp_mirror_config (the configuration text) and cp_mirror_flow (each
flow's group), written from what a delta changed with one statement per table."""

from __future__ import annotations

import json

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.image.mirror import FlowGroup, MirrorConfig
from controlplane.runtime.bulk import Column, prepared_upsert
from controlplane.runtime.projections import AppliedWrites, Write
from mirror.models import MirrorFlowGroup, MirrorMakerConfig

FLOW_COLUMNS = [
    Column("source", "text"),
    Column("target", "text"),
    Column("generation", "int"),
    Column("leader", "text"),
    Column("members", "text", json=True),
    Column("assignment_generation", "int"),
    Column("assignments", "text", json=True),
    Column("task_configs", "text", json=True),
    Column("target_states", "text", json=True),
    Column("offset", "bigint"),
]
FLOW_JSON = ("members", "assignments", "task_configs", "target_states")


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def flow_group_of(row: dict[str, object]) -> FlowGroup:
    """A cp_mirror_flow row (as `values()` gives it) as the image's FlowGroup."""
    return FlowGroup.from_data(row)


class MirrorProjection:
    name = "mirror"
    tables: tuple[str, ...] = ("cp_mirror_config", "cp_mirror_flow")

    def prepare(
        self, delta: MetadataDelta, applied: AppliedWrites, timestamp_ms: int
    ) -> list[Write]:
        changes = delta.mirror_delta
        writes: list[Write] = []
        if changes.changed_config is not None:
            writes.append(
                prepared_upsert(
                    table="cp_mirror_config",
                    columns=[
                        Column("id", "int"),
                        Column("text", "text"),
                        Column("offset", "bigint"),
                    ],
                    rows=[(1, changes.changed_config.text, changes.changed_config.offset)],
                    conflict=["id"],
                    update=["text", "offset"],
                )
            )
        if changes.changed_flows:
            rows = []
            for (source, target), group in sorted(changes.changed_flows.items()):
                data = group.as_data()
                rows.append(
                    (
                        source,
                        target,
                        *(
                            _json(data[c.name]) if c.name in FLOW_JSON else data[c.name]
                            for c in FLOW_COLUMNS[2:]
                        ),
                    )
                )
            writes.append(
                prepared_upsert(
                    table="cp_mirror_flow",
                    columns=FLOW_COLUMNS,
                    rows=rows,
                    conflict=["source", "target"],
                    update=[c.name for c in FLOW_COLUMNS[2:]],
                )
            )
        return writes

    def load(self, image: MetadataImage) -> None:
        stored = MirrorMakerConfig.objects.filter(pk=1).values_list("text", "offset").first()
        if stored is not None:
            image.mirror_image.config = MirrorConfig(*stored)
        names = [c.name for c in FLOW_COLUMNS]
        for row in MirrorFlowGroup.objects.values(*names).iterator(chunk_size=500):
            image.mirror_image.flows[(str(row["source"]), str(row["target"]))] = flow_group_of(row)

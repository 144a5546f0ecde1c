"""Replay the metadata log and compare it with the state tables."""

from __future__ import annotations

from typing import Any

from controlplane.controller.image import MetadataDelta, MetadataImage
from controlplane.controller.records import record_from_data
from controlplane.lease import cluster_get_or_create
from controlplane.models import MetadataRecord
from controlplane.projections import load_image


def image_from_log() -> tuple[MetadataImage, list[str]]:
    """The image the log describes, and any gaps in its offsets."""
    cluster = cluster_get_or_create()
    image = MetadataImage(cluster_id=cluster.cluster_id)
    delta = MetadataDelta(image)
    problems: list[str] = []
    rows = MetadataRecord.objects.order_by("offset").values_list("offset", "record_type", "data")
    for offset, record_type, data in rows.iterator(chunk_size=5000):
        if offset != delta.next_offset:
            problems.append(f"gap in the log: expected offset {delta.next_offset}, found {offset}")
            delta.last_offset = offset - 1
        delta.replay(record_from_data(record_type, data))
    image.apply(delta)
    return image, problems


def metadata_verify() -> list[str]:
    """Differences between the replayed log and the state tables; empty when they agree."""
    replayed, problems = image_from_log()
    cluster = cluster_get_or_create()
    stored = load_image(cluster.cluster_id, cluster.last_offset)
    problems.extend(_differences("", replayed.as_comparable(), stored.as_comparable()))
    return problems


def _differences(path: str, log: Any, tables: Any) -> list[str]:
    if isinstance(log, dict) and isinstance(tables, dict):
        found: list[str] = []
        for key in sorted(set(log) | set(tables), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in tables:
                found.append(f"{where}: in the log but missing from the state tables")
            elif key not in log:
                found.append(f"{where}: in the state tables but not in the log")
            else:
                found.extend(_differences(where, log[key], tables[key]))
        return found
    if log != tables:
        return [f"{path}: log says {log!r}, state tables say {tables!r}"]
    return []

"""Durations and sizes in words people read: 604800000 ms is `7 d`, 1048576 bytes `1 MiB`."""

from __future__ import annotations

DURATION_STEPS = (
    (86_400_000, "d"),
    (3_600_000, "h"),
    (60_000, "min"),
    (1_000, "s"),
)
BYTE_STEPS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def duration_text(ms: float) -> str:
    """At most two units: `7 d`, `1 h 30 min`, `2.5 s`, `250 ms`; -1 (Kafka's "none") as is."""
    if ms < 0:
        return f"{int(ms)} (none)" if ms == -1 else str(ms)
    if ms < 1000:
        return f"{ms:g} ms"
    parts: list[str] = []
    rest = int(ms)
    for size, unit in DURATION_STEPS:
        if rest >= size and len(parts) < 2:
            count, rest = divmod(rest, size)
            parts.append(f"{count} {unit}")
        elif parts:
            break
    if len(parts) == 1 and rest and ms < 60_000:
        return f"{ms / 1000:g} s"
    return " ".join(parts)


def bytes_text(size: float) -> str:
    """`1 MiB`, `1.5 GiB`, `512 B`; -1 (Kafka's "none") as is."""
    if size < 0:
        return f"{int(size)} (none)" if size == -1 else str(size)
    for step, unit in BYTE_STEPS:
        if size >= step:
            return f"{size / step:.3g} {unit}"
    return f"{size:g} B"


def is_duration_key(name: str) -> bool:
    return name.endswith((".ms", "_ms")) or name.endswith(".ms.max")


def is_bytes_key(name: str) -> bool:
    return name.endswith((".bytes", "_bytes", ".bytes.max")) or name in (
        "max.message.bytes",
        "segment.bytes",
    )

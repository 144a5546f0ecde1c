"""What the machine spent: CPU by process group (from /proc) and the controller's event times (from
its log)."""

from __future__ import annotations

import re
import resource
from pathlib import Path

from bench.cpu import machine_busy_s, proc_stat
from devtools.stack import Stack

TASK_LINE = re.compile(
    r"Task controlplane\.tasks\.controller_event\[[^\]]+\] succeeded in ([\d.e-]+)s"
)


def cpu_snapshot(stack: Stack, controller: str) -> dict[str, float]:
    """CPU seconds so far: gunicorn workers, the controller, PostgreSQL (every backend on the
    machine), Redis, this client; and the whole machine (busy jiffies, all processes)."""
    web = stack.procs["web"].pid
    controller_pid = stack.procs[controller].pid
    groups = dict.fromkeys(("web", "controller", "postgresql", "redis"), 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        found = proc_stat(int(entry.name))
        if found is None:
            continue
        name, parent, seconds = found
        pid = int(entry.name)
        if parent == web or pid == web:
            groups["web"] += seconds
        elif pid == controller_pid or parent == controller_pid:
            groups["controller"] += seconds
        elif name.startswith("postgres"):
            groups["postgresql"] += seconds
        elif name.startswith("redis-server"):
            groups["redis"] += seconds
    usage = resource.getrusage(resource.RUSAGE_SELF)
    groups["bench_client"] = usage.ru_utime + usage.ru_stime
    groups["machine_busy"] = machine_busy_s()
    return groups


def cpu_spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    spent = {k: (after[k] - before[k]) * 1000 for k in before}
    ours = sum(v for k, v in spent.items() if k != "machine_busy")
    spent["other_processes"] = max(0.0, spent["machine_busy"] - ours)
    return spent


class ControllerLog:
    """The controller's Celery worker log: each event's run time ("Task ... succeeded in")."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def mark(self) -> None:
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def task_times_ms(self) -> list[float]:
        """Run times of the events logged since the last mark()."""
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            text = handle.read().decode(errors="replace")
        return [float(m[1]) * 1000 for m in TASK_LINE.finditer(text)]

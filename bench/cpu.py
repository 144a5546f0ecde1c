"""CPU time from /proc, for the benchmarks: a process's (all its threads), the whole machine's,
and where it went during a phase of a run with real brokers (`CpuWindow`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

CLK_TCK = os.sysconf("SC_CLK_TCK")


class HasPid(Protocol):
    @property
    def pid(self) -> int | None: ...


def proc_stat(pid: int) -> tuple[str, int, float] | None:
    """(name, parent pid, CPU seconds: user + system, all threads) of a process; None once it
    is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()  # after the name, which may hold spaces
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK


def machine_busy_s() -> float:
    """CPU time the whole machine spent busy (every core; /proc/stat), in seconds."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def process_cpu_s(pid: int | None, *, children: bool = False) -> float:
    """A process's CPU time (with `children`, its waited-for children's too), in seconds; 0 once
    it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, TypeError):
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = map(int, fields[11:15])
    return (utime + stime + (cutime + cstime if children else 0)) / CLK_TCK


# The controller side's processes, by what their command line names (the first that matches).
_PROCESS_KINDS = (
    ("run_controller", "run_controller"),
    ("serve_kafka", "serve_kafka"),
    ("gunicorn", "web"),
    ("postgres", "postgresql"),
    ("redis-server", "redis"),
    ("celery", "celery"),  # its worker and beat
    ("kafka.Kafka", "kafka_controllers"),  # the brokers are counted apart, by pid
)


def _controller_side_by_kind(brokers: set[int]) -> dict[str, float]:
    """CPU time of every running process the kinds name, with the children it has reaped,
    summed by kind. The reaped children's time keeps the window's difference whole: PostgreSQL's
    backends come and go, and one that exits in the window moves its time to the postmaster's
    count instead of taking it away (the difference would come out negative)."""
    spent: dict[str, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in brokers:
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        kind = next((k for needle, k in _PROCESS_KINDS if needle in command), None)
        if kind == "run_controller":  # the active one and its standby, by their node ids
            kind += ":" + _environment(entry).get("CP_NODE_ID", "?")
        if kind is not None:
            spent[kind] = spent.get(kind, 0.0) + process_cpu_s(int(entry.name), children=True)
    return spent


def _environment(process: Path) -> dict[str, str]:
    try:
        pairs = (process / "environ").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return {}
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


class CpuWindow:
    """Where the machine's CPU went during a phase: the brokers' JVMs, the bench itself (with
    the AdminClient programs it runs) and everything else, which on each side is its controller
    (here: PostgreSQL, Redis, gunicorn, run_controller and its standby, serve_kafka, Celery;
    Kafka's: the three controller JVMs), also by process kind."""

    def __init__(self, brokers: Sequence[HasPid]) -> None:
        self.brokers = brokers
        self.started = self._sample()
        self.kinds_started = self._kinds()

    def _sample(self) -> tuple[float, float, float]:
        brokers = sum(process_cpu_s(b.pid) for b in self.brokers)
        return machine_busy_s(), brokers, process_cpu_s(os.getpid(), children=True)

    def _kinds(self) -> dict[str, float]:
        return _controller_side_by_kind({b.pid for b in self.brokers if b.pid is not None})

    def figures(self) -> dict[str, Any]:
        machine, brokers, bench = (
            after - before for after, before in zip(self._sample(), self.started, strict=True)
        )
        kinds = self._kinds()
        return {
            "cpu_s_machine": round(machine, 1),
            "cpu_s_brokers": round(brokers, 1),
            "cpu_s_bench_clients": round(bench, 1),
            "cpu_s_controller_side": round(max(0.0, machine - brokers - bench), 1),
            "cpu_s_controller_side_by_process": {
                kind: round(spent - self.kinds_started.get(kind, 0.0), 1)
                for kind, spent in sorted(kinds.items())
            },
        }


def cpu_line(figures: dict[str, Any]) -> str:
    return (
        f"CPU {figures['cpu_s_machine']} s: brokers {figures['cpu_s_brokers']} s, controller "
        f"side {figures['cpu_s_controller_side']} s, bench {figures['cpu_s_bench_clients']} s"
    )

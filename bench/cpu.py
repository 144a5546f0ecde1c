"""CPU time from /proc, for the benchmarks: a process's (all its threads), the whole machine's,
and where it went during a phase of a run with brokers (`CpuWindow`), or during a window known
only once the phase is over (`CpuTrail`)."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
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


@dataclasses.dataclass(frozen=True, slots=True)
class CpuSample:
    """The CPU times counted at one moment (`at`, time.monotonic()): the whole machine's, the
    brokers' processes', the bench's own (with the children it reaped) and the controller
    side's by process kind."""

    at: float
    machine: float
    brokers: float
    bench: float
    kinds: dict[str, float]


def cpu_sample(brokers: Sequence[HasPid]) -> CpuSample:
    return CpuSample(
        at=time.monotonic(),
        machine=machine_busy_s(),
        brokers=sum(process_cpu_s(b.pid) for b in brokers),
        bench=process_cpu_s(os.getpid(), children=True),
        kinds=_controller_side_by_kind({b.pid for b in brokers if b.pid is not None}),
    )


def cpu_between(before: CpuSample, after: CpuSample) -> dict[str, Any]:
    """Where the CPU went from one sample to a later one (CPU seconds)."""
    machine = after.machine - before.machine
    brokers = after.brokers - before.brokers
    bench = after.bench - before.bench
    return {
        "cpu_s_machine": round(machine, 1),
        "cpu_s_brokers": round(brokers, 1),
        "cpu_s_bench_clients": round(bench, 1),
        "cpu_s_controller_side": round(max(0.0, machine - brokers - bench), 1),
        "cpu_s_controller_side_by_process": {
            kind: round(spent - before.kinds.get(kind, 0.0), 1)
            for kind, spent in sorted(after.kinds.items())
        },
    }


class CpuWindow:
    """Where the machine's CPU went during a phase: the brokers' JVMs, the bench itself (with
    the AdminClient programs it runs) and everything else, which on each side is its controller
    (here: PostgreSQL, Redis, gunicorn, run_controller and its standby, serve_kafka, Celery;
    Kafka's: the three controller JVMs), also by process kind."""

    def __init__(self, brokers: Sequence[HasPid]) -> None:
        self.brokers = brokers
        self.started = cpu_sample(brokers)

    def figures(self) -> dict[str, Any]:
        return cpu_between(self.started, cpu_sample(self.brokers))


class CpuTrail:
    """CPU samples taken by a thread every `interval_s` while a phase runs, for a window known
    only afterwards (from a moment of the run until every broker had a change):
    `between(t0, t1)` answers where the CPU went from the last sample at or before `t0` to the
    first at or after `t1`, with the window's length and how many of the machine's cores were
    busy on average. `sample_now()` takes one at once (a window's start)."""

    def __init__(self, brokers: Sequence[HasPid], *, interval_s: float = 0.25) -> None:
        self.brokers = brokers
        self.interval_s = interval_s
        self.samples: list[CpuSample] = [cpu_sample(brokers)]
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-trail", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            self.sample_now()

    def sample_now(self) -> None:
        sample = cpu_sample(self.brokers)
        with self._lock:
            self.samples.append(sample)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=10)

    def between(self, t0: float, t1: float) -> dict[str, Any]:
        with self._lock:
            samples = sorted(self.samples, key=lambda s: s.at)
        before = next((s for s in reversed(samples) if s.at <= t0), samples[0])
        after = next((s for s in samples if s.at >= t1), samples[-1])
        seconds = max(after.at - before.at, 1e-9)
        figures = cpu_between(before, after)
        return {
            "seconds": round(seconds, 2),
            "cores": os.cpu_count(),
            "cores_busy": round(figures["cpu_s_machine"] / seconds, 2),
            **figures,
        }


def cpu_line(figures: dict[str, Any]) -> str:
    return (
        f"CPU {figures['cpu_s_machine']} s: brokers {figures['cpu_s_brokers']} s, controller "
        f"side {figures['cpu_s_controller_side']} s, bench {figures['cpu_s_bench_clients']} s"
    )

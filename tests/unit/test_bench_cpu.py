"""bench.cpu's split of a phase's CPU by process kind, with processes that come and go in it."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.cpu import CpuTrail, CpuWindow

# A parent named like PostgreSQL's postmaster (the kind is read from the command line) with a
# child named like a backend, busy for `busy` seconds and then idle until the parent ends and
# reaps it: as a backend whose connection closes.
PARENT = """
import subprocess, sys, time
busy = float(sys.argv[1])
BUSY = "import time\\nend = time.process_time() + %f\\nwhile time.process_time() < end: pass"
child = subprocess.Popen(
    [sys.executable, "-c", BUSY % busy + "\\ntime.sleep(60)", "postgres-like-backend"]
)
print("started", flush=True)
sys.stdin.readline()
child.terminate()
child.wait()
print("reaped", flush=True)
sys.stdin.readline()
"""


def _postmaster_like(busy: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", PARENT, str(busy), "postgres-like-parent"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _step(process: subprocess.Popen[str], expected: str) -> None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == expected


def test_a_child_that_ends_inside_the_window_counts_its_time_in_the_window_only() -> None:
    parent = _postmaster_like(busy=0.6)
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == "started"
        time.sleep(0.9)  # the child spent its 0.6 s before the window opens, and lives on
        window = CpuWindow(brokers=[])
        _step(parent, "reaped")  # it ends, and its parent reaps it, inside the window
        spent = window.figures()["cpu_s_controller_side_by_process"].get("postgresql", 0.0)
        # Its time moved to the parent's reaped children: not taken away from the window.
        assert spent > -0.05
        assert spent < 0.5
    finally:
        parent.kill()
        parent.wait()


def test_a_child_busy_inside_the_window_is_counted_to_its_parents_kind() -> None:
    parent = _postmaster_like(busy=0.6)
    try:
        window = CpuWindow(brokers=[])
        assert parent.stdout is not None and parent.stdout.readline().strip() == "started"
        time.sleep(0.9)  # the child is busy inside the window
        _step(parent, "reaped")
        spent = window.figures()["cpu_s_controller_side_by_process"].get("postgresql", 0.0)
        assert spent >= 0.5
    finally:
        parent.kill()
        parent.wait()


BUSY_THEN_IDLE = """
import sys, time
print("ready", flush=True)
sys.stdin.readline()
end = time.process_time() + float(sys.argv[1])
while time.process_time() < end: pass
print("done", flush=True)
sys.stdin.readline()
"""


def test_a_trail_answers_for_a_window_chosen_afterwards() -> None:
    broker = subprocess.Popen(
        [sys.executable, "-c", BUSY_THEN_IDLE, "0.5"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    trail = None
    try:
        assert broker.stdout is not None and broker.stdout.readline().strip() == "ready"
        trail = CpuTrail([broker], interval_s=0.05)
        time.sleep(0.3)
        quiet_until = time.monotonic()
        trail.sample_now()
        busy_from = time.monotonic()
        _step(broker, "done")  # it spends its 0.5 s of CPU inside [busy_from, busy_until]
        busy_until = time.monotonic()
        time.sleep(0.2)
        trail.stop()
        quiet = trail.between(quiet_until - 0.25, quiet_until)
        busy = trail.between(busy_from, busy_until)
        assert quiet["cpu_s_brokers"] < 0.1
        assert busy["cpu_s_brokers"] >= 0.4
        assert busy["seconds"] >= busy_until - busy_from
        assert busy["cores_busy"] > 0
    finally:
        if trail is not None:
            trail.stop()
        broker.kill()
        broker.wait()

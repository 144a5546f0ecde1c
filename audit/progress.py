"""Progress of long audit work in the terminal: rows, rate and ETA, on one line that updates
itself on a terminal, as a line per phase and every few seconds otherwise (logs, pipes)."""

from __future__ import annotations

import time
from typing import Any, TextIO

from audit.export import Progress

EVERY_S = 2.0  # off a terminal, a progress line at most this often (besides each phase)


class TerminalProgress:
    def __init__(self, out: Any) -> None:
        self.out = out
        stream: TextIO | None = getattr(out, "_out", None)
        self.tty = bool(stream is not None and stream.isatty())
        self.last_phase = ""
        self.last_line = 0.0
        self.open_line = False

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        phase = f"{progress.phase}:{progress.dataset}"
        if not self.tty and phase == self.last_phase and now - self.last_line < EVERY_S:
            return
        line = describe(progress)
        if self.tty:
            self.out.write(f"\r\033[K{line}", ending="")
            self.out.flush()
            self.open_line = True
        else:
            self.out.write(line)
        self.last_phase, self.last_line = phase, now

    def finish(self) -> None:
        if self.open_line:
            self.out.write("")


def describe(progress: Progress) -> str:
    eta = progress.eta_s
    return (
        f"{progress.phase} {progress.dataset or ''}".rstrip()
        + f": {progress.rows_done:,}/{progress.rows_total:,} rows ({progress.percent:.0f}%),"
        f" {progress.rows_per_second:,.0f} rows/s, ETA " + ("?" if eta is None else f"{eta:.0f} s")
    )

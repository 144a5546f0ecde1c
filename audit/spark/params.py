"""A report's parameters: the period (`--from`, `--to`, both inclusive) and the moment (`--at`),
given as ISO 8601 or epoch milliseconds, and the errors a person sees when they are wrong."""

from __future__ import annotations

import dataclasses
import datetime
import time

from audit.spark import times

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
EARLIEST_MS = -62_135_596_800_000  # 0001-01-01T00:00:00Z
LATEST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


class ReportError(Exception):
    """Something the person who runs a report must fix, said in one line."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_time(text: str, option: str) -> int:
    """`text` (ISO 8601, or epoch milliseconds) as epoch milliseconds, as the API parses it
    (audit.spark.times): a time without a zone is UTC, as the export's dates are."""
    try:
        ms = times.parse_time(text, name=option)
    except times.BadTime as error:
        raise ReportError(str(error).rstrip(".")) from None
    if not EARLIEST_MS <= ms <= LATEST_MS:
        raise ReportError(f"{option}: {text!r} lies outside the years 1 to 9999")
    return ms


def iso(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC, to the millisecond."""
    moment = EPOCH + datetime.timedelta(milliseconds=ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def day(ms: int) -> str:
    """The export's partition directory (`date=...`) of a time."""
    return (EPOCH + datetime.timedelta(milliseconds=ms)).strftime("%Y-%m-%d")


@dataclasses.dataclass(frozen=True, slots=True)
class Params:
    """What a report is asked for. `now_ms` is when it runs: an open period (a partition still
    without a leader) ends at `--to` or now, whichever is sooner."""

    from_ms: int | None = None
    to_ms: int | None = None
    at_ms: int | None = None
    now_ms: int = dataclasses.field(default_factory=now_ms)

    @property
    def until_ms(self) -> int:
        """Where the period ends: `--to`, or now when it is not given or lies ahead."""
        return self.now_ms if self.to_ms is None else min(self.to_ms, self.now_ms)

    def described(self) -> dict[str, str]:
        """The parameters as the HTML report and the terminal name them."""
        shown = {"from": self.from_ms, "to": self.to_ms, "at": self.at_ms}
        return {name: iso(ms) for name, ms in shown.items() if ms is not None}


def params_parse(
    *,
    from_text: str | None = None,
    to_text: str | None = None,
    at_text: str | None = None,
    now: int | None = None,
) -> Params:
    """Parameters from the command line's text; an empty text is not given. Refuses a period
    that ends before it starts, and one that starts in the future (it can hold nothing)."""
    clock = now_ms() if now is None else now
    from_ms = parse_time(from_text, "--from") if from_text else None
    to_ms = parse_time(to_text, "--to") if to_text else None
    at_ms = parse_time(at_text, "--at") if at_text else None
    if from_ms is not None and to_ms is not None and from_ms > to_ms:
        raise ReportError(f"--from {iso(from_ms)} is after --to {iso(to_ms)}")
    if from_ms is not None and from_ms > clock:
        raise ReportError(f"--from {iso(from_ms)} is in the future (now is {iso(clock)})")
    return Params(from_ms, to_ms, at_ms, clock)

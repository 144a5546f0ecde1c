"""The report half of bench/audit_pipeline.py: each report's time over an export against a
plain Spark scan of the datasets it reads, in the same session (goal: within 3x).

A scan reads every column of every committed file of a dataset to Spark's `noop` sink; a report
is built and its rows collected as the job does (audit.spark.job), its cache cleared after each
run. Each figure is the best of `rounds`, after one warm-up of everything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Which datasets each report reads (the scan it is measured against).
READS = {
    "admin-activity": ("audit_events",),
    "denied-requests": ("audit_events",),
    "forwarding": ("audit_events",),
    "replica-health": ("metadata_log", "audit_events"),
    "broker-lifecycle": ("metadata_log",),
    "canary": ("metadata_log", "audit_events"),
    "state-at": ("metadata_log",),
}
GOAL = 3.0


def _best(run: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def time_reports(path: Path, log: Callable[[str], None], rounds: int = 3) -> dict[str, Any]:
    from audit.spark.params import Params
    from audit.spark.reader import export_read
    from audit.spark.render import rows_collect
    from audit.spark.reports import REPORTS, report_build
    from audit.spark.session import spark_session

    spark = spark_session()
    export = export_read(spark, str(path))
    frames = {"metadata_log": export.metadata_log, "audit_events": export.audit_events}

    def scan(dataset: str) -> None:
        frames[dataset].write.format("noop").mode("overwrite").save()

    def report(name: str) -> Callable[[], int]:
        def run() -> int:
            try:
                return len(rows_collect(report_build(name, export, Params())))
            finally:
                spark.catalog.clearCache()

        return run

    log("  warming up Spark (every scan and report once)...")
    for dataset in frames:
        scan(dataset)
    rows = {name: report(name)() for name in REPORTS}
    scans = {dataset: _best(lambda d=dataset: scan(d), rounds) for dataset in frames}
    log(f"  plain scans: {', '.join(f'{d} {s:.2f} s' for d, s in scans.items())}")
    results: dict[str, Any] = {}
    for name in REPORTS:
        seconds = _best(report(name), rounds)
        baseline = sum(scans[d] for d in READS[name])
        results[name] = {
            "seconds": round(seconds, 3),
            "scan_seconds": round(baseline, 3),
            "ratio_to_scan": round(seconds / baseline, 2),
            "rows": rows[name],
            "reads": list(READS[name]),
        }
        log(f"  {name}: {seconds:.2f} s, {seconds / baseline:.2f}x the scan")
    return {
        "goal_ratio_to_scan": GOAL,
        "scans_seconds": {d: round(s, 3) for d, s in scans.items()},
        "reports": results,
        "all_within_goal": all(r["ratio_to_scan"] <= GOAL for r in results.values()),
        "rounds": rounds,
        "spark_master": spark.sparkContext.master,
    }

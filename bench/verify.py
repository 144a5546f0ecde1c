"""`verify_metadata` after a benchmark, the same way in every one: its verdict goes into the
figures, and an unclean log fails the run loudly (exit 3, the problems on stderr) after the
figures are written, so no benchmark reports speed over a log and tables that disagree.

    verdict = verify_stack(stack)            # a running stack (devtools.stack)
    verdict = verify_in_process()            # Django set up in this process
    ...write the results...
    fail_unless_clean(verdict, "fanout")
"""

from __future__ import annotations

import io
import sys
import time
from typing import Any

SHOWN_PROBLEMS = 20


def verify_stack(stack: Any, *, timeout_s: float = 7200) -> dict[str, Any]:
    started = time.perf_counter()
    done = stack.manage("verify_metadata", check=False, timeout=timeout_s)
    return _verdict(done.returncode == 0, done.stdout + done.stderr, started)


def verify_in_process() -> dict[str, Any]:
    from django.core.management import call_command

    started = time.perf_counter()
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("verify_metadata", stdout=out, stderr=err)
        clean = True
    except SystemExit:
        clean = False
    return _verdict(clean, out.getvalue() + err.getvalue(), started)


def _verdict(clean: bool, output: str, started: float) -> dict[str, Any]:
    lines = output.strip().splitlines()
    return {
        "clean": clean,
        "seconds": round(time.perf_counter() - started, 1),
        "problems": 0 if clean else max(len(lines) - 1, 1),
        "output": lines[:SHOWN_PROBLEMS] + (lines[-1:] if len(lines) > SHOWN_PROBLEMS else []),
    }


def fail_unless_clean(verdict: dict[str, Any], benchmark: str) -> None:
    if verdict["clean"]:
        return
    print(
        f"\n{benchmark}: verify_metadata found {verdict['problems']} problem(s) between the "
        "metadata log and the state tables:\n  " + "\n  ".join(verdict["output"]),
        file=sys.stderr,
    )
    raise SystemExit(3)

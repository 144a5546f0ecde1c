"""The controller process's own settings (`tune_controller_process`, called by run_controller)."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from controlplane.runtime.controller import tune_controller_process


@pytest.fixture
def switch_interval_kept() -> Any:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_the_controller_process_hands_the_gil_over_every_millisecond_by_default(
    settings: Any, switch_interval_kept: None
) -> None:
    from controlplane import settings as defaults

    assert defaults.CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS == 1.0
    sys.setswitchinterval(0.005)
    tune_controller_process()
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_the_switch_interval_follows_its_setting(settings: Any, switch_interval_kept: None) -> None:
    settings.CP_CONTROLLER_GIL_SWITCH_INTERVAL_MS = 2.5
    tune_controller_process()
    assert sys.getswitchinterval() == pytest.approx(0.0025)
